#include "planner/model/memory_model.h"

#include <algorithm>
#include <string>

#include "shared/errors.h"

namespace shardcast::planner {

int dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8") return 1;
  throw ConfigError("", "precision", "unknown dtype '" + dtype + "' (allowed: fp32, bf16, fp16, fp8)");
}

StateMemory state_memory(int64_t params, int shard_group, int master_bytes, int moment_bytes) {
  const double per_rank = double(params) / double(shard_group);
  StateMemory s;
  s.parameters = master_bytes * per_rank;
  s.gradients = master_bytes * per_rank;
  s.optimizer_states = 2.0 * moment_bytes * per_rank;
  return s;
}

int adamw_moment_bytes(const TrainConfig& cfg) {
  const std::string& s = cfg.optimizer.state_dtype;
  return dtype_bytes(s == "master" ? cfg.precision.master_dtype : s);
}

DeviceMemory device_memory(const AllocatorInputs& in) {
  DeviceMemory d;
  d.allocated = in.allocated_peak;
  d.reserved = in.replayed_reserved >= 0 ? std::max(in.allocated_peak, in.replayed_reserved)
                                         : in.allocated_peak * (1.0 + in.fragmentation);
  d.device_total = d.reserved + in.outside_allocator;
  return d;
}

}  // namespace shardcast::planner
