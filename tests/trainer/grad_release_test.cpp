// Gradient shards released between steps (FsdpModel::zero_grad, torch's set_to_none=True):
// the train loop holds no gradient shard between steps, every unit's shard exists again after
// the next step's backward, and the run is bit for bit the run whose gradient shards stay
// alive and zeroed in place (the behaviour before the release: grads_freed_between_steps =
// false), over several steps with one and two micro-steps, sync_every_micro_step both ways,
// reductions synchronous (0 in flight) and overlapped (2), full_shard and no_shard on 2 ranks.
// The kept-alive run is driven by hand: zero_grad, then full_gradients(), which allocates the
// released shards as zeros (FsdpModel::zero_stale_grads), so its reductions add into live
// zeroed buffers (grad += s·x) where the released run writes fresh ones (grad = s·x): 0 + y = y
// exactly in IEEE arithmetic, so every loss, norm and parameter must be equal, not close.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "harness.h"
#include "trainer/train/optim.h"

namespace shardcast::trainer::testing {
namespace {

struct Case {
  ShardingStrategy strategy;
  int grad_accum;
  bool sync_every_micro_step;
  int inflight;  // FsdpOptions::max_inflight_reductions
};

struct Trace {
  std::vector<double> losses, norms;                       // per step: local mean loss, global norm
  std::vector<std::pair<std::string, at::Tensor>> params;  // full parameters at the end
  int released_between_steps = 0;                          // steps after which no unit held a shard
  int alive_after_backward = 0;                            // steps whose backward allocated every shard
};

bool all_released(const FsdpModel& m) {
  for (const auto& u : m.units())
    if (u.grad.defined()) return false;
  return true;
}
bool all_alive(const FsdpModel& m) {
  for (const auto& u : m.units())
    if (!u.grad.defined() || u.grad.numel() != u.shard_numel) return false;
  return true;
}

// released: TrainLoop::step as shardcast-train runs it. Otherwise the same step by hand with
// the gradient shards allocated (zeros) before the first micro-step.
Trace run(const TrainConfig& cfg, const FsdpOptions& opts, int steps, bool released) {
  TokenFile data(synthetic_token_file());
  Trace out;
  run_config_ranks(cfg, [&](int rank, ProcessGroups g) {
    const DataSlice slice{g.dp_rank(), 1, g.dp_size(), g.tp_size()};
    auto engine = make_fsdp_engine(cfg, std::move(g), opts);
    FsdpModel& m = *fsdp_model_of(*engine);
    TrainLoop loop(cfg, *engine, data, slice, 0);
    Trace mine;
    const auto& tr = cfg.training;
    const int b = tr.micro_batch, T = tr.seq_len, k = tr.grad_accum;
    for (int s = 1; s <= steps; ++s) {
      if (released) {
        TrainLoop::Hooks h;
        h.after_backward = [&](int) {
          m.wait_for_reductions();
          mine.alive_after_backward += all_alive(m) ? 1 : 0;
        };
        const StepMetrics sm = loop.step(s, h);
        mine.losses.push_back(sm.loss);
        mine.norms.push_back(sm.grad_norm);
        mine.released_between_steps += all_released(m) ? 1 : 0;
        continue;
      }
      engine->zero_grad();
      engine->full_gradients();  // allocates every shard as zeros: kept alive into the step
      if (!all_alive(m)) ADD_FAILURE() << "the kept-alive oracle holds no gradient shards";
      double loss_sum = 0;
      at::Tensor batch = at::empty({b, T + 1}, at::kLong);
      for (int mi = 0; mi < k; ++mi) {  // the batch TrainLoop::step reads
        read_sequences(data, tr.seed, s, int64_t(mi * slice.world + slice.first_rank) * b, b, T,
                       batch.data_ptr<int64_t>());
        at::Tensor loss = engine->forward_loss(batch.narrow(1, 0, T), batch.narrow(1, 1, T), mi == k - 1);
        (loss / double(k)).backward();
        loss_sum += loss.item<double>();
      }
      const double norm = engine->clip_grad_norm(tr.max_grad_norm);
      engine->optimizer_step(cfg.optimizer, lr_at(s, tr.steps, cfg.optimizer, cfg.lr_schedule));
      std::vector<double> sums{loss_sum / k};
      engine->reduce_sum(sums);
      mine.losses.push_back(sums[0] / engine->world_size());
      mine.norms.push_back(norm);
    }
    mine.params = engine->full_parameters();
    if (rank == 0) out = std::move(mine);
  });
  return out;
}

TEST(GradRelease, ShardsReleasedBetweenStepsAndTheRunIsBitIdentical) {
  constexpr int kSteps = 4;
  for (const Case c : {Case{ShardingStrategy::full_shard, 1, true, 0}, Case{ShardingStrategy::full_shard, 1, true, 2},
                       Case{ShardingStrategy::full_shard, 2, true, 2}, Case{ShardingStrategy::full_shard, 2, false, 0},
                       Case{ShardingStrategy::full_shard, 2, false, 2}, Case{ShardingStrategy::no_shard, 2, false, 2}}) {
    TrainConfig cfg = tiny_config(c.strategy, 2);
    cfg.training.grad_accum = c.grad_accum;
    cfg.training.steps = kSteps;
    cfg.parallelism.sync_every_micro_step = c.sync_every_micro_step;
    FsdpOptions opts = fsdp_options(cfg);
    opts.max_inflight_reductions = c.inflight;
    const std::string what = fmt::format("{} grad_accum {} sync_every_micro_step {} in flight {}", to_string(c.strategy),
                                         c.grad_accum, c.sync_every_micro_step, c.inflight);
    const Trace rel = run(cfg, opts, kSteps, true);
    const Trace kept = run(cfg, opts, kSteps, false);
    EXPECT_EQ(rel.released_between_steps, kSteps) << what;
    EXPECT_EQ(rel.alive_after_backward, kSteps) << what;
    ASSERT_EQ(rel.losses.size(), size_t(kSteps)) << what;
    ASSERT_EQ(kept.losses.size(), size_t(kSteps)) << what;
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_EQ(rel.losses[s], kept.losses[s]) << what << ", step " << s + 1;
      EXPECT_EQ(rel.norms[s], kept.norms[s]) << what << ", step " << s + 1;
    }
    EXPECT_GT(rel.norms[0], 0.0) << what << ": the steps have a gradient";
    ASSERT_EQ(rel.params.size(), kept.params.size()) << what;
    for (size_t i = 0; i < rel.params.size(); ++i)
      EXPECT_TRUE(at::equal(rel.params[i].second, kept.params[i].second)) << what << ": " << rel.params[i].first;
  }
}

}  // namespace
}  // namespace shardcast::trainer::testing
