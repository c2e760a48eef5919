#include "planner/model/efficiency.h"

#include <iterator>

#include "shared/errors.h"

namespace shardcast::planner {

namespace {
// The fields of EfficiencyParams in the order of kEfficiencyKeys (shared/hardware_spec.h),
// which names them.
double EfficiencyParams::* const kMembers[] = {
    &EfficiencyParams::matmul_ceiling,
    &EfficiencyParams::fp8_matmul_ceiling,
    &EfficiencyParams::hbm_ceiling,
    &EfficiencyParams::attention_ceiling,
    &EfficiencyParams::cudnn_attention_ceiling,
    &EfficiencyParams::matmul_eff,
    &EfficiencyParams::matmul_dim_half,
    &EfficiencyParams::fp8_matmul_eff,
    &EfficiencyParams::attention_eff,
    &EfficiencyParams::attention_tile,
    &EfficiencyParams::hbm_eff,
    &EfficiencyParams::compile_elementwise_factor,
    &EfficiencyParams::unit_overhead_s,
    &EfficiencyParams::step_overhead_s,
    &EfficiencyParams::intra_node_bw_eff,
    &EfficiencyParams::inter_node_bw_eff,
    &EfficiencyParams::collective_base_latency_s,
    &EfficiencyParams::overlap_compute_slowdown,
    &EfficiencyParams::runtime_overhead_gib,
    &EfficiencyParams::fragmentation,
    &EfficiencyParams::error_band_rel,
    &EfficiencyParams::error_band_runs,
};
static_assert(std::size(kMembers) == std::size(kEfficiencyKeys), "one field per key of kEfficiencyKeys");
static_assert(sizeof(EfficiencyParams) == std::size(kMembers) * sizeof(double), "every field has a key");
constexpr size_t kN = std::size(kMembers);
}  // namespace

EfficiencyParams of_datasheet(const EfficiencyParams& p) {
  EfficiencyParams r = p;
  r.matmul_eff = p.matmul_eff * p.matmul_ceiling;
  r.fp8_matmul_eff = p.fp8_matmul_eff * p.fp8_matmul_ceiling;
  r.attention_eff = p.attention_eff * p.attention_ceiling;
  r.hbm_eff = p.hbm_eff * p.hbm_ceiling;
  return r;
}

const std::vector<std::string>& efficiency_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const char* key : kEfficiencyKeys) k.emplace_back(key);
    return k;
  }();
  return keys;
}

EfficiencyParams read_efficiency(const HardwareSpec& hw) {
  EfficiencyParams p;
  for (size_t i = 0; i < kN; ++i) p.*(kMembers[i]) = hw.efficiency_param(kEfficiencyKeys[i]);
  return p;
}

double& efficiency_field(EfficiencyParams& p, const std::string& key) {
  for (size_t i = 0; i < kN; ++i)
    if (key == kEfficiencyKeys[i]) return p.*(kMembers[i]);
  check_efficiency_key(key, "--fit-params");  // throws ConfigError naming the closest key
  throw ConfigError("", "efficiency." + key, "unknown cost-model parameter");
}

double efficiency_field(const EfficiencyParams& p, const std::string& key) {
  return efficiency_field(const_cast<EfficiencyParams&>(p), key);
}

}  // namespace shardcast::planner
