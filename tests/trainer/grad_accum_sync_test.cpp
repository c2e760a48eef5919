// Gradient accumulation both ways (parallelism.sync_every_micro_step): true reduce-scatters
// every micro-step into the fp32 gradient shard, false keeps an unsharded fp32 sum per unit
// until the final micro-step (trainer/fsdp/fsdp.h). Both against the single-process reference
// with the same accumulation, on every strategy; the collectives each way issues; and the
// bytes each keeps between micro-steps, counted by the allocator every CPU tensor goes
// through (train/memory.h), against the planner's components.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "harness.h"
#include "planner/plan.h"
#include "planner/runtime.h"
#include "trainer/train/memory.h"

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

// Per rank: bytes alive after a non-final micro-step beyond those before it (accumulator
// included, reductions waited), the model's own count of them, and after the final one.
struct Kept {
  int64_t after_non_final = -1;  // summed over ranks (threads share the counter)  // bytes
  int64_t accumulator = -1;      // rank 0's FsdpModel::accumulator_bytes()  // bytes
  int64_t after_final = -1;      // summed over ranks  // bytes
  int64_t padded_unit_bytes = 0; // Σ units padded_numel·4, rank 0  // bytes
};

// live_bytes() once it has stopped changing. A Gloo worker thread drops its reference to a
// completed collective (and so to the tensors it holds) just after wait() returns, when it
// takes its queue lock again (ProcessGroupGloo::runLoop, workInProgress_): the count settles
// within microseconds; three equal reads 10 ms apart are taken as settled (at most 2 s).
int64_t settled_live_bytes() {
  int64_t last = memory::live_bytes();
  int same = 0;
  for (int i = 0; i < 200 && same < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int64_t now = memory::live_bytes();
    same = now == last ? same + 1 : 0;
    last = now;
  }
  return last;
}

Kept kept_between_micro_steps(const TrainConfig& cfg) {
  memory::install_counting_allocator();
  TokenFile data(synthetic_token_file());
  Kept k;
  const int world = cfg.world_size();
  run_ranks(world, shard_size_of(cfg), [&](int rank, ProcessGroups g) {
    auto world_group = g.world;
    auto engine = make_fsdp_engine(cfg, std::move(g));
    FsdpModel& m = *fsdp_model_of(*engine);
    const int T = cfg.training.seq_len, b = cfg.training.micro_batch;
    at::Tensor batch = at::empty({b, T + 1}, at::kLong);
    read_sequences(data, 1, 1, rank * b, b, T, batch.data_ptr<int64_t>());
    const at::Tensor tokens = batch.narrow(1, 0, T), targets = batch.narrow(1, 1, T);
    auto micro_step = [&](bool last) {
      engine->forward_loss(tokens, targets, last).backward();
      m.wait_for_reductions();
    };
    micro_step(true);  // warm-up: caches (RoPE tables) exist from here on
    engine->zero_grad();
    int64_t base = 0;
    world_group->barrier();
    if (rank == 0) base = settled_live_bytes();
    world_group->barrier();
    micro_step(false);
    world_group->barrier();  // every rank's micro-step done: what is live now is kept state
    if (rank == 0) {
      k.after_non_final = settled_live_bytes() - base;
      k.accumulator = m.accumulator_bytes();
      for (const auto& u : m.units()) k.padded_unit_bytes += u.padded_numel * 4;
    }
    world_group->barrier();
    micro_step(true);
    world_group->barrier();
    if (rank == 0) k.after_final = settled_live_bytes() - base;
    world_group->barrier();
  });
  return k;
}

// Exact counts need no collective in flight: a Gloo worker thread may still reference the
// buffers of the last collective or two it ran (ProcessGroupGloo::runLoop drops its reference
// after marking the work done; 2 worker threads per group), and a rank's reduction of one
// micro-step keeps autograd's unsharded gradient and, under full_shard, the all-to-all's
// receive buffer of the same size (trainer/comm/collectives.cpp). So: one rank (reductions
// over a group of one are the identity, no Gloo work) is counted exactly; two ranks within
// 2 threads × 2 buffers × the largest unit's padded fp32 bytes per rank, under half of the
// unsharded sum on this 16-block model, so 0 and the whole model's sum stay apart.
TEST(GradAccumSyncMemory, UnshardedAccumulatorOnlyWithoutSyncAndAsPlanned) {
  for (const Case c : {Case{ShardingStrategy::full_shard, 1}, Case{ShardingStrategy::full_shard, 2},
                       Case{ShardingStrategy::no_shard, 2}}) {
    const std::string what = fmt::format("{} {} ranks", to_string(c.strategy), c.world);
    TrainConfig on = config(c, true), off = config(c, false);
    on.model.n_layers = off.model.n_layers = 16;  // many units: one unit's buffers << the model
    const Kept k_on = kept_between_micro_steps(on), k_off = kept_between_micro_steps(off);
    int64_t largest = 0;  // padded fp32 bytes of the largest unit
    for (int64_t p : on.model.fsdp_unit_params()) largest = std::max(largest, (p + c.world) * 4);
    const int64_t slack = c.world == 1 ? 0 : c.world * 2 * 2 * largest;
    // The model's own count is exact: every unit's unsharded fp32 sum (padded) without sync,
    // none with sync.
    EXPECT_EQ(k_off.accumulator, k_off.padded_unit_bytes) << what;
    EXPECT_EQ(k_on.accumulator, 0) << what;
    // The allocator's: the sum on every rank without sync, nothing beyond the gradient
    // shards (which exist before the step) with sync, nothing left after the final micro-step.
    EXPECT_NEAR(double(k_off.after_non_final), double(c.world * k_off.padded_unit_bytes), double(slack)) << what;
    EXPECT_NEAR(double(k_on.after_non_final), 0.0, double(slack)) << what;
    EXPECT_NEAR(double(k_on.after_final), 0.0, double(slack)) << what;
    EXPECT_NEAR(double(k_off.after_final), 0.0, double(slack)) << what;
    ASSERT_LT(2 * slack, c.world * k_off.padded_unit_bytes) << what << ": the bound would not tell them apart";

    // The planner's components for the same configs (shardcast-train on the CPU profile, fp32):
    // unsharded_gradients at the peak is the whole model's gradient without sync (4·N bytes; the
    // trainer's padding adds < world elements per unit), and at most two units' with sync.
    const HardwareSpec hw = load_hardware(on.cluster.hardware);
    const Prediction p_on = planner::plan(on, hw, planner::resolve_plan_options(on, hw));
    const Prediction p_off = planner::plan(off, hw, planner::resolve_plan_options(off, hw));
    auto component = [](const Prediction& p, const std::string& name) {
      for (const auto& mc : p.memory)
        if (mc.name == name) return mc.bytes;
      ADD_FAILURE() << "no component " << name;
      return 0.0;
    };
    const double n_bytes = 4.0 * double(on.model.total_params());
    const int units = on.model.n_fsdp_units();
    EXPECT_DOUBLE_EQ(component(p_off, "unsharded_gradients"), n_bytes) << what;
    EXPECT_GE(double(k_off.accumulator), n_bytes) << what;
    EXPECT_LE(double(k_off.accumulator) - n_bytes, double(units * (c.world - 1) * 4)) << what;
    if (c.strategy != ShardingStrategy::no_shard)  // no_shard: the gradient is unsharded by definition
      EXPECT_LE(component(p_on, "unsharded_gradients"), 2.0 * double(largest)) << what;
    std::printf("[grad_accum] %s: allocator-counted bytes kept between micro-steps, per rank: %lld (true) vs "
                "%lld (false), after the final one %lld vs %lld; FsdpModel::accumulator_bytes %lld vs %lld; "
                "planner unsharded_gradients %.0f vs %.0f\n",
                what.c_str(), (long long)(k_on.after_non_final / c.world),
                (long long)(k_off.after_non_final / c.world), (long long)(k_on.after_final / c.world),
                (long long)(k_off.after_final / c.world), (long long)k_on.accumulator,
                (long long)k_off.accumulator, component(p_on, "unsharded_gradients"),
                component(p_off, "unsharded_gradients"));
  }
}

}  // namespace
}  // namespace shardcast::trainer::testing
