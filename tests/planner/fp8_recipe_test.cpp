// The cost of each float8 recipe (planner/model/fp8_recipe.h): which GEMMs run in fp8, the planner's
// op times against the closed form, and the shape of the speed-up over bf16 that torchao's
// microbenchmarks show (below 1 for small GEMMs, rising towards the fp8/bf16 rate ratio).
#include <gtest/gtest.h>

#include <cmath>

#include "planner/model/fp8_recipe.h"
#include "planner/model/ops.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

// H100-like numbers (datasheet peaks, HBM 3.35 TB/s) with round efficiencies.
ComputeContext h100(Fp8Recipe r, bool compile) {
  ComputeContext c;
  c.peak_flops = 989e12;
  c.fp8_peak_flops = 1979e12;
  c.hbm_bandwidth = 3.35e12;
  c.act_bytes = 2;
  c.compile = compile;
  c.fp8 = r;
  c.eff.matmul_eff = 0.75;
  c.eff.fp8_matmul_eff = 0.6;
  c.eff.matmul_dim_half = 128;
  c.eff.hbm_eff = 0.9;
  return c;
}

using test::linear;
using test::step;

TEST(Fp8Recipe, WhichGemmsRunInFp8) {
  for (LinearGemm g : {LinearGemm::forward, LinearGemm::grad_input, LinearGemm::grad_weight}) {
    EXPECT_FALSE(fp8_gemm_run(Fp8Recipe::none, g, 2, true).fp8);
    EXPECT_TRUE(fp8_gemm_run(Fp8Recipe::tensorwise, g, 2, true).fp8);
    EXPECT_TRUE(fp8_gemm_run(Fp8Recipe::rowwise, g, 2, true).fp8);
  }
  EXPECT_TRUE(fp8_gemm_run(Fp8Recipe::rowwise_with_gw_hp, LinearGemm::forward, 2, true).fp8);
  EXPECT_TRUE(fp8_gemm_run(Fp8Recipe::rowwise_with_gw_hp, LinearGemm::grad_input, 2, true).fp8);
  EXPECT_FALSE(fp8_gemm_run(Fp8Recipe::rowwise_with_gw_hp, LinearGemm::grad_weight, 2, true).fp8);
  // The CUTLASS row-wise kernel runs the forward only; backward GEMMs are cuBLAS tensor-wise.
  EXPECT_EQ(fp8_gemm_run(Fp8Recipe::rowwise, LinearGemm::forward, 2, true).rate, kRowwiseGemmRate);
  EXPECT_EQ(fp8_gemm_run(Fp8Recipe::rowwise, LinearGemm::grad_input, 2, true).rate, 1.0);
  EXPECT_GT(fp8_gemm_run(Fp8Recipe::rowwise, LinearGemm::grad_weight, 2, true).rescale_bytes_per_output, 0);
}

// The planner's op times (ops.cpp) against the closed form written out here. Tolerance: 1e-12
// relative, the two sum the same terms in a different order.
TEST(Fp8Recipe, OpTimesMatchTheClosedForm) {
  const double M = 16384, K = 4096, N = 14336;
  const Op op = linear(M, K, N);
  for (bool compile : {false, true}) {
    const ComputeContext c = h100(Fp8Recipe::rowwise_with_gw_hp, compile);
    const double hbm = c.hbm_bandwidth * c.eff.hbm_eff, A = 2, rd = compile ? 0 : A;
    auto k = [&](double bytes) { return std::max(bytes / hbm, kFp8CastKernelFloorS); };
    const double fwd = gemm_time(M, N, K, true, c) / kRowwiseGemmRate + k((rd + 1) * M * K) + k((A + 1) * K * N);
    const double bwd = gemm_time(M, K, N, true, c) + (compile ? 0.0 : k(2 * A * M * K))  // grad_input + rescale
                       + gemm_time(K, N, M, false, c)                                    // grad_weight in bf16
                       + k(0) + k((A + 1) * K * N) + k((rd + 1) * M * N);
    EXPECT_NEAR(op_forward_time(op, c), fwd, 1e-12 * fwd) << compile;
    EXPECT_NEAR(op_backward_time(op, c), bwd, 1e-12 * bwd) << compile;
  }
}

TEST(Fp8Recipe, RowwiseIsSlowerThanTensorwiseOnLlamaShapes) {
  // Llama-3-8B's Linears at 8192 tokens per micro-batch (wqkv, wo, w1/w3, w2).
  for (const auto& [K, N] : {std::pair{4096.0, 6144.0}, {4096.0, 4096.0}, {4096.0, 14336.0}, {14336.0, 4096.0}})
    for (bool compile : {false, true}) {
      const Op op = linear(8192, K, N);
      const double bf16 = step(op, h100(Fp8Recipe::none, compile));
      const double tw = step(op, h100(Fp8Recipe::tensorwise, compile));
      const double rw = step(op, h100(Fp8Recipe::rowwise, compile));
      EXPECT_LT(tw, rw) << K << "x" << N;
      EXPECT_LT(rw, bf16) << K << "x" << N;
    }
}

TEST(Fp8Recipe, GradWeightInBf16CostsTheRateDifference) {
  // rowwise_with_gw_hp vs rowwise on the same shape: backward differs by the grad-weight GEMM
  // (bf16 instead of fp8 plus its rescale pass) and by the casts it skips.
  const double M = 8192, K = 4096, N = 14336;
  const ComputeContext rw = h100(Fp8Recipe::rowwise, true), hp = h100(Fp8Recipe::rowwise_with_gw_hp, true);
  const Op op = linear(M, K, N);
  const double hbm = rw.hbm_bandwidth * rw.eff.hbm_eff, A = 2;
  const double gemm_delta = gemm_time(K, N, M, false, rw) - gemm_time(K, N, M, true, rw) - 2 * A * K * N / hbm;
  // rowwise backward casts: x dim1 (A+1)·MK, W transpose 2A·KN and dim1 (A+1)·KN, go (1+A)·MN and
  // (A+1)·MN; gw_hp: a ~0-byte scale kernel, W dim1 (A+1)·KN, go dim0 1·MN.
  const double cast_delta = ((A + 1) * M * K + 2 * A * K * N + (1 + A) * M * N + (A + 1) * M * N - 1.0 * M * N) / hbm -
                            kFp8CastKernelFloorS;
  const double got = op_backward_time(op, hp) - op_backward_time(op, rw);
  EXPECT_NEAR(got, gemm_delta - cast_delta, 1e-12 * op_backward_time(op, rw));
  EXPECT_GT(gemm_delta, 0);  // the bf16 grad-weight GEMM is the slower one at this size
}

TEST(Fp8Recipe, SpeedupApproachesTheRateRatioForLargeGemms) {
  // bf16 / fp8 time of fwd + bwd: cast bytes grow as n², GEMM time as n³, so the speed-up rises
  // with n and tends to (fp8 peak · fp8_matmul_eff) / (bf16 peak · matmul_eff).
  for (Fp8Recipe r : {Fp8Recipe::tensorwise, Fp8Recipe::rowwise}) {
    const ComputeContext c = h100(r, true), b = h100(Fp8Recipe::none, true);
    const double ceiling = c.fp8_peak_flops * c.eff.fp8_matmul_eff / (c.peak_flops * c.eff.matmul_eff);
    double last = 0;
    for (double n : {256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0}) {
      const Op op = linear(n, n, n);
      const double speedup = step(op, b) / step(op, c);
      EXPECT_GT(speedup, last) << to_string(r) << " n=" << n;
      last = speedup;
    }
    // At n = 2^18 the casts are ~30 bytes per n² elements against 6n³ FLOPs: under 1 % of the
    // fp8 time; rowwise's forward GEMM runs at kRowwiseGemmRate, so its limit is lower.
    const double limit = r == Fp8Recipe::tensorwise ? ceiling : ceiling * 3.0 / (2.0 + 1.0 / kRowwiseGemmRate);
    EXPECT_NEAR(last / limit, 1.0, 0.01) << to_string(r);
  }
}

TEST(Fp8Recipe, SmallGemmsAreSlowerInFp8) {
  // torchao's per-shape tables (docs/cost-model.md): below about 1k x 1k x 1k the casts'
  // kernels outweigh the faster GEMM and fp8 is slower than bf16, for every recipe.
  const Op op = linear(512, 512, 512);
  const double bf16 = step(op, h100(Fp8Recipe::none, true));
  for (Fp8Recipe r : {Fp8Recipe::tensorwise, Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp})
    EXPECT_GT(step(op, h100(r, true)), bf16) << to_string(r);
}

TEST(Fp8Recipe, FloatAllGatherDropsTheWeightCastsOfTensorwise) {
  const Fp8CastKernels cast = fp8_cast_kernels(Fp8Recipe::tensorwise, 8192, 4096, 4096, 2, true, false);
  const Fp8CastKernels pre = fp8_cast_kernels(Fp8Recipe::tensorwise, 8192, 4096, 4096, 2, true, true);
  double a = 0, b = 0;
  for (double x : cast.fwd) a += x;
  for (double x : cast.bwd) a += x;
  for (double x : pre.fwd) b += x;
  for (double x : pre.bwd) b += x;
  EXPECT_DOUBLE_EQ(a - b, (2 + 3 + 3) * 4096.0 * 4096);  // amax 2 B, cast dim0 3 B, cast dim1 3 B
}

}  // namespace
}  // namespace shardcast::planner
