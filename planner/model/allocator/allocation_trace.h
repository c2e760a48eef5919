// The allocation sequence of training steps, as the caching allocator sees it, and its replay.
//
// What it is: build_allocation_trace() turns the step simulator's memory deltas
// (SimResult::allocations: one per unit, kind of tensor and task, in FSDP's order and in
// simulated time) into tensors allocated and freed on the streams they belong to, preceded by
// the sharded fp32 parameters and followed over `steps` optimizer steps: the optimizer's two
// fp32 moments appear at the first optimizer step (torch.optim.AdamW creates its state lazily;
// with TraceInputs::optimizer_state_at_init, after the parameters instead), the
// sharded gradients are freed between steps when the loop zero_grad()s with set_to_none.
// Streams (FSDP1 and FSDP2 alike): a unit's all-gather output is allocated on the all-gather
// stream, its reduce buffers and sharded gradient on the reduce-scatter stream, everything
// else on the compute stream. A block that one stream allocated and another used is freed
// with recordStream: it returns to its pool when the last use ends — under a CPU rate limiter
// (FSDP1 limit_all_gathers) at the simulated free; without one (FSDP2, `record_stream`
// runtimes) the CPU has already issued the next compute task's allocations by then, so the
// block is ready for requests made after the end of the compute task that follows its free.
// replay_allocation_trace() runs the sequence through CachingAllocator.
// A unit may be given its tensors one by one (UnitTensorSequence: the loss's logits, their
// fp32 up-cast, log-probabilities and gradients): they then replace the unit's activation and
// transient blocks, in program order, so the holes that freed tensors leave are the holes the
// allocator sees.
// What it is not: tensor-by-tensor elsewhere (a unit's activations of one kind are one block,
// as the simulator counts them), nor the allocator (caching_allocator.h).
// Pure functions, thread-safe (scratch storage is per thread).
#pragma once

#include <cstdint>
#include <vector>

#include "planner/model/allocator/caching_allocator.h"
#include "planner/model/ops.h"
#include "planner/model/simulator.h"

namespace shardcast::planner {

// kStreamGraph: the side stream a CUDA-graphed loop runs its forward and backward on
// (torchtitan distributed/cudagraph.py _CUDAGraphManager.stream), warm-up and replays alike.
enum AllocStream : int {
  kStreamCompute = 0, kStreamAllGather = 1, kStreamReduce = 2, kStreamReplica = 3, kStreamGraph = 4
};
// The pool a tensor comes from: the device's caching allocator, or the private pool of the
// CUDA graphs (torch.cuda.graph(..., pool=graph_pool)): its segments are the graphs' for as
// long as they live, and neither pool hands its free blocks to the other.
enum AllocPool : int { kPoolDevice = 0, kPoolGraph = 1 };

// An allocation (bytes > 0), a free (bytes == 0, tensor ≥ 0), or torch.cuda.empty_cache()
// on the device pool (bytes == 0, tensor < 0: kEmptyCache).
struct AllocEvent {
  double t = 0;          // request time  // s
  int tensor = 0;        // index of the tensor (alloc and free share it); kEmptyCache
  int64_t bytes = 0;     // requested bytes (> 0) of an allocation; 0 for a free
  int stream = kStreamCompute;
  int pool = kPoolDevice;  // the tensor's pool (its free names the same)
  double ready = 0;      // free: when the block may be handed out again (≥ t)  // s
};
inline constexpr int kEmptyCache = -1;

// One step of a unit's tensor sequence: allocate tensor `id` (bytes > 0) or free it (bytes == 0).
struct TensorStep {
  int id = 0;         // local to the unit's sequence
  double bytes = 0;   // bytes
};
// A unit's tensors in program order. `forward` runs at the start of the unit's forward task,
// `backward` at the start of its backward task; what is still live after `backward` is freed
// at the backward's end. Its backward peak must equal the simulator's lumps for the unit
// (saved + backward transient) and its forward peak may not exceed them (saved + forward
// transient; a tensor freed before the next is made is below the lump), so the allocated peak
// is unchanged and only the layout of the blocks differs (tests/planner/caching_allocator_test.cpp).
struct UnitTensorSequence {
  std::vector<TensorStep> forward, backward;
  bool empty() const { return forward.empty() && backward.empty(); }
};

// The head of a model whose loss is F.cross_entropy(logits.float(), labels) (cross_entropy
// "fp32_upcast"; n = tokens × vocab logits, A bytes each): forward allocates the logits (A·n),
// their fp32 copy (4n) and log_softmax's output (4n, saved), frees the copy as the loss returns
// and the logits at `del pred` (torchtitan train.py: "need to free to before bwd to avoid
// peaking memory"); backward allocates nll_loss's gradient (4n, zeros then scatter) and
// log_softmax's input gradient (4n), frees the first two 4n tensors, then allocates the
// logits' gradient (A·n) for the head's matmul. `other_saved`: the rest of the head's saved
// bytes (final norm), allocated first.
// `logits_held` (runtime term fp32_logits_held: torchtitan before e29b6b4d4 returned
// self.output(h).float() from the model and kept `pred`): the fp32 copy is the model's output,
// a block of its own (the simulator's model_outputs, allocated at the head's forward before
// this sequence and freed when the loop lets the output go), so the sequence allocates the bf16
// logits, frees them as the model returns and goes on with log_softmax.
// `shifted` (cross_entropy "fp32_upcast_shifted", transformers before 4.46): the 16-bit logits go
// as the fp32 copy is made, a shifted contiguous fp32 copy (4n) lives while log_softmax runs, and
// backward makes the shift's gradient (4n) before slice backward's gradient of the copy (4n).
// `chunked` (cross_entropy "fp32_upcast_chunked", litgpt's chunked_cross_entropy): forward as
// above; backward frees each chunk's log-probabilities as its gradient lands in split's buffer
// (one 4n block each here, where the real loop makes 128-row pieces of it), then cat writes the
// copy's gradient (4n) and the buffer goes.
// `impl`: fp32_upcast, fp32_upcast_shifted or fp32_upcast_chunked (the up-cast losses).
// `dtensor_extra` (torch's loss_parallel handlers on a vocabulary shard, runtime term
// loss_parallel_impl = "dtensor", with tp > 1): _log_softmax holds one more fp32 tensor (4n)
// beside its input while it makes the log-probabilities, and the fused backward one more beside
// the gradients (docs/cost-model.md §12, "The loss under loss parallel").
UnitTensorSequence fp32_upcast_loss_sequence(double n, int act_bytes, double other_saved, bool logits_held,
                                             CrossEntropyImpl impl = CrossEntropyImpl::fp32_upcast,
                                             bool dtensor_extra = false);

struct TraceInputs {
  std::vector<double> param_shard_bytes;   // per unit: sharded fp32 parameters  // bytes
  std::vector<double> optimizer_bytes;     // per unit: one AdamW moment (two are allocated)  // bytes
  std::vector<double> static_grad_bytes;   // per unit: sharded gradients kept across steps (0: freed)  // bytes
  bool record_stream = false;              // no CPU rate limiter: cross-stream frees lag (above)
  // The AdamW moments are allocated with the model (after the parameter shards and static
  // gradients), not at the first optimizer step (runtime term adamw = "fused_state_at_init").
  bool optimizer_state_at_init = false;
  int steps = 2;                           // optimizer steps replayed (≥ 2: the second sees the first's cache)
  // The loop's forward and backward replay as a CUDA graph (runtime term host_time =
  // "cuda_graphs" on a CUDA GPU; torchtitan distributed/cudagraph.py): the first step runs
  // them eagerly on the graph's stream (the wrapper's warm-up), then torch.cuda.graph empties
  // the device pool's cache and captures; from the second step every unit's tensors come from
  // the graph's private pool, which keeps its segments. The optimizer step stays eager on the
  // compute stream in the device pool. (The real capture starts at the second micro-step: with
  // gradient accumulation the warm-up here is the whole first step, whose peak is the
  // micro-step's.)
  bool cuda_graphs = false;
  // With cuda_graphs: the optimizer step's transient (a stand-in, fsdp_units.cpp) is allocated in
  // the graph pool as this many pieces per unit's share (the unit's parameter tensors).
  int stand_in_pieces_per_unit = 1;
  // Per unit (index = SimAlloc::unit): its tensors one by one; missing or empty = its blocks.
  std::vector<UnitTensorSequence> sequences;
};

// The trace of `in.steps` steps of `sim` (simulated with record_allocations).
std::vector<AllocEvent> build_allocation_trace(const SimResult& sim, const TraceInputs& in);
// The same into *trace (cleared first; its storage is reused: plan() keeps one per thread).
void build_allocation_trace(const SimResult& sim, const TraceInputs& in, std::vector<AllocEvent>* trace);

// The pools are replayed by one CachingAllocator each, on one device: the peaks are of their
// sum; the device pool reserves what the graph pool leaves of the capacity (releasing its own
// cache when that is short); the graph pool, allocated during the capture, when PyTorch releases
// no cache, is out of memory once the sum passes the capacity.
struct ReplayResult {
  double peak_reserved = 0;    // torch.cuda.max_memory_reserved  // bytes
  double peak_allocated = 0;   // torch.cuda.max_memory_allocated (rounded blocks)  // bytes
  double graph_pool_reserved = 0;  // the CUDA graphs' private pool at the end (0 without)  // bytes
  int segments = 0;            // segments at the end
  int retries = 0;             // cudaMalloc failures answered by releasing the cache
  bool out_of_memory = false;
};
// `cuda_graphs`: the trace was built with TraceInputs::cuda_graphs (two pools, an empty_cache).
ReplayResult replay_allocation_trace(const std::vector<AllocEvent>& trace, const CachingAllocatorConfig& cfg,
                                     bool cuda_graphs = false);

}  // namespace shardcast::planner
