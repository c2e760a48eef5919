// Gradient accumulation both ways (parallelism.sync_every_micro_step): true reduce-scatters
// every micro-step into the fp32 gradient shard, false keeps an unsharded fp32 sum per unit
// until the final micro-step (trainer/fsdp/fsdp.h). Both against the single-process reference
// with the same accumulation, on every strategy, with fp32 and fp16 reductions, overlapped or
// not. The bytes each keeps: grad_accum_memory_test.cpp; the collectives: fsdp_state_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "harness.h"

namespace shardcast::trainer::testing {
namespace {

constexpr int kSteps = 4;
constexpr int kGradAccum = 2;

// Tolerance (fp32), as in fsdp_parity_test.cpp: both ways and the reference compute the same
// per-unit math and differ only in summation order. The reference sums the k micro-steps'
// gradients in autograd's order (loss/k backward, accumulated into .grad); true sums k
// already-reduced shards (each a sum over ranks), false sums the k micro-steps on each rank
// and then reduces over ranks. Each is a re-association of the same ≤ 4·2 terms on top of
// the ~1e-6 relative error the per-rank matmul sums carry (sqrt(n)·2^-24, n ≤ 128·192), so
// 1e-5 holds with room for thread-count variation, while a real fault (a micro-step's
// gradient dropped or counted twice, a wrong 1/k or 1/world scale, a stale accumulator) moves
// gradients by ≥ 1/(2k) = 25 %.
constexpr double kTol = 1e-5;

struct Case {
  ShardingStrategy strategy;
  int world;
};

TrainConfig config(const Case& c, bool sync) {
  TrainConfig cfg = tiny_config(c.strategy, c.world);
  cfg.training.grad_accum = kGradAccum;
  cfg.parallelism.sync_every_micro_step = sync;
  return cfg;
}

class GradAccumSync : public ::testing::TestWithParam<Case> {};

TEST_P(GradAccumSync, BothWaysMatchTheReferenceWithTheSameAccumulation) {
  const Case c = GetParam();
  const RunResult ref = train_reference(config(c, true), kSteps);  // the reference ignores the key
  for (bool sync : {false, true}) {
    const RunResult r = train_fsdp(config(c, sync), kSteps);
    std::string worst;
    const double gerr = max_rel_error(r.grads1, ref.grads1, &worst);
    const double perr = max_rel_error(r.params, ref.params);
    double lerr = 0;
    for (size_t i = 0; i < ref.losses.size(); ++i)
      lerr = std::max(lerr, std::abs(r.losses[i] - ref.losses[i]) / std::abs(ref.losses[i]));
    EXPECT_LE(gerr, kTol) << "sync_every_micro_step " << sync << ", worst " << worst;
    EXPECT_LE(perr, kTol) << "sync_every_micro_step " << sync;
    EXPECT_LE(lerr, kTol) << "sync_every_micro_step " << sync;
    std::printf("[grad_accum] %s %d ranks, grad_accum %d, sync_every_micro_step %s: step-1 grad max rel err "
                "%.2e (%s), params after %d steps %.2e, loss %.2e\n",
                to_string(c.strategy), c.world, kGradAccum, sync ? "true" : "false", gerr, worst.c_str(), kSteps,
                perr, lerr);
  }
  // The tolerance can tell: the first micro-batch's gradient alone (grad_accum 1) is far from
  // the mean over two.
  TrainConfig one = config(c, true);
  one.training.grad_accum = 1;
  EXPECT_GT(max_rel_error(train_reference(one, 1).grads1, ref.grads1), 100 * kTol);
}

std::vector<Case> cases() {
  return {{ShardingStrategy::full_shard, 2},
          {ShardingStrategy::shard_grad_op, 2},
          {ShardingStrategy::hybrid_shard, 4},  // 2 shard groups of 2
          {ShardingStrategy::no_shard, 2}};
}

INSTANTIATE_TEST_SUITE_P(Trainer, GradAccumSync, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return fmt::format("{}_{}ranks", to_string(i.param.strategy), i.param.world);
                         });

// Low-precision reduction on every micro-step: each micro-step's gradient is pre-divided,
// reduced in fp16 and post-divided, then added into the fp32 shard. Tolerance as in
// fsdp_parity_test.cpp ReducePrecision (≤ 4 fp16 roundings per element, ~2e-3 norm-wise);
// the k = 2 micro-steps are each rounded and then summed in fp32, which adds no rounding of
// its own beyond fp32's. The lower bound proves fp16 ran.
TEST(GradAccumSyncPrecision, Fp16ReductionEveryMicroStep) {
  for (bool sync : {false, true}) {
    TrainConfig cfg = config({ShardingStrategy::full_shard, 4}, sync);
    const RunResult ref = train_reference(config({ShardingStrategy::full_shard, 4}, sync), 1);
    cfg.precision.reduce_dtype = "fp16";
    const RunResult got = train_fsdp(cfg, 1);
    const double gerr = max_rel_error(got.grads1, ref.grads1);
    EXPECT_LE(gerr, 2e-3) << "sync_every_micro_step " << sync;
    EXPECT_GT(gerr, 1e-6) << "sync_every_micro_step " << sync << ": no trace of fp16 rounding";
    std::printf("[grad_accum] fp16 reduction, 4 ranks, sync_every_micro_step %s: grad max rel err %.2e\n",
                sync ? "true" : "false", gerr);
  }
}

// The CPU overlap path (reductions in flight across the micro-step boundary) and the
// synchronous one give bitwise the same result: same operations on the same tensors.
TEST(GradAccumSyncPrecision, OverlappedReductionsEqualSynchronousOnes) {
  const TrainConfig cfg = config({ShardingStrategy::hybrid_shard, 4}, true);
  FsdpOptions sync_path = fsdp_options(cfg), overlap = fsdp_options(cfg);
  sync_path.max_inflight_reductions = 0;
  overlap.max_inflight_reductions = 3;
  const RunResult a = train_fsdp(cfg, 2, at::kCPU, sync_path), b = train_fsdp(cfg, 2, at::kCPU, overlap);
  EXPECT_EQ(max_rel_error(a.grads1, b.grads1), 0.0);
  EXPECT_EQ(max_rel_error(a.params, b.params), 0.0);
}

}  // namespace
}  // namespace shardcast::trainer::testing
