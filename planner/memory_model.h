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
  double parameters = 0;        // sharded fp32 parameters (master weights)  // bytes
  double gradients = 0;         // sharded fp32 gradients  // bytes
  double optimizer_states = 0;  // AdamW exp_avg + exp_avg_sq, fp32  // bytes
  double total() const { return parameters + gradients + optimizer_states; }
};
// State of `params` elements sharded over `shard_group` ranks (1 = unsharded).
StateMemory state_memory(int64_t params, int shard_group);

// What the caching allocator reserves beyond the allocated peak, and what lies outside it.
struct AllocatorInputs {
  double allocated_peak = 0;    // static state + timeline peak  // bytes
  double unreused = 0;          // Σ per-category maxima − timeline peak (SimResult)  // bytes
  double fragmentation = 0;     // block rounding and splitting: reserved/allocated − 1 (preset)
  bool expandable_segments = false;  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  bool record_stream_buffers = false;  // PlanOptions::record_stream_buffers (FSDP2)
  double outside_allocator = 0; // CUDA context, NCCL communicator buffers (preset)  // bytes
  // The caching allocator model's peak reserved over the step's allocation sequence
  // (allocation_trace.h); < 0: no replay (a device without the CUDA caching allocator), the
  // proportional margin below applies.  // bytes
  double replayed_reserved = -1;
};
struct DeviceMemory {
  double allocated = 0;         // bytes
  double reserved = 0;          // bytes
  double device_total = 0;      // bytes
};
// Share of `unreused` the allocator keeps cached beside the allocated peak. `unreused` is what
// the kinds of tensor that are not at their own maximum at the peak (gradients and reduce
// buffers of other units, sharded gradients, recompute and loss transients) held at their
// maxima: blocks they freed earlier. Under FSDP2 (record_stream_buffers) recordStream keeps
// collective blocks cached until their stream passes and nothing rate-limits the CPU
// (pytorch/torchtitan#735), so such blocks are not reused for the peak's requests: without
// expandable segments all of them stay (pytorch/pytorch#147179: 60 GB active, 82 GB reserved),
// with them freed ranges are remapped and half is assumed to stay (a prior, not fitted). Under
// FSDP1's rate limiter they are reused: only `fragmentation` applies.
inline constexpr double kUnreusedKeptFixedSegments = 1.0;
inline constexpr double kUnreusedKeptExpandable = 0.5;
// reserved = max(allocated, replayed_reserved) when replayed; otherwise the margin above.
DeviceMemory device_memory(const AllocatorInputs& in);

// Activation bytes a block keeps from forward to backward, given what its ops save
// (`saved_full`) and its input (`input`), for a checkpointed or a plain block.
inline double block_saved_bytes(bool checkpointed, double saved_full, double input) {
  return checkpointed ? input : saved_full;
}

}  // namespace shardcast::planner
