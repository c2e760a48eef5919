// EfficiencyParams: the named cost-model parameters of one hardware preset, typed.
//
// What it is: the `[efficiency]` table of configs/hardware/<gpu>.toml read into a struct the
// cost model uses in its inner loops (no map look-ups there), and written back by the fitter.
// Every key is documented in docs/cost-model.md with its meaning, unit and source. What it is
// not: a place for defaults — a missing key is a ConfigError naming the preset file and key.
// Plain value type, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "shared/hardware_spec.h"

namespace shardcast::planner {

struct EfficiencyParams {
  // Ceilings: what this GPU measurably reaches, as fractions of its datasheet rates (each
  // preset cites the measurement; 1 on profiles whose rates were measured directly).
  double matmul_ceiling = 0;      // maximum achievable matmul rate (MAMF) / dense bf16 peak
  double fp8_matmul_ceiling = 0;  // fp8 MAMF / dense fp8 peak
  double hbm_ceiling = 0;         // measured copy bandwidth / datasheet HBM bandwidth
  // Attention kernels' published forward + backward rates (causal, head_dim 128, seq 16k, on
  // executed FLOPs) / dense bf16 peak: SDPA's flash backend (FlashAttention-2) and cuDNN's
  // attention (0 = none on this GPU). docs/cost-model.md §2.2.
  double attention_ceiling = 0;
  double cudnn_attention_ceiling = 0;
  // Compute: fitted fractions of the ceilings (the same meaning on every GPU).
  double matmul_eff = 0;          // large bf16/fp16/fp32 GEMM rate / matmul ceiling
  double matmul_dim_half = 0;     // GEMM shape: eff = matmul_eff·k/(k + dim_half), k = min dim
  double fp8_matmul_eff = 0;      // fp8 GEMM rate / fp8 matmul ceiling
  double attention_eff = 0;       // attention rate / the kernel's attention ceiling, on executed (causal) FLOPs
  double attention_tile = 0;      // flash-attention tile edge: diagonal tiles cost (1 + tile/s)
  double hbm_eff = 0;             // memory-bound ops: achieved / HBM ceiling
  double compile_elementwise_factor = 0;  // elementwise bytes with torch.compile / eager
  double unit_overhead_s = 0;     // host time per FSDP unit per pass (hooks, launches)  // s
  double step_overhead_s = 0;     // host time per optimizer step (data, logging)  // s
  // Communication.
  double intra_node_bw_eff = 0;   // ring bus bandwidth / intra-node link bandwidth
  double inter_node_bw_eff = 0;   // ring bus bandwidth / NIC bandwidth
  double collective_base_latency_s = 0;  // fixed cost of one collective  // s
  double overlap_compute_slowdown = 0;   // compute slows by (1 + this) while comm runs
  // Memory.
  double runtime_overhead_gib = 0;  // CUDA context + communicator buffers, outside the allocator  // GiB
  double fragmentation = 0;         // reserved / allocated − 1
  // Error band of tokens/s, from `shardcast validate` residuals.
  double error_band_rel = 0;        // 1σ relative error
  double error_band_runs = 0;       // number of measured runs behind it (published, or this machine's)
};

// The rates the cost model uses, as fractions of the datasheet: matmul_eff·matmul_ceiling,
// fp8_matmul_eff·fp8_matmul_ceiling, attention_eff·attention_ceiling (the flash backend's; a
// plan on cuDNN attention takes attention_eff·cudnn_attention_ceiling), hbm_eff·hbm_ceiling;
// every other key unchanged.
EfficiencyParams of_datasheet(const EfficiencyParams& p);

// Names of the keys, in the order of EfficiencyParams (the fitter addresses them by name).
const std::vector<std::string>& efficiency_keys();

// Read every key from hw.efficiency; throws ConfigError naming the file and the first missing key.
EfficiencyParams read_efficiency(const HardwareSpec& hw);
// Address one parameter by key; throws ConfigError for an unknown key.
double& efficiency_field(EfficiencyParams& p, const std::string& key);
double efficiency_field(const EfficiencyParams& p, const std::string& key);

}  // namespace shardcast::planner
