// The allocation sequence of training steps, as the caching allocator sees it, and its replay.
//
// What it is: build_allocation_trace() turns the step simulator's memory deltas
// (SimResult::allocations: one per unit, kind of tensor and task, in FSDP's order and in
// simulated time) into tensors allocated and freed on the streams they belong to, preceded by
// the sharded fp32 parameters and followed over `steps` optimizer steps: the optimizer's two
// fp32 moments appear at the first optimizer step (AdamW creates its state lazily), the
// sharded gradients are freed between steps when the loop zero_grad()s with set_to_none.
// Streams (FSDP1 and FSDP2 alike): a unit's all-gather output is allocated on the all-gather
// stream, its reduce buffers and sharded gradient on the reduce-scatter stream, everything
// else on the compute stream. A block that one stream allocated and another used is freed
// with recordStream: it returns to its pool when the last use ends — under a CPU rate limiter
// (FSDP1 limit_all_gathers) at the simulated free; without one (FSDP2, `record_stream`
// runtimes) the CPU has already issued the next compute task's allocations by then, so the
// block is ready for requests made after the end of the compute task that follows its free.
// replay_allocation_trace() runs the sequence through CachingAllocator.
// What it is not: tensor-by-tensor (a unit's activations of one kind are one block, as the
// simulator counts them), nor the allocator (caching_allocator.h).
// Pure functions, thread-safe (scratch storage is per thread).
#pragma once

#include <cstdint>
#include <vector>

#include "planner/caching_allocator.h"
#include "planner/simulator.h"

namespace shardcast::planner {

enum AllocStream : int { kStreamCompute = 0, kStreamAllGather = 1, kStreamReduce = 2, kStreamReplica = 3 };

struct AllocEvent {
  double t = 0;          // request time  // s
  int tensor = 0;        // index of the tensor (alloc and free share it)
  int64_t bytes = 0;     // requested bytes (> 0) of an allocation; 0 for a free
  int stream = kStreamCompute;
  double ready = 0;      // free: when the block may be handed out again (≥ t)  // s
};

struct TraceInputs {
  std::vector<double> param_shard_bytes;   // per unit: sharded fp32 parameters  // bytes
  std::vector<double> optimizer_bytes;     // per unit: one AdamW moment (two are allocated)  // bytes
  std::vector<double> static_grad_bytes;   // per unit: sharded gradients kept across steps (0: freed)  // bytes
  bool record_stream = false;              // no CPU rate limiter: cross-stream frees lag (above)
  int steps = 2;                           // optimizer steps replayed (≥ 2: the second sees the first's cache)
};

// The trace of `in.steps` steps of `sim` (simulated with record_allocations).
std::vector<AllocEvent> build_allocation_trace(const SimResult& sim, const TraceInputs& in);
// The same into *trace (cleared first; its storage is reused: plan() keeps one per thread).
void build_allocation_trace(const SimResult& sim, const TraceInputs& in, std::vector<AllocEvent>* trace);

struct ReplayResult {
  double peak_reserved = 0;    // torch.cuda.max_memory_reserved  // bytes
  double peak_allocated = 0;   // torch.cuda.max_memory_allocated (rounded blocks)  // bytes
  int segments = 0;            // segments at the end
  int retries = 0;             // cudaMalloc failures answered by releasing the cache
  bool out_of_memory = false;
};
ReplayResult replay_allocation_trace(const std::vector<AllocEvent>& trace, const CachingAllocatorConfig& cfg);

}  // namespace shardcast::planner
