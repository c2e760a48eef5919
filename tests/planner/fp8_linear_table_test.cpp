// Measured float8 Linear speed-ups (planner/model/fp8_linear_table.h): the reader's errors, the
// lookup against the shipped table's own cells, and the planner's fp8 Linear time against the
// closed form s = (t_bf16 + t_other) / (t_fp8 + t_other) that the table states.
#include "planner/model/fp8_linear_table.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "planner/model/kernel_rates.h"
#include "planner/model/ops.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "test_util.h"
#include "shared/errors.h"

namespace shardcast::planner {
namespace {

const char* kHeader = "gpu,recipe,m,k,n,speedup\n";

// A 2 × 2 × 2 grid: speed-up = 1 + 0.1·[M=2048] + 0.2·[K=2048] + 0.4·[N=2048].
std::string small_grid() {
  std::string s = std::string("# comment\n") + kHeader;
  for (int m : {1024, 2048})
    for (int k : {1024, 2048})
      for (int n : {1024, 2048})
        s += "H100,rowwise," + std::to_string(m) + "," + std::to_string(k) + "," + std::to_string(n) + "," +
             std::to_string(1.0 + 0.1 * (m == 2048) + 0.2 * (k == 2048) + 0.4 * (n == 2048)) + "\n";
  return s;
}

TEST(Fp8LinearTable, GridPointsReturnTheirCell) {
  const auto t = parse_fp8_linear_table(small_grid(), "t.csv");
  ASSERT_EQ(t.points.size(), 8u);
  ASSERT_EQ(t.grids.size(), 1u);
  const Fp8LinearGrid* g = fp8_linear_grid(t, Fp8Recipe::rowwise, "H100-80GB-SXM");
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(fp8_linear_speedup(*g, 1024, 1024, 1024), 1.0, 1e-12);
  EXPECT_NEAR(fp8_linear_speedup(*g, 2048, 1024, 2048), 1.5, 1e-12);
  EXPECT_NEAR(fp8_linear_speedup(*g, 2048, 2048, 2048), 1.7, 1e-12);
  // No rows of a recipe: no grid, and the planner keeps the roofline for it.
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::tensorwise, "H100-80GB-SXM"), nullptr);
}

TEST(Fp8LinearTable, InterpolatesInLog2AndClampsAtTheEdges) {
  const auto t = parse_fp8_linear_table(small_grid(), "t.csv");
  const Fp8LinearGrid& g = t.grids.at(0);
  // Halfway in log2 along every axis: the mean of the 8 corners (the function is linear).
  const double mid = std::sqrt(1024.0 * 2048.0);
  EXPECT_NEAR(fp8_linear_speedup(g, mid, mid, mid), 1.0 + 0.05 + 0.1 + 0.2, 1e-12);
  // Beyond the grid: the edge's value, never extrapolated.
  EXPECT_NEAR(fp8_linear_speedup(g, 512, 1 << 20, 100), 1.2, 1e-12);
}

// A GPU's own grid of a recipe where the table has one, else the recipe's first grid (the prior).
TEST(Fp8LinearTable, EachGpuTakesItsOwnGridElseTheFirst) {
  std::string text = small_grid();
  for (int m : {1024, 2048})
    for (int k : {1024, 2048})
      for (int n : {1024, 2048})
        text += "H200,rowwise," + std::to_string(m) + "," + std::to_string(k) + "," + std::to_string(n) + ",2.0\n";
  const auto t = parse_fp8_linear_table(text, "t.csv");
  ASSERT_EQ(t.grids.size(), 2u);
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::rowwise, "H200-141GB-SXM"), &t.grids[1]);
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::rowwise, "H200"), &t.grids[1]);
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::rowwise, "H100-80GB-SXM"), &t.grids[0]);
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::rowwise, "H100-unspecified"), &t.grids[0]);
  // No grid of its own: the first in file order, also for a name that merely starts alike.
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::rowwise, "B200"), &t.grids[0]);
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::rowwise, "H2000"), &t.grids[0]);
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::rowwise_with_gw_hp, "H200-141GB-SXM"), nullptr);
}

// The reference: interpolate along N, then K, then M with interpolate_clamped over the rows
// as read (no precomputed grid) — the oracle of the grid lookup.
double reference_speedup(const Fp8LinearTable& t, const std::string& gpu, Fp8Recipe r, double M, double K, double N) {
  std::map<double, std::map<double, std::vector<std::pair<double, double>>>> by;
  for (const Fp8LinearPoint& p : t.points)
    if (p.recipe == r && p.gpu == gpu) by[std::log2(p.m)][std::log2(p.k)].emplace_back(std::log2(p.n), p.speedup);
  std::vector<std::pair<double, double>> along_m;
  for (auto& [lm, by_k] : by) {
    std::vector<std::pair<double, double>> along_k;
    for (auto& [lk, along_n] : by_k) {
      std::sort(along_n.begin(), along_n.end());
      along_k.emplace_back(lk, interpolate_clamped(along_n, std::log2(N)));
    }
    along_m.emplace_back(lm, interpolate_clamped(along_k, std::log2(K)));
  }
  return interpolate_clamped(along_m, std::log2(M));
}

TEST(Fp8LinearTable, GridLookupMatchesTheReference) {
  const auto& t = fp8_linear_table();
  int n = 0;
  for (const Fp8LinearGrid& g : t.grids)
    for (double M = 700; M < 50000; M *= 1.9)
      for (double K = 900; K < 60000; K *= 1.7)
        for (double N = 500; N < 70000; N *= 1.55) {
          EXPECT_NEAR(fp8_linear_speedup(g, M, K, N), reference_speedup(t, g.gpu, g.recipe, M, K, N), 1e-12)
              << g.gpu << " " << to_string(g.recipe) << " " << M << " " << K << " " << N;
          ++n;
        }
  EXPECT_GT(n, 1500);
}

TEST(Fp8LinearTable, ReaderNamesFileLineAndColumn) {
  auto error_of = [](const std::string& text) {
    try {
      parse_fp8_linear_table(text, "f8.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("gpu,recipe,m,k,n\n").find("f8.csv:1: header has 5 columns"), std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) + "H100,fp8,1024,1024,1024,1.0\n").find("f8.csv:2: column 'recipe': 'fp8'"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) + "H100,rowwise,1024,x,1024,1.0\n").find("column 'k': 'x' is not a positive"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kHeader) + "H100,rowwise,1024,1024,1024,0\n").find("column 'speedup'"),
            std::string::npos);
  EXPECT_NE(error_of("# only a comment\n").find("no header line"), std::string::npos);
  // A hole in the grid and a repeated shape.
  std::string holed = small_grid();
  holed = holed.substr(0, holed.rfind("H100"));
  EXPECT_NE(error_of(holed).find("has 7 shapes, not the full grid of 2 M × 2 K × 2 N = 8"), std::string::npos);
  EXPECT_NE(error_of(small_grid() + "H100,rowwise,1024,1024,1024,1.1\n").find("is already on line 3"),
            std::string::npos);
}

TEST(Fp8LinearTable, ShippedTableIsTheFigureAndTheH200Grids) {
  const auto& t = fp8_linear_table();
  // torchao's H100 rowwise figure, 6 M × 6 K × 6 N (1024 … 32768), and the H200 rowwise and
  // tensorwise grids measured here, 3 × 3 × 3 (4096 … 16384).
  ASSERT_EQ(t.points.size(), 216u + 27u + 27u);
  ASSERT_EQ(t.grids.size(), 3u);
  EXPECT_EQ(fp8_linear_grid(t, Fp8Recipe::rowwise_with_gw_hp, "H100-80GB-SXM"), nullptr);
  // Cells as printed in pytorch/ao docs/static/fp8-rowwise-perf.png: the corners, one
  // Llama-3-8B shape (M = 8192 tokens, K = 4096, N = 1024: wk and wv) and the largest speed-up.
  const Fp8LinearGrid& h100 = *fp8_linear_grid(t, Fp8Recipe::rowwise, "H100-80GB-SXM");
  EXPECT_EQ(h100.gpu, "H100");
  EXPECT_DOUBLE_EQ(fp8_linear_speedup(h100, 1024, 1024, 1024), 0.42);
  EXPECT_DOUBLE_EQ(fp8_linear_speedup(h100, 32768, 32768, 32768), 1.52);
  EXPECT_DOUBLE_EQ(fp8_linear_speedup(h100, 8192, 4096, 1024), 0.52);
  EXPECT_DOUBLE_EQ(fp8_linear_speedup(h100, 32768, 16384, 32768), 1.73);
  // The H200 run's corners (docs/gpu-runs/2026-11-28-h200-float8/float8_static.log).
  const Fp8LinearGrid& h200 = *fp8_linear_grid(t, Fp8Recipe::rowwise, "H200-141GB-SXM");
  EXPECT_EQ(h200.gpu, "H200");
  EXPECT_DOUBLE_EQ(fp8_linear_speedup(h200, 4096, 4096, 4096), 0.858);
  EXPECT_DOUBLE_EQ(fp8_linear_speedup(h200, 16384, 16384, 16384), 1.613);
  const Fp8LinearGrid& tw = *fp8_linear_grid(t, Fp8Recipe::tensorwise, "H100-80GB-SXM");
  EXPECT_EQ(tw.gpu, "H200");  // the only tensorwise grid: the prior on an H100
  EXPECT_DOUBLE_EQ(fp8_linear_speedup(tw, 4096, 4096, 4096), 1.210);
  EXPECT_DOUBLE_EQ(fp8_linear_speedup(tw, 16384, 16384, 16384), 1.758);
}

// H100-like context on the tile grid (as a GPU preset runs).
ComputeContext h100(Fp8Recipe r, bool compile) {
  ComputeContext c;
  c.peak_flops = 989e12;
  c.fp8_peak_flops = 1979e12;
  c.hbm_bandwidth = 3.35e12;
  c.act_bytes = 2;
  c.compile = compile;
  c.fp8 = r;
  c.eff.matmul_eff = 0.75;
  c.eff.fp8_matmul_eff = 0.8;
  c.eff.hbm_eff = 0.9;
  c.grid = GemmGrid{132, 256, 128, 64};
  return c;
}
using test::linear;
using test::step;
// The planner's fp8 Linear reproduces the table's speed-up of the benchmark graph exactly
// (the table is the measurement; only floating-point rounding between them: 1e-9).
TEST(Fp8LinearTable, PlannerReproducesTheBenchmarkGraphSpeedup) {
  const auto& t = fp8_linear_table();
  ComputeContext bf16 = h100(Fp8Recipe::none, true);
  const double hbm = bf16.hbm_bandwidth * bf16.eff.hbm_eff;
  int checked = 0;
  for (const Fp8LinearPoint& p : t.points) {
    ComputeContext f8 = h100(p.recipe, true);
    f8.fp8_linear = fp8_linear_grid(t, p.recipe, p.gpu);
    const Op op = linear(p.m, p.k, p.n);
    const double other = fp8_benchmark_other_bytes(p.m, p.k, p.n, 2) / hbm;
    ComputeContext roof = f8;
    roof.fp8_linear = nullptr;
    if (step(op, roof) > (step(op, bf16) + other) / p.speedup - other) continue;  // the roofline floor binds
    EXPECT_NEAR((step(op, bf16) + other) / (step(op, f8) + other), p.speedup, 1e-9) << p.m << " " << p.k << " " << p.n;
    ++checked;
  }
  // The measured speed-ups are below this roofline's at every shape of the figure but the
  // floor's few: nearly every cell is checked.
  EXPECT_GE(checked, 200);
}

TEST(Fp8LinearTable, NeverFasterThanTheRoofline) {
  ComputeContext f8 = h100(Fp8Recipe::rowwise, true), roof = f8;
  f8.fp8_linear = fp8_linear_grid(fp8_linear_table(), Fp8Recipe::rowwise, "H100-80GB-SXM");
  for (double M : {1024.0, 8192.0, 65536.0})
    for (double K : {512.0, 4096.0, 53248.0})
      for (double N : {1024.0, 6144.0, 131072.0}) {
        const Op op = linear(M, K, N);
        EXPECT_GE(step(op, f8), step(op, roof) * (1 - 1e-12)) << M << " " << K << " " << N;
        // The split follows the roofline's forward / backward shares.
        EXPECT_NEAR(op_forward_time(op, f8) / step(op, f8), op_forward_time(op, roof) / step(op, roof), 1e-12);
      }
}

// A weight that arrives in fp8 from the all-gather (tensorwise with fp8 all-gather): the table's
// Linear (whose benchmark casts the weight every step) less the weight's cast kernels as the
// roofline times them — the two rooflines' difference, exactly (1e-12 relative: one subtraction).
TEST(Fp8LinearTable, PrecastWeightsDropTheWeightCastsFromTheMeasuredLinear) {
  const auto& t = fp8_linear_table();
  int checked = 0;
  for (double M : {4096.0, 8192.0, 65536.0})
    for (double K : {4096.0, 8192.0})
      for (double N : {4096.0, 14336.0}) {  // at N = 1024 the grid's clamped N = 4096 speed-up is under the floor
        const Op op = linear(M, K, N);
        ComputeContext f8 = h100(Fp8Recipe::tensorwise, true);
        f8.fp8_linear = fp8_linear_grid(t, Fp8Recipe::tensorwise, "H100-80GB-SXM");
        ComputeContext pre = f8, roof = f8, roof_pre = f8;
        pre.fp8_weights_precast = roof_pre.fp8_weights_precast = true;
        roof.fp8_linear = roof_pre.fp8_linear = nullptr;
        const double weight_casts = step(op, roof) - step(op, roof_pre);
        EXPECT_GT(weight_casts, 0);
        if (step(op, f8) <= step(op, roof) * (1 + 1e-12)) continue;  // the roofline floor binds
        EXPECT_NEAR(step(op, pre), step(op, f8) - weight_casts, 1e-12 * step(op, f8)) << M << " " << K << " " << N;
        ++checked;
      }
  EXPECT_EQ(checked, 12);
}

TEST(Fp8LinearTable, PlanUsesTheTableOnlyUnderCompileForARecipeItHas) {
  // The grid of fp8_linear_grid_for: compiled, on a GPU preset, a recipe of the table. plan.cpp
  // asks for it compiled, and for torchao's eager Float8Linear too (the test above).
  const auto& t = fp8_linear_table();
  const std::string h100_name = "H100-80GB-SXM";
  EXPECT_EQ(fp8_linear_grid_for(Fp8Recipe::rowwise, true, 132, h100_name), fp8_linear_grid(t, Fp8Recipe::rowwise, h100_name));
  EXPECT_EQ(fp8_linear_grid_for(Fp8Recipe::rowwise, true, 132, "H200-141GB-SXM")->gpu, "H200");
  EXPECT_EQ(fp8_linear_grid_for(Fp8Recipe::tensorwise, true, 132, h100_name)->gpu, "H200");
  EXPECT_EQ(fp8_linear_grid_for(Fp8Recipe::rowwise, false, 132, h100_name), nullptr);  // eager
  EXPECT_EQ(fp8_linear_grid_for(Fp8Recipe::rowwise, true, 0, h100_name), nullptr);     // CPU profile
  EXPECT_EQ(fp8_linear_grid_for(Fp8Recipe::rowwise_with_gw_hp, true, 132, h100_name), nullptr);  // no grid
  EXPECT_EQ(fp8_linear_grid_for(Fp8Recipe::none, true, 132, h100_name), nullptr);
  // What it changes: a compiled rowwise Llama-3-8B wk / wv Linear (M = 8192 tokens, K = 4096,
  // N = 1024) is slower in fp8 than in bf16 with the table (the figure's 0.52); the roofline's
  // is faster.
  const Op wk = linear(8192, 4096, 1024);
  ComputeContext f8 = h100(Fp8Recipe::rowwise, true), roof = f8, bf16 = h100(Fp8Recipe::none, true);
  f8.fp8_linear = fp8_linear_grid_for(Fp8Recipe::rowwise, true, 132, h100_name);
  EXPECT_GT(step(wk, f8), step(wk, bf16));
  EXPECT_LT(step(wk, roof), step(wk, bf16));
}

// torchao's eager Float8Linear (runtime term fp8_library = "torchao"): the measured compiled
// Linear plus the cast traffic compile would fuse, the two rooflines' difference exactly (1e-12
// relative: one addition), so eager is never faster than compiled. A TransformerEngine runtime
// gets no grid eager and keeps the roofline (plan.cpp).
TEST(Fp8LinearTable, EagerTorchaoIsTheCompiledLinearPlusItsUnfusedCasts) {
  for (Fp8Recipe r : {Fp8Recipe::tensorwise, Fp8Recipe::rowwise}) {
    const Fp8LinearGrid* g = fp8_linear_grid_for(r, /*compile=*/true, 132, "H100-80GB-SXM");
    ASSERT_NE(g, nullptr);
    for (double M : {8192.0, 65536.0})
      for (double K : {4096.0, 8192.0})
        for (double N : {1024.0, 14336.0}) {
          const Op op = linear(M, K, N);
          ComputeContext compiled = h100(r, true), eager = h100(r, false);
          compiled.fp8_linear = eager.fp8_linear = g;
          ComputeContext roof_c = h100(r, true), roof_e = h100(r, false);
          const double unfused = step(op, roof_e) - step(op, roof_c);
          EXPECT_GT(unfused, 0);
          EXPECT_NEAR(step(op, eager), step(op, compiled) + unfused, 1e-12 * step(op, eager)) << M << " " << K << " " << N;
        }
  }
  // What plan() does with it: torchtitan's float8 Llama-3-8B on 8 H100 is faster compiled.
  for (const char* recipe : {"tensorwise", "rowwise"}) {
    TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
    c.runtime = "torchtitan-2025-10";  // runs tensorwise (removed from torchtitan in 2026-04, #3127)
    c.precision.fp8 = *parse_fp8_recipe(recipe);
    const HardwareSpec hw = load_hardware("H100-80GB-SXM");
    const double eager = plan(c, hw, resolve_plan_options(c, hw)).tokens_per_s_per_gpu;
    c.precision.compile = true;
    const double compiled = plan(c, hw, resolve_plan_options(c, hw)).tokens_per_s_per_gpu;
    EXPECT_LT(eager, compiled) << recipe;
  }
}

}  // namespace
}  // namespace shardcast::planner
