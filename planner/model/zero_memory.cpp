#include "planner/model/zero_memory.h"

#include <cmath>

#include <fmt/format.h>

#include "planner/model/allocator/caching_allocator.h"

namespace shardcast::planner {

int zero_stage(const TrainConfig& cfg) {
  switch (cfg.parallelism.sharding_strategy) {
    case ShardingStrategy::full_shard: return 3;
    case ShardingStrategy::shard_grad_op: return 2;
    case ShardingStrategy::shard_optimizer: return 1;
    default: return 0;
  }
}

std::string zero_refusal(const TrainConfig& cfg) {
  switch (cfg.parallelism.sharding_strategy) {
    case ShardingStrategy::full_shard:
    case ShardingStrategy::shard_grad_op:
    case ShardingStrategy::shard_optimizer: return "";
    case ShardingStrategy::hybrid_shard:
      return "deepspeed runs parallelism.sharding_strategy " + std::string(kZeroStrategies) +
             ", not \"hybrid_shard\": ZeRO++'s zero_hpz_partition_size keeps a secondary copy of the weights per "
             "node while gradients and optimizer states stay sharded over all ranks, which is not HSDP";
    case ShardingStrategy::no_shard:
      return "deepspeed runs parallelism.sharding_strategy " + std::string(kZeroStrategies) +
             ", not \"no_shard\": ZeRO stage 0 (plain data parallel inside DeepSpeed's engine) is not planned; "
             "\"shard_optimizer\" is stage 1 (optimizer states partitioned, parameters and gradients whole)";
  }
  return "";
}

bool zero_reduces_every_micro_step(const TrainConfig& cfg) { return zero_stage(cfg) != 1; }

std::vector<ZeroBuffer> zero_buffers(const TrainConfig& cfg, const ZeroOptions& z, int shard_group, int param_bytes) {
  std::vector<ZeroBuffer> out;
  if (!z.zero) return out;
  const ModelSpec& m = cfg.model;
  const ZeroTerms& t = z.zero_terms;
  const int stage = zero_stage(cfg);
  const double P = double(m.total_params()), N = double(std::max(1, shard_group));
  const double bucket = double(zero_elements(t.reduce_bucket_size, "reduce_bucket_size", m.d_model));  // elements
  if (stage == 3) {
    // stage3.py _create_fp16_partitions_with_defragmentation: the 16-bit partitions in one flat buffer.
    out.push_back({"zero_param_partition", param_bytes * P / N});
    // stage3.py __init__: grad_partitions_flat_buffer = zeros(Σ partition_numel, gradient_accumulation_dtype).
    out.push_back({"zero_grad_partition", param_bytes * P / N});
    // stage3.py __init__: __ipg_bucket_flat_buffer = empty(reduce_bucket_size) when contiguous_gradients.
    if (t.contiguous_gradients) out.push_back({"zero_ipg_buckets", param_bytes * bucket});
    // partition_parameters.py: a parameter of ds_numel <= param_persistence_threshold stays whole
    // (ds_persist); in a Llama the RMSNorm weights (d_model each, two per block and the final one).
    const int64_t persist = zero_elements(t.stage3_param_persistence_threshold, "stage3_param_persistence_threshold",
                                          m.d_model);
    if (m.d_model <= persist)
      out.push_back({"zero_persistent_parameters", param_bytes * double(2 * m.n_layers + 1) * m.d_model * (1 - 1 / N)});
  } else if (stage == 2 || stage == 1) {
    // stage_1_and_2.py backward: ipg_buffer of reduce_bucket_size, a second with overlap_comm
    // (contiguous_gradients only); the partition's reduced gradients (grads_in_partition with
    // contiguous_gradients, else slices of the parameters' .grad) until the step. Stage 1 the
    // same: reduce_ipg_grads copies the rank's partition into grads_in_partition
    // (copy_grads_in_partition, "zero stage 1 - partition only optimizer state"); its whole
    // 16-bit gradients are the parameters' .grad, which the simulator holds (no_shard units).
    if (t.contiguous_gradients) out.push_back({"zero_ipg_buckets", (t.overlap_comm ? 2 : 1) * param_bytes * bucket});
    out.push_back({"zero_grad_partition", param_bytes * P / N});
    // Stage 1's and 2's parameters: bit16_groups_flat, the whole 16-bit model in one flat buffer
    // per parameter group on every rank; their units hold no working copy (fsdp_units.cpp,
    // StepShape::zero_whole_params).
    out.push_back({"zero_bit16_parameters", param_bytes * P});
  }
  return out;
}

double zero_reserved_bytes(const std::vector<ZeroBuffer>& buffers) {
  double r = 0;
  for (const ZeroBuffer& b : buffers) r += std::ceil(b.bytes / double(kRoundLarge)) * double(kRoundLarge);
  return r;
}

}  // namespace shardcast::planner
