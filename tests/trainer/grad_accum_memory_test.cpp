// Gradient accumulation's memory both ways (parallelism.sync_every_micro_step): the bytes a
// rank keeps between micro-steps, counted by the allocator every CPU tensor goes through
// (train/memory.h), against FsdpModel::accumulator_bytes and the planner's
// unsharded_gradients component. Its own executable: the counting allocator, once
// installed, stays for the process and has no raw deleter, which some LibTorch 1.13 kernels
// (gelu) need; the other trainer tests run without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "harness.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "trainer/train/memory.h"

namespace shardcast::trainer::testing {
namespace {

struct Case {
  ShardingStrategy strategy;
  int world;
};

TrainConfig config(const Case& c, bool sync) {
  TrainConfig cfg = tiny_config(c.strategy, c.world);
  cfg.training.grad_accum = 2;
  cfg.parallelism.sync_every_micro_step = sync;
  return cfg;
}

// Per rank: bytes alive after a non-final micro-step beyond those before it (accumulator
// included, reductions waited), the model's own count of them, and after the final one.
struct Kept {
  int64_t after_non_final = -1;  // summed over ranks (threads share the counter)  // bytes
  int64_t accumulator = -1;      // rank 0's FsdpModel::accumulator_bytes()  // bytes
  int64_t after_final = -1;      // summed over ranks  // bytes
  int64_t padded_unit_bytes = 0; // Σ units padded_numel·4, rank 0  // bytes
  int64_t grad_shard_bytes = 0;  // Σ units shard_numel·4, rank 0: its gradient shards  // bytes
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
      for (const auto& u : m.units()) {
        k.padded_unit_bytes += u.padded_numel * 4;
        k.grad_shard_bytes += u.shard_numel * 4;
      }
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
// The gradient shards are released by zero_grad (counted from there) and allocated by the
// first reduction of the step: with sync they are what the first micro-step leaves, without
// sync they appear at the final one's reduction, when the accumulator goes.
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
    // The allocator's: the sum on every rank without sync, the gradient shards with sync;
    // after the final micro-step the gradient shards either way, nothing else.
    const double shards = double(c.world * k_on.grad_shard_bytes);  // summed over ranks
    EXPECT_EQ(k_on.grad_shard_bytes, k_off.grad_shard_bytes) << what;
    EXPECT_NEAR(double(k_off.after_non_final), double(c.world * k_off.padded_unit_bytes), double(slack)) << what;
    EXPECT_NEAR(double(k_on.after_non_final), shards, double(slack)) << what;
    EXPECT_NEAR(double(k_on.after_final), shards, double(slack)) << what;
    EXPECT_NEAR(double(k_off.after_final), shards, double(slack)) << what;
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
    if (c.strategy != ShardingStrategy::no_shard) {  // no_shard: the gradient is unsharded by definition
      EXPECT_LE(component(p_on, "unsharded_gradients"), 2.0 * double(largest)) << what;
    }
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
