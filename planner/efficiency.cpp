#include "planner/efficiency.h"

#include <stdexcept>

namespace shardcast::planner {

namespace {
struct Field {
  const char* key;
  double EfficiencyParams::*member;
};
const Field kFields[] = {
    {"matmul_ceiling", &EfficiencyParams::matmul_ceiling},
    {"fp8_matmul_ceiling", &EfficiencyParams::fp8_matmul_ceiling},
    {"hbm_ceiling", &EfficiencyParams::hbm_ceiling},
    {"matmul_eff", &EfficiencyParams::matmul_eff},
    {"matmul_dim_half", &EfficiencyParams::matmul_dim_half},
    {"fp8_matmul_eff", &EfficiencyParams::fp8_matmul_eff},
    {"attention_eff", &EfficiencyParams::attention_eff},
    {"attention_tile", &EfficiencyParams::attention_tile},
    {"hbm_eff", &EfficiencyParams::hbm_eff},
    {"compile_elementwise_factor", &EfficiencyParams::compile_elementwise_factor},
    {"unit_overhead_s", &EfficiencyParams::unit_overhead_s},
    {"step_overhead_s", &EfficiencyParams::step_overhead_s},
    {"intra_node_bw_eff", &EfficiencyParams::intra_node_bw_eff},
    {"inter_node_bw_eff", &EfficiencyParams::inter_node_bw_eff},
    {"collective_base_latency_s", &EfficiencyParams::collective_base_latency_s},
    {"overlap_compute_slowdown", &EfficiencyParams::overlap_compute_slowdown},
    {"runtime_overhead_gib", &EfficiencyParams::runtime_overhead_gib},
    {"fragmentation", &EfficiencyParams::fragmentation},
    {"error_band_rel", &EfficiencyParams::error_band_rel},
    {"error_band_runs", &EfficiencyParams::error_band_runs},
};
}  // namespace

EfficiencyParams of_datasheet(const EfficiencyParams& p) {
  EfficiencyParams r = p;
  r.matmul_eff = p.matmul_eff * p.matmul_ceiling;
  r.fp8_matmul_eff = p.fp8_matmul_eff * p.fp8_matmul_ceiling;
  r.attention_eff = p.attention_eff * p.matmul_ceiling;
  r.hbm_eff = p.hbm_eff * p.hbm_ceiling;
  return r;
}

const std::vector<std::string>& efficiency_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& f : kFields) k.emplace_back(f.key);
    return k;
  }();
  return keys;
}

EfficiencyParams read_efficiency(const HardwareSpec& hw) {
  EfficiencyParams p;
  for (const auto& f : kFields) p.*(f.member) = hw.efficiency_param(f.key);
  return p;
}

double& efficiency_field(EfficiencyParams& p, const std::string& key) {
  for (const auto& f : kFields)
    if (key == f.key) return p.*(f.member);
  throw std::invalid_argument("unknown efficiency parameter '" + key + "'");
}

double efficiency_field(const EfficiencyParams& p, const std::string& key) {
  return efficiency_field(const_cast<EfficiencyParams&>(p), key);
}

}  // namespace shardcast::planner
