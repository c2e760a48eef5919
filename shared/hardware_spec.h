// HardwareSpec: one GPU type, the node it sits in, and the cost-model parameters fitted for it.
//
// What it is: peak rates and sizes from datasheets (each preset file cites its source) plus a
// table of named efficiency parameters ([efficiency] in the preset) that the planner reads
// and the calibrator writes. What it is not: a cluster size (that is TrainConfig::cluster)
// and not the cost model itself. Plain value type, thread-safe.
//
// Units: FLOP/s for rates, bytes for sizes, bytes/s for bandwidths, seconds for latencies.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace shardcast {

struct GpuSpec {
  double bf16_flops = 0;        // dense bf16 tensor-core peak  // FLOP/s
  double fp16_flops = 0;        // dense fp16 peak              // FLOP/s
  double fp32_flops = 0;        // fp32 (non-tensor) peak       // FLOP/s
  double fp8_flops = 0;         // dense fp8 peak; 0 = no fp8   // FLOP/s
  double hbm_bytes = 0;         // device memory visible to the allocator  // bytes
  double hbm_bandwidth = 0;     // bytes/s
  // The tensor-core grid (planner/model/kernel_rates.h): 0 SMs = no per-shape model (the measured
  // roofline of the CPU profile). Each GPU preset cites its datasheet / whitepaper.
  int sm_count = 0;             // SMs (NVIDIA) / compute units (AMD)
  double gemm_tile_m = 0;       // GEMM output tile rows  // elements
  double gemm_tile_n = 0;       // GEMM output tile columns  // elements
  double gemm_tile_k = 0;       // GEMM K step  // elements
  // Which GPU's rows of configs/kernels/flash_attention.csv time its flash attention; "" =
  // the fitted attention_eff (every shipped preset: docs/validation.md "Attention kernels").
  std::string attention_benchmark;
  // CUDA compute capability, e.g. "9.0" (H100, H200) or "10.0" (B200); "" = not a CUDA GPU.
  // A runtime's SDPA runs cuDNN attention on the capabilities its term cudnn_attention lists.
  std::string compute_capability;
  // A measured kernel table (planner/model/kernel_table.h), relative to the configs directory; "" = none.
  std::string kernel_table;
  // Board power (planner/model/power_limit.h): the power the peaks above are rated at, and the power
  // limit the part runs at by default (its source's; 0 = the board power). 0 board power = not
  // stated: no power limit can be modelled.  // W
  double board_power_w = 0;
  double power_limit_w = 0;
  // The same silicon's datasheet rating at a lower board power (a lower-power part of the same
  // die, e.g. B100 at 700 W for B200): its power and its bf16 dense peak. With it, a limit scales
  // the clock along the power law through the two ratings (planner/model/power_limit.h); 0 = no such
  // rating stated: the cube-root law.  // W, FLOP/s
  double lower_power_rating_w = 0;
  double lower_power_bf16_flops = 0;
};

struct NodeSpec {
  int gpus_per_node = 8;
  double intra_node_bandwidth = 0;  // per GPU, per direction (NVLink/IF)       // bytes/s
  double inter_node_bandwidth = 0;  // all NICs of one node together, per dir.  // bytes/s
  double intra_node_latency = 0;    // per ring step inside a node              // s
  double inter_node_latency = 0;    // per ring step across nodes               // s
  // Nodes of at most this many GPUs link each pair directly, with no switch: each peer gets
  // 1/(n − 1) of a GPU's links (HGX 4-GPU boards); 0 = a switch at every node size.
  int direct_link_max_gpus = 0;
};

// The keys of a preset's [efficiency] table, in the order of planner::EfficiencyParams (whose
// fields planner/model/efficiency.cpp maps onto these names); the one list the preset parser, the
// session reader and the fitter check keys against.
inline constexpr const char* kEfficiencyKeys[] = {
    "matmul_ceiling",      "fp8_matmul_ceiling",       "hbm_ceiling",
    "attention_ceiling",   "cudnn_attention_ceiling",
    "matmul_eff",          "matmul_dim_half",          "fp8_matmul_eff",
    "attention_eff",       "attention_tile",           "hbm_eff",
    "compile_elementwise_factor", "unit_overhead_s",   "step_overhead_s",
    "intra_node_bw_eff",   "inter_node_bw_eff",        "collective_base_latency_s",
    "overlap_compute_slowdown", "runtime_overhead_gib", "fragmentation",
    "error_band_rel",      "error_band_runs",
};

// ConfigError naming `file` and "efficiency.KEY" (with the closest valid key) when `key` is
// not one of kEfficiencyKeys.
void check_efficiency_key(const std::string& key, const std::string& file);

struct HardwareSpec {
  std::string name;       // preset key, e.g. "H100-80GB-SXM"
  std::string source;     // where the numbers come from (free text)
  std::string file;       // the preset file it was read from ("" if built in code/tests)
  GpuSpec gpu;
  NodeSpec node;
  // Cost-model parameters by name (dimensionless efficiencies, overhead bytes, ...): exactly the
  // keys of kEfficiencyKeys (the parser rejects any other). docs/cost-model.md documents them.
  std::map<std::string, double> efficiency;

  // Peak for a dtype name ("bf16", "fp16", "fp32", "fp8"); throws ConfigError for an unknown
  // name or a dtype this GPU lacks.  // FLOP/s
  double peak_flops(const std::string& dtype) const;
  // Throws ConfigError naming the preset file and the missing key.
  double efficiency_param(const std::string& key) const;
};

}  // namespace shardcast
