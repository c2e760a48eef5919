// DeepSpeed ZeRO's own buffers: what a ZeRO runtime (configs/runtimes/deepspeed.toml, its [zero]
// table) holds per rank beyond the FSDP accounting of memory_model.h.
//
// What it is: the stage a config runs (full_shard = ZeRO stage 3, shard_grad_op = stage 2,
// shard_optimizer = stage 1), the
// refusal of the strategies ZeRO does not run as planned, and the per-rank bytes of
// DeepSpeed's flat buffers, each from its allocation at microsoft/DeepSpeed@38327e07f
// (docs/cost-model.md, "DeepSpeed ZeRO"):
//   stage 3  the 16-bit parameter partition (fp16_partitioned_groups_flat, beside the fp32
//            master partition that memory_model.h counts), the 16-bit gradient partition
//            buffer (grad_partitions_flat_buffer, gradient_accumulation_dtype = the model dtype
//            under ZeRO: engine.py get_data_types), the IPG bucket (reduce_bucket_size elements,
//            contiguous_gradients) and the parameters at most stage3_param_persistence_threshold
//            elements large, kept whole (the RMSNorm weights);
//   stage 2  the IPG buffers (one, two with overlap_comm; allocated at each backward), the
//            16-bit gradient partition (grads_in_partition, contiguous_gradients) and the whole
//            16-bit parameters (bit16_groups_flat), which no unit gathers;
//   stage 1  the same two (stage_1_and_2.py with partition_grads false): the partition is over
//            every data-parallel rank (shard_group is StepShape::state_group, W); and the whole
//            16-bit parameters (bit16_groups_flat), which no unit gathers.
// All are counted as static bytes over the step (stage 2's are made in backward and released
// in the step: an upper bound there); each lies in segments of its own in the caching allocator,
// rounded to its 2 MiB granularity.
// What it is not: DeepSpeed's fetch schedule (the simulator's unit gathers stand for
// stage3_prefetch_bucket_size / max_live_parameters) or its ds_config.json (planner/emit).
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "shared/train_config.h"
#include "shared/zero_terms.h"

namespace shardcast::planner {

// The ZeRO runtime's settings as the planner's options carry them (PlanOptions).
struct ZeroOptions {
  bool zero = false;  // the runtime is DeepSpeed ZeRO (its profile has a [zero] table)
  ZeroTerms zero_terms;
};

// The sharding strategies DeepSpeed ZeRO runs, as zero_refusal names them.
inline constexpr const char* kZeroStrategies =
    "full_shard (ZeRO stage 3) | shard_grad_op (ZeRO stage 2) | shard_optimizer (ZeRO stage 1)";

// The ZeRO stage cfg runs: 3 for full_shard, 2 for shard_grad_op, 1 for shard_optimizer; 0 for
// a strategy ZeRO does not run as planned (zero_refusal says why).
int zero_stage(const TrainConfig& cfg);

// Why DeepSpeed ZeRO cannot run cfg as planned ("" = it can): hybrid_shard (ZeRO++'s hpZ keeps a
// secondary copy of the weights per node, not HSDP's replicas) and no_shard (ZeRO stage 0 is
// not planned).
std::string zero_refusal(const TrainConfig& cfg);

// Whether ZeRO reduces gradients on every micro-step: stages 2 and 3 do (their backward hooks
// reduce each bucket as it fills); stage 1 only on the gradient-accumulation boundary
// (stage_1_and_2.py reduce_ready_partitions_and_remove_grads: `if self.partition_gradients or
// self.is_gradient_accumulation_boundary` @38327e07f), the parameters' .grad summing in between.
bool zero_reduces_every_micro_step(const TrainConfig& cfg);

struct ZeroBuffer {
  std::string name;    // memory component: zero_param_partition | zero_grad_partition | zero_ipg_buckets |
                       // zero_persistent_parameters | zero_bit16_parameters
  double bytes = 0;    // per rank  // bytes
};
// DeepSpeed's buffers for cfg (empty when !z.zero). shard_group: ranks the optimizer states
// are partitioned over (the parameters too in stage 3; W in stage 1); param_bytes: bytes per element of precision.param_dtype.
std::vector<ZeroBuffer> zero_buffers(const TrainConfig& cfg, const ZeroOptions& z, int shard_group, int param_bytes);
// What the caching allocator reserves for them: each rounded up to 2 MiB (its large-pool
// granularity: c10/cuda/CUDACachingAllocator.cpp kRoundLarge).  // bytes
double zero_reserved_bytes(const std::vector<ZeroBuffer>& buffers);

}  // namespace shardcast::planner
