// Kernel rates by shape: the time of one GEMM from its (M, N, K) on a GPU's SMs (tile and wave
// quantization, anchored on the measured large-GEMM rate), and flash-attention's rate from
// published benchmark tables (configs/kernels/flash_attention.csv) by sequence length, head
// dimension and causal mask.
//
// What it is: the per-op compute rates of GPU presets (those with `gpu.sm_count` > 0); ops.cpp
// calls it. What it is not: memory-bound ops (bytes over bandwidth, ops.cpp) or the CPU
// profile's measured roofline (ops.cpp's `matmul_dim_half` curve).
// gemm_time_tiled is the closed form; gemm_time_reference schedules every tile on an SM, the
// oracle of tests/planner/kernel_rates_test.cpp. The attention table is read once per process
// (a mutex-guarded cache); the functions are thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace shardcast::planner {

// The GPU's tensor-core grid, from its preset's [gpu] table.
struct GemmGrid {
  int sm_count = 0;        // streaming multiprocessors (NVIDIA) / compute units (AMD)
  double tile_m = 0;       // output tile rows  // elements
  double tile_n = 0;       // output tile columns  // elements
  double tile_k = 0;       // K step of one main-loop iteration  // elements
};

// Time of an (m×k)·(k×n) GEMM: ceil(m/tm)·ceil(n/tn) output tiles run in waves of sm_count,
// each tile 2·tm·tn·ceil(k/tk)·tk FLOP at rate/sm_count; the faster of the tile and its
// transpose (tm↔tn). As m, n, k grow, → 2mnk / rate.  // s
// `rate`: the large-GEMM rate of the whole GPU (measured MAMF × a fitted factor)  // FLOP/s
double gemm_time_tiled(double m, double n, double k, double rate, const GemmGrid& g);
// The same, by placing every output tile on the least-loaded SM one by one (the oracle).
double gemm_time_reference(double m, double n, double k, double rate, const GemmGrid& g);

// y at x by straight lines between the points (x ascending), clamped to the first and last y;
// 0 for no points. Rates by sequence length use x = log2(seq_len) (here and kernel_table.h).
double interpolate_clamped(const std::vector<std::pair<double, double>>& points, double x);

// SDPA's flash backend before torch 2.2 ran FlashAttention (version 1); 2.2 brought
// FlashAttention-2 ("scaled_dot_product_attention (SDPA) now supports FlashAttention-2, yielding
// around 2x speedups compared to previous versions", PyTorch 2.2 release notes, 2024-01-30).
// FlashAttention-1's forward + backward rate over FlashAttention-2's at the shape the presets'
// attention_ceiling is taken at (causal, head_dim 128, seq 16k): 83 / 189 TFLOP/s = 0.439 on A100
// 80GB and 137 / 328 = 0.418 on H100 SXM (the FlashAttention-2 paper's figures,
// Dao-AILab/flash-attention@4f285b35 assets/flash2_{a100,h100}_fwd_bwd_benchmark.png, the
// "FlashAttention" bars); their mean. Runtime term attention = "flash1" times attention at
// attention_eff · attention_ceiling · this (docs/cost-model.md §2.2).
inline constexpr double kFlashAttention1OverFlashAttention2 = 0.43;

// One published rate: forward + backward FLOP/s of a flash-attention kernel on one GPU.
struct AttentionPoint {
  std::string gpu;      // the GPU the benchmark ran on, e.g. "H100-80GB-SXM5"
  std::string kernel;   // flash2 | flash_triton
  int head_dim = 0;
  bool causal = true;
  double seq_len = 0;
  double flops = 0;       // FLOP/s (executed FLOPs: causal halves them)
  double mamf_flops = 0;  // that GPU's bf16 maximum achievable matmul rate  // FLOP/s
  int line = 0;           // line in the file, for messages
};

// Parse the CSV text (`# ` comment lines, then the header
// gpu,kernel,head_dim,causal,seq_len,tflops,mamf_tflops); InputError naming file, line and column.
std::vector<AttentionPoint> parse_attention_table(const std::string& text, const std::string& file);
// configs/kernels/flash_attention.csv, read once.
const std::vector<AttentionPoint>& attention_table();

// Forward + backward rate of `kernel` on the benchmark GPU `bench_gpu` at (head_dim, causal,
// seq_len): linear in log2(seq_len) between the table's points and linear in head_dim, clamped
// to the table's range; scaled by target_mamf / the benchmark GPU's MAMF. A kernel the bench GPU
// has no rows for takes its ratio to flash2 on a GPU with both. ConfigError when nothing fits.
// FLOP/s (executed FLOPs)
double attention_rate(const std::vector<AttentionPoint>& table, const std::string& bench_gpu, const std::string& kernel,
                      double head_dim, bool causal, double seq_len, double target_mamf);

}  // namespace shardcast::planner
