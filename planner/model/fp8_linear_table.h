// Measured float8 Linear speed-ups by shape: the published table of a float8 recipe's speed-up
// over bfloat16 for one Linear (configs/kernels/float8_linear.csv), its reader, its lookup, and
// the Linear time it implies for the planner.
//
// What it is: per (GPU the table was measured on, recipe), a full grid over the forward GEMM's
// (M, K, N) of speedup = t_bf16 / t_fp8 for LayerNorm -> Linear -> Sigmoid, forward + backward,
// under torch.compile (torchao's benchmarks/float8/float8_roofline.py); fp8_linear_speedup()
// interpolates it trilinearly in log2 of each dimension, clamped to the grid; measured_fp8_linear_s()
// turns a speed-up into the float8 Linear's time given the planner's own bf16 Linear time and
// the benchmark graph's LayerNorm and Sigmoid. What it is not: the recipe's roofline
// (fp8_recipe.h, the reference path and the path for recipes, GPUs and eager runs the table does
// not cover) or the GEMM rate model (ops.h).
// Threading: fp8_linear_table() reads config_dir()/kernels/float8_linear.csv once per process
// (std::call_once) and is then read-only; the functions are pure.
#pragma once

#include <string>
#include <vector>

#include "shared/train_config.h"

namespace shardcast::planner {

struct Fp8LinearPoint {
  std::string gpu;          // the GPU the benchmark ran on, e.g. "H100"
  Fp8Recipe recipe = Fp8Recipe::none;
  double m = 0, k = 0, n = 0;  // forward GEMM (M×K)·(K×N)  // elements
  double speedup = 0;       // bf16 time / float8 time of the benchmark graph
  int line = 0;             // line in the file, for messages
};

// One recipe's grid on one GPU, for the lookup: sorted log2 axes and the speed-ups, n fastest.
struct Fp8LinearGrid {
  std::string gpu;
  Fp8Recipe recipe = Fp8Recipe::none;
  std::vector<double> log2_m, log2_k, log2_n;
  std::vector<double> speedup;  // [i_m][i_k][i_n], size |m|·|k|·|n|
};

struct Fp8LinearTable {
  std::vector<Fp8LinearPoint> points;  // as read, in file order
  std::vector<Fp8LinearGrid> grids;    // one per (gpu, recipe), in first-seen order
};

// Parse the CSV text (`#` comment lines, then the header gpu,recipe,m,k,n,speedup). Every
// (gpu, recipe) must cover a full grid (each M × K × N of its distinct values once). InputError
// naming `file`, the line and the column.
Fp8LinearTable parse_fp8_linear_table(const std::string& text, const std::string& file);
// config_dir()/kernels/float8_linear.csv, read once.
const Fp8LinearTable& fp8_linear_table();

// The grid of `recipe` measured on `gpu` (a preset name: the grid's gpu followed by '-' or
// nothing, e.g. grid "H200" for "H200-141GB-SXM"), else the first grid of the recipe in file
// order: on a GPU the table has no grid of, the same shape's speed-up on another is the prior
// (docs/cost-model.md §2.3). Null when the table has no rows of the recipe.
const Fp8LinearGrid* fp8_linear_grid(const Fp8LinearTable& t, Fp8Recipe recipe, const std::string& gpu);

// The grid a plan's ComputeContext::fp8_linear takes: fp8_linear_grid() of the shipped table
// when the run compiles (the table was measured under torch.compile) on a GPU preset
// (sm_count > 0: the per-shape model); else null (the recipe's roofline).
const Fp8LinearGrid* fp8_linear_grid_for(Fp8Recipe recipe, bool compile, int sm_count, const std::string& gpu);

// Speed-up of the grid's recipe at the forward shape (M, K, N): linear in log2(M), log2(K),
// log2(N) between the grid's points, clamped to its edges. No allocation: called for every fp8
// Linear of every plan.
double fp8_linear_speedup(const Fp8LinearGrid& g, double M, double K, double N);

// The float8 Linear's forward + backward time that speed-up `s` implies:
//   s = (bf16_linear_s + other_s) / (fp8_linear_s + other_s)  ⇒  fp8_linear_s = (bf16_linear_s + other_s) / s − other_s
// with other_s the benchmark graph's LayerNorm and Sigmoid (forward + backward), the same in both
// runs. Never below `floor_s` (the recipe's roofline: no measured table makes a Linear faster
// than its own GEMMs at the fitted rate and its casts at the copy bandwidth).  // s
double measured_fp8_linear_s(double s, double bf16_linear_s, double other_s, double floor_s);

// HBM bytes of the benchmark graph's LayerNorm over x (M×K) and Sigmoid over y (M×N), forward
// + backward, each one fused kernel under compile: forward reads its input and writes its
// output (2A per element), backward reads the saved tensor and the incoming gradient and writes
// the outgoing one (3A).  // bytes
double fp8_benchmark_other_bytes(double M, double K, double N, int act_bytes);

}  // namespace shardcast::planner
