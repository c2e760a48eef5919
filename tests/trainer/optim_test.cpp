// The host AdamW and square-sum loops (trainer/train/adamw_kernel.h) against their reference,
// the LibTorch ops of trainer/train/optim.h.
#include <gtest/gtest.h>

#include <cmath>

#include <ATen/ATen.h>

#include "trainer/train/optim.h"

namespace shardcast::trainer {
namespace {

struct State {
  at::Tensor p, m, v;
};

State random_state(int64_t n, uint64_t seed) {
  at::manual_seed(seed);
  return {at::randn({n}) * 0.02, at::randn({n}) * 1e-3, at::rand({n}) * 1e-6};
}

State copy(const State& s) { return {s.p.clone(), s.m.clone(), s.v.clone()}; }

// max |a − b| / max |b|: rounding differences are ulps of the operands, and a sum that
// cancels (exp_avg of gradients of both signs) keeps the operands' absolute error.
double max_rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

// Ten steps of the loop and of the reference from the same state, lr and weight decay as in
// configs/train/*.toml. Each step rounds the same five fp32 operations per element; LibTorch's
// vectorized add may fuse a multiply-add (one rounding fewer), so an element may differ by a
// few ulp per step: 10 steps × 4 ulp × 2⁻²³ ≈ 5e-6 relative, the bound.
TEST(Adamw, HostLoopMatchesLibTorchOps) {
  OptimizerConfig o;
  o.lr = 3e-4;
  o.weight_decay = 0.1;
  for (int64_t n : {1, 7, 8, 9, 4099, 100003}) {
    State fast = random_state(n, 5 + n), ref = copy(fast);
    for (int step = 1; step <= 10; ++step) {
      const at::Tensor g = at::randn({n}) * 1e-2;
      adamw_update(fast.p, g, fast.m, fast.v, step, o, o.lr);
      adamw_update_reference(ref.p, g, ref.m, ref.v, step, o, o.lr);
    }
    SCOPED_TRACE("n = " + std::to_string(n));
    EXPECT_LE(max_rel_diff(fast.p, ref.p), 5e-6);
    EXPECT_LE(max_rel_diff(fast.m, ref.m), 5e-6);
    EXPECT_LE(max_rel_diff(fast.v, ref.v), 5e-6);
    // The update moved the parameters by far more than the bound: the comparison can fail.
    EXPECT_GT(max_rel_diff(fast.p, random_state(n, 5 + n).p), 1e-3);
  }
}

// FSDP updates flat shards, the reference whole parameters: the loop is elementwise, so any
// split of the same elements gives the same bits.
TEST(Adamw, SplitIntoShardsIsBitwiseTheSame) {
  OptimizerConfig o;
  const int64_t n = 1003;
  State whole = random_state(n, 11), parts = copy(whole);
  const at::Tensor g = at::randn({n}) * 1e-2;
  adamw_update(whole.p, g, whole.m, whole.v, 3, o, 1e-3);
  for (auto [off, len] : {std::pair<int64_t, int64_t>{0, 501}, {501, 502}}) {
    at::Tensor p = parts.p.narrow(0, off, len), m = parts.m.narrow(0, off, len), v = parts.v.narrow(0, off, len);
    adamw_update(p, g.narrow(0, off, len), m, v, 3, o, 1e-3);
  }
  EXPECT_TRUE(at::equal(whole.p, parts.p));
  EXPECT_TRUE(at::equal(whole.m, parts.m));
  EXPECT_TRUE(at::equal(whole.v, parts.v));
}

// The fp64 sum of fp32 squares: exact squares, only the order of the fp64 additions differs
// from the reference, so the relative difference is below n·2⁻⁵³ (1.1e-10 for n = 10⁶).
TEST(SquareSum, HostLoopMatchesLibTorchOps) {
  for (int64_t n : {1, 7, 8, 9, 1000003}) {
    at::manual_seed(n);
    const at::Tensor x = at::randn({n}) * 1e-3;
    const double fast = square_sum_fp64(x).item<double>();
    const double ref = square_sum_fp64_reference(x).item<double>();
    EXPECT_LE(std::abs(fast - ref), double(n) * std::ldexp(1.0, -53) * ref) << "n = " << n;
  }
  // Small integers: every partial sum is exact, so both are the exact value.
  const at::Tensor ints = at::arange(1, 1001, at::kFloat);
  EXPECT_EQ(square_sum_fp64(ints).item<double>(), 1000.0 * 1001.0 * 2001.0 / 6.0);
  EXPECT_EQ(square_sum_fp64_reference(ints).item<double>(), 1000.0 * 1001.0 * 2001.0 / 6.0);
}

}  // namespace
}  // namespace shardcast::trainer
