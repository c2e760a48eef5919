// Memory model: per-rank bytes of the sharded training state and of each unit's buffers.
//
// What it is: the closed-form terms (ZeRO / FSDP accounting, docs/cost-model.md §Memory):
// sharded fp32 parameters (they are the master weights under mixed precision), sharded fp32
// gradients and AdamW's two fp32 moments, each ÷ the shard-group size; the gathered copy of a
// unit in param_dtype; its unsharded gradient in param_dtype and the reduce_dtype copy fed to
// the reduction; the activations a block keeps under each checkpointing policy. The transient
// terms are placed on the timeline by the simulator, which reads the peak off it.
// device_memory(): the three numbers a user reads — allocated (torch.cuda.max_memory_allocated),
// reserved (torch.cuda.max_memory_reserved: the caching allocator's segments) and device total
// (nvidia-smi: reserved plus what lies outside the allocator).
// What it is not: the peak itself (simulator.h).
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "shared/train_config.h"

namespace shardcast::planner {

// Bytes per element of "fp32" | "bf16" | "fp16" | "fp8"; throws ConfigError otherwise.
int dtype_bytes(const std::string& dtype);

struct StateMemory {
  double parameters = 0;        // sharded parameters (master weights)  // bytes
  double gradients = 0;         // sharded gradients  // bytes
  double optimizer_states = 0;  // AdamW exp_avg + exp_avg_sq  // bytes
  double total() const { return parameters + gradients + optimizer_states; }
};
// State of `params` elements sharded over `shard_group` ranks (1 = unsharded): parameters and
// gradients in master_bytes per element (precision.master_dtype: 4 fp32, 2 pure bf16), each of
// AdamW's two moments in moment_bytes (optimizer.state_dtype: master_bytes, or 2 for bf16).
StateMemory state_memory(int64_t params, int shard_group, int master_bytes, int moment_bytes);
// Bytes per element of one AdamW moment under cfg: precision.master_dtype's, or
// optimizer.state_dtype's where it names a dtype (bf16: 2).
int adamw_moment_bytes(const TrainConfig& cfg);

// What the allocator reserves beyond the allocated peak, and what lies outside it.
struct AllocatorInputs {
  double allocated_peak = 0;    // static state + timeline peak  // bytes
  // The caching allocator model's peak reserved over the step's allocation sequence
  // (allocation_trace.h, docs/cost-model.md §5.4); < 0: no caching allocator (CPU), the
  // proportional `fragmentation` margin applies.  // bytes
  double replayed_reserved = -1;
  double fragmentation = 0;     // reserved/allocated − 1 without a caching allocator (preset)
  double outside_allocator = 0; // CUDA context, NCCL communicator buffers (preset)  // bytes
};
struct DeviceMemory {
  double allocated = 0;         // bytes
  double reserved = 0;          // bytes
  double device_total = 0;      // bytes
};
// reserved = max(allocated, replayed_reserved) when replayed, else allocated · (1 +
// fragmentation); device total = reserved + outside_allocator.
DeviceMemory device_memory(const AllocatorInputs& in);

// Activation bytes a block keeps from forward to backward, given what its ops save
// (`saved_full`) and its input (`input`), for a checkpointed or a plain block.
inline double block_saved_bytes(bool checkpointed, double saved_full, double input) {
  return checkpointed ? input : saved_full;
}

}  // namespace shardcast::planner
