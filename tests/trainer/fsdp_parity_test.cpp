// FSDP against the plain single-process reference (same global batch, same init): losses
// over 20 steps and gradients after step 1, for 2 and 4 ranks × every strategy × activation
// checkpointing none/full (hybrid_shard as 2×2), plus selective checkpointing once.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "harness.h"

namespace shardcast::trainer::testing {
namespace {

constexpr int kSteps = 20;

// Tolerances (fp32). The two paths run the same per-unit math and differ only in
// floating-point summation order: the reference multiplies the whole global batch at once,
// FSDP ranks multiply their slice and the all-reduce completes the gradient sums in another
// order. A sum of n fp32 terms carries a relative error of order sqrt(n)·2^-24; the longest
// sums here (128 batch·sequence rows × inner dims ≤ 192) give ~1e-6, and the measured errors
// are ~2e-7 (printed below). 1e-5 leaves room for BLAS/thread-count variation while any real
// bug (a wrong shard offset, scale, missing reduction or stale gathered buffer) moves
// gradients by >1e-3 and the loss by >1e-3 within a few steps. The loss bound covers all 20
// AdamW steps, which feed rounding back through the updates; measured ~2e-7 as well.
constexpr double kGradRelTol = 1e-5;
constexpr double kLossRelTol = 1e-5;

struct Case {
  ShardingStrategy strategy;
  int world;
  AcMode ac;
};

std::string name_of(const Case& c) {
  return fmt::format("{}_{}ranks_ac_{}", to_string(c.strategy), c.world, to_string(c.ac));
}

class Parity : public ::testing::TestWithParam<Case> {};

const RunResult& reference_for(int world) {
  static std::map<int, RunResult> cache;
  auto it = cache.find(world);
  if (it == cache.end())
    it = cache.emplace(world, train_reference(tiny_config(ShardingStrategy::no_shard, world), kSteps)).first;
  return it->second;
}

TEST_P(Parity, LossesAndStep1GradientsMatchReference) {
  const Case c = GetParam();
  const TrainConfig cfg = tiny_config(c.strategy, c.world, c.ac);
  const RunResult& ref = reference_for(c.world);
  const RunResult got = train_fsdp(cfg, kSteps);

  std::string worst;
  const double gerr = max_rel_error(got.grads1, ref.grads1, &worst);
  EXPECT_LE(gerr, kGradRelTol) << "worst tensor " << worst;
  ASSERT_EQ(got.losses.size(), ref.losses.size());
  double lerr = 0;
  for (size_t i = 0; i < ref.losses.size(); ++i)
    lerr = std::max(lerr, std::abs(got.losses[i] - ref.losses[i]) / std::abs(ref.losses[i]));
  EXPECT_LE(lerr, kLossRelTol);
  // The run must actually train, or equal losses would prove little.
  EXPECT_LT(ref.losses.back(), ref.losses.front() - 0.5);
  std::printf("[parity] %s: step-1 grad max rel err %.2e (%s), loss max rel err %.2e, loss %.4f -> %.4f\n",
              name_of(c).c_str(), gerr, worst.c_str(), lerr, got.losses.front(), got.losses.back());
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (AcMode ac : {AcMode::none, AcMode::full}) {
    for (int w : {2, 4})
      for (auto s : {ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op, ShardingStrategy::no_shard})
        v.push_back({s, w, ac});
    v.push_back({ShardingStrategy::hybrid_shard, 4, ac});
  }
  v.push_back({ShardingStrategy::full_shard, 2, AcMode::selective});
  return v;
}

// Low-precision reduction (fsdp.h): the unsharded gradient is cast to reduce_dtype, divided
// by a power of two before the sum and by the rest of the world size after it. fp16 runs
// on Gloo (bf16 does not: Gloo 1.13 cannot reduce it), so this is the CPU check of that path.
// Tolerance: each element is rounded to fp16 once (relative 2^-11 ≈ 4.9e-4), summed over 4
// ranks in fp16 (3 more roundings), and the divisions by 2 are exact, so the norm-wise error
// is at most ~4·2^-11 ≈ 2e-3. The lower bound proves the fp16 path ran: fp32 reductions
// match the reference to ~2e-7 (Parity above).
TEST(ReducePrecision, Fp16ReductionPreAndPostDivides) {
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 4);
  cfg.precision.reduce_dtype = "fp16";
  const RunResult& ref = reference_for(4);
  const RunResult got = train_fsdp(cfg, 2);
  std::string worst;
  const double gerr = max_rel_error(got.grads1, ref.grads1, &worst);
  EXPECT_LE(gerr, 2e-3) << "worst tensor " << worst;
  EXPECT_GT(gerr, 1e-6) << "fp16 reduction left no trace of fp16 rounding: was it reduced in fp32?";
  std::printf("[parity] fp16 reduction, 4 ranks: step-1 grad max rel err %.2e (%s)\n", gerr, worst.c_str());
}

INSTANTIATE_TEST_SUITE_P(Trainer, Parity, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

}  // namespace
}  // namespace shardcast::trainer::testing
