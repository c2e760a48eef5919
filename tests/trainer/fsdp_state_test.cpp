// FSDP state and schedule: per-rank state bytes scale as 1/N under full_shard (within
// padding); shard_grad_op keeps gathered parameters from forward to backward while
// full_shard frees them; gradient accumulation k×b equals one step of k·b, communicates
// nothing on non-final micro-steps with sync_every_micro_step = false and reduces every
// micro-step with true; tied embeddings match the reference.
#include <gtest/gtest.h>

#include <map>

#include "harness.h"

namespace shardcast::trainer::testing {
namespace {

// Counts the collectives issued through a group (decorator over the real one).
class CountingCollectives final : public Collectives {
 public:
  explicit CountingCollectives(std::shared_ptr<Collectives> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  at::Device device() const override { return inner_->device(); }
  PendingWork all_gather(at::Tensor o, at::Tensor i) override {
    ++all_gathers;
    log.push_back("all_gather " + std::to_string(i.numel()));
    return inner_->all_gather(o, i);
  }
  PendingWork reduce_scatter_async(at::Tensor o, at::Tensor i) override {
    ++reductions;
    log.push_back("reduce_scatter " + std::to_string(i.numel()));
    return inner_->reduce_scatter_async(o, i);
  }
  PendingWork all_reduce_async(at::Tensor t, ReduceOp op) override {
    ++reductions;
    log.push_back("all_reduce " + std::to_string(t.numel()));
    return inner_->all_reduce_async(t, op);
  }
  void broadcast(at::Tensor t, int root) override { inner_->broadcast(t, root); }
  void barrier() override { inner_->barrier(); }
  int all_gathers = 0, reductions = 0;
  std::vector<std::string> log;  // op and element count, in issue order

 private:
  std::shared_ptr<Collectives> inner_;
};

TEST(FsdpState, FullShardStateScalesAsOneOverN) {
  const TrainConfig one = tiny_config(ShardingStrategy::full_shard, 1);
  const StateBytes ref = make_reference_engine(one)->state_bytes();
  for (int world : {2, 4}) {
    const TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, world);
    std::vector<StateBytes> per_rank(world);
    run_ranks(world, world, [&](int rank, ProcessGroups g) {
      FsdpModel m(cfg.model, fsdp_options(cfg), std::move(g));
      per_rank[rank] = m.state_bytes();
      // Padding is below one element per rank per unit.
      for (const auto& u : m.units()) EXPECT_LT(u.padded_numel - u.numel, world);
    });
    const int64_t units = cfg.model.n_fsdp_units();
    for (int r = 0; r < world; ++r) {
      // params + grads + 2 AdamW moments, fp32: N·(per-rank bytes) = full bytes + padding.
      const int64_t scaled = per_rank[r].total() * world;
      EXPECT_GE(scaled, ref.total());
      EXPECT_LE(scaled - ref.total(), units * (world - 1) * 4 * 4) << "world " << world;
      EXPECT_EQ(per_rank[r].params * world - ref.params, per_rank[r].grads * world - ref.grads);
    }
    std::printf("[memory] full_shard %d ranks: %lld state bytes/rank vs %lld unsharded (ratio %.4f)\n",
                world, (long long)per_rank[0].total(), (long long)ref.total(),
                double(per_rank[0].total()) / double(ref.total()));
  }
}

// Gathered (unsharded) parameter bytes alive between forward and backward, and after backward.
std::pair<int64_t, int64_t> gathered_around_backward(ShardingStrategy s, int world, AcMode ac) {
  const TrainConfig cfg = tiny_config(s, world, ac);
  TokenFile data(synthetic_token_file());
  std::pair<int64_t, int64_t> out;
  run_ranks(world, shard_size_of(cfg), [&](int rank, ProcessGroups g) {
    auto engine = make_fsdp_engine(cfg, std::move(g));
    at::Tensor batch = at::empty({cfg.training.micro_batch, cfg.training.seq_len + 1}, at::kLong);
    read_sequences(data, 1, 1, rank * cfg.training.micro_batch, cfg.training.micro_batch, cfg.training.seq_len,
                   batch.data_ptr<int64_t>());
    const int T = cfg.training.seq_len;
    at::Tensor loss = engine->forward_loss(batch.narrow(1, 0, T), batch.narrow(1, 1, T), true);
    const int64_t between = fsdp_model_of(*engine)->gathered_bytes();
    loss.backward();
    const int64_t after = fsdp_model_of(*engine)->gathered_bytes();
    if (rank == 0) out = {between, after};
  });
  return out;
}

TEST(FsdpState, ShardGradOpKeepsGatheredParametersUntilBackward) {
  const TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
  int64_t all_units = 0, last_unit = 0;
  {
    auto infos = unit_param_infos(cfg.model);
    for (size_t i = 0; i < infos.size(); ++i) {
      int64_t n = 0;
      for (const auto& p : infos[i]) n += p.numel;
      const int64_t padded = (n + 1) / 2 * 2 * 4;  // 2 ranks, fp32  // bytes
      all_units += padded;
      if (i + 1 == infos.size()) last_unit = padded;
    }
  }
  for (AcMode ac : {AcMode::none, AcMode::full}) {
    auto [grad_op_between, grad_op_after] = gathered_around_backward(ShardingStrategy::shard_grad_op, 2, ac);
    auto [full_between, full_after] = gathered_around_backward(ShardingStrategy::full_shard, 2, ac);
    // shard_grad_op: every unit stays gathered from forward to its backward.
    EXPECT_EQ(grad_op_between, all_units);
    // full_shard: only the final norm+head unit (needed first in backward) stays gathered.
    EXPECT_EQ(full_between, last_unit);
    // Both reshard after backward.
    EXPECT_EQ(grad_op_after, 0);
    EXPECT_EQ(full_after, 0);
    std::printf("[memory] gathered bytes between forward and backward (ac %s): shard_grad_op %lld, "
                "full_shard %lld\n", to_string(ac), (long long)grad_op_between, (long long)full_between);
  }
}

TEST(FsdpState, NoCommunicationOnNonFinalMicroStepsWithoutSync) {
  TrainConfig cfg = tiny_config(ShardingStrategy::hybrid_shard, 4);
  cfg.parallelism.sync_every_micro_step = false;
  TokenFile data(synthetic_token_file());
  run_ranks(4, 2, [&](int rank, ProcessGroups g) {
    auto shard = std::make_shared<CountingCollectives>(g.shard);
    auto repl = std::make_shared<CountingCollectives>(g.replicate);
    ProcessGroups counted{g.world, shard, repl, g.tp};
    auto engine = make_fsdp_engine(cfg, counted);
    const int T = cfg.training.seq_len, b = cfg.training.micro_batch;
    at::Tensor batch = at::empty({b, T + 1}, at::kLong);
    read_sequences(data, 1, 1, rank * b, b, T, batch.data_ptr<int64_t>());
    engine->forward_loss(batch.narrow(1, 0, T), batch.narrow(1, 1, T), /*sync=*/false).backward();
    EXPECT_EQ(shard->reductions + repl->reductions, 0);
    engine->forward_loss(batch.narrow(1, 0, T), batch.narrow(1, 1, T), /*sync=*/true).backward();
    // hybrid_shard issues a unit's replica all-reduce when its reduce-scatter is waited
    // (FsdpOptions::max_inflight_reductions): count after the optimizer step would wait.
    fsdp_model_of(*engine)->wait_for_reductions();
    const int units = cfg.model.n_fsdp_units();
    EXPECT_EQ(shard->reductions, units);  // one reduce-scatter per unit
    EXPECT_EQ(repl->reductions, units);   // one replica all-reduce per unit
    // full_shard-style resharding: every unit gathered in both forwards, and re-gathered in
    // both backwards except the last unit (kept from forward): 2·(2·units − 1).
    EXPECT_EQ(shard->all_gathers, 2 * (2 * units - 1));
  });
}

// sync_every_micro_step = true (the default): every backward reduces every unit, so a
// non-final micro-step already reduce-scatters (and all-reduces across replicas) each unit.
TEST(FsdpState, EveryMicroStepReducesWithSync) {
  const TrainConfig cfg = tiny_config(ShardingStrategy::hybrid_shard, 4);
  ASSERT_FALSE(cfg.parallelism.sync_every_micro_step.has_value());  // the default
  TokenFile data(synthetic_token_file());
  run_ranks(4, 2, [&](int rank, ProcessGroups g) {
    auto shard = std::make_shared<CountingCollectives>(g.shard);
    auto repl = std::make_shared<CountingCollectives>(g.replicate);
    auto engine = make_fsdp_engine(cfg, ProcessGroups{g.world, shard, repl, g.tp});
    const int T = cfg.training.seq_len, b = cfg.training.micro_batch;
    at::Tensor batch = at::empty({b, T + 1}, at::kLong);
    read_sequences(data, 1, 1, rank * b, b, T, batch.data_ptr<int64_t>());
    const int units = cfg.model.n_fsdp_units();
    engine->forward_loss(batch.narrow(1, 0, T), batch.narrow(1, 1, T), /*sync=*/false).backward();
    fsdp_model_of(*engine)->wait_for_reductions();
    EXPECT_EQ(shard->reductions, units);
    EXPECT_EQ(repl->reductions, units);
    EXPECT_EQ(fsdp_model_of(*engine)->accumulator_bytes(), 0);
    engine->forward_loss(batch.narrow(1, 0, T), batch.narrow(1, 1, T), /*sync=*/true).backward();
    fsdp_model_of(*engine)->wait_for_reductions();
    EXPECT_EQ(shard->reductions, 2 * units);
    EXPECT_EQ(repl->reductions, 2 * units);
  });
}

TEST(FsdpState, GradAccumulationEqualsOneLargerMicroBatch) {
  // Fp32 summation-order tolerance, as in fsdp_parity_test.cpp (measured ~1e-7).
  constexpr double kTol = 1e-5;
  for (auto s : {ShardingStrategy::full_shard, ShardingStrategy::no_shard}) {
    TrainConfig big = tiny_config(s, 2);
    big.training.micro_batch = 4;
    big.training.grad_accum = 1;
    TrainConfig acc = big;
    acc.training.micro_batch = 2;
    acc.training.grad_accum = 2;
    const RunResult a = train_fsdp(acc, 5);
    const RunResult b = train_fsdp(big, 5);
    EXPECT_LE(max_rel_error(a.grads1, b.grads1), kTol) << to_string(s);
    EXPECT_LE(max_rel_error(a.params, b.params), kTol) << to_string(s);
    for (size_t i = 0; i < a.losses.size(); ++i) EXPECT_NEAR(a.losses[i], b.losses[i], kTol * b.losses[i]);
    // And against the reference with the same accumulation.
    const RunResult r = train_reference(acc, 5);
    EXPECT_LE(max_rel_error(a.grads1, r.grads1), kTol) << to_string(s);
  }
}

// zero_grad writes nothing (FlatUnit::grad_stale): the gradient reads as zero until the next
// reduction writes scale · reduced, which must equal what adding it into zeros gave — bit for
// bit (0 + s·x = s·x), so a second backward of the same batch after zero_grad gives the first
// one's gradients exactly, and two backwards without it give twice them exactly (x + x = 2x).
// Both reduction paths: synchronous (0 in flight) and overlapped (2), two ranks and one.
TEST(FsdpState, ZeroGradWritesNothingAndTheNextReductionOverwrites) {
  for (int world : {2, 1})
    for (int inflight : {0, 2}) {
      TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, world);
      FsdpOptions opts = fsdp_options(cfg);
      opts.max_inflight_reductions = inflight;
      run_ranks(world, world, [&](int, ProcessGroups g) {
        auto engine = make_fsdp_engine(cfg, std::move(g), opts);
        const at::Tensor tokens = at::randint(0, cfg.model.vocab, {cfg.training.micro_batch, cfg.training.seq_len},
                                              at::TensorOptions().dtype(at::kLong).device(at::kCPU));
        const at::Tensor targets = tokens.roll(1, 1);
        const std::string what = "world " + std::to_string(world) + ", in flight " + std::to_string(inflight);
        engine->zero_grad();
        for (const auto& [n, t] : engine->full_gradients())
          EXPECT_EQ(t.abs().max().item<double>(), 0.0) << what << ": " << n << " reads as zero";
        engine->forward_loss(tokens, targets, true).backward();
        const auto first = engine->full_gradients();
        engine->zero_grad();
        engine->forward_loss(tokens, targets, true).backward();
        const auto again = engine->full_gradients();
        engine->forward_loss(tokens, targets, true).backward();  // no zero_grad: accumulates
        const auto twice = engine->full_gradients();
        ASSERT_EQ(first.size(), again.size());
        double largest = 0;
        for (size_t i = 0; i < first.size(); ++i) {
          EXPECT_TRUE(at::equal(first[i].second, again[i].second)) << what << ": " << first[i].first;
          EXPECT_TRUE(at::equal(first[i].second * 2, twice[i].second)) << what << ": " << first[i].first;
          largest = std::max(largest, first[i].second.abs().max().item<double>());
        }
        EXPECT_GT(largest, 0.0) << what << ": the batch has a gradient";
      });
    }
}

TEST(FsdpState, TiedEmbeddingsMatchReference) {
  constexpr double kTol = 1e-5;  // fp32 summation order, see fsdp_parity_test.cpp
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
  cfg.model.tied_embeddings = true;
  const RunResult f = train_fsdp(cfg, 5);
  const RunResult r = train_reference(cfg, 5);
  EXPECT_LE(max_rel_error(f.grads1, r.grads1), kTol);
  EXPECT_LE(max_rel_error(f.params, r.params), kTol);
  bool has_head = false;
  for (const auto& [n, t] : f.params) has_head |= n == "lm_head.weight";
  EXPECT_FALSE(has_head);
}

TEST(FsdpState, PrefetchIsBoundedAndCollectiveOrderIsIdenticalOnEveryRank) {
  for (int limit : {1, 2, 3}) {
    for (AcMode ac : {AcMode::none, AcMode::selective}) {
      TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2, ac);
      cfg.model = load_model("small-6l");  // 8 units: room for prefetch
      cfg.training.seq_len = 16;
      cfg.training.micro_batch = 1;
      cfg.activation_checkpointing.ratio = 0.5;
      cfg.parallelism.max_inflight_all_gathers = limit;
      TokenFile data(synthetic_token_file());
      std::vector<std::vector<std::string>> logs(2);
      std::vector<int> peaks(2);
      run_ranks(2, 2, [&](int rank, ProcessGroups g) {
        auto shard = std::make_shared<CountingCollectives>(g.shard);
        auto engine = make_fsdp_engine(cfg, ProcessGroups{g.world, shard, g.replicate, g.tp});
        TrainLoop loop(cfg, *engine, data, DataSlice{rank, 1, 2}, 0);
        for (int s = 1; s <= 2; ++s) loop.step(s);
        logs[rank] = shard->log;
        peaks[rank] = fsdp_model_of(*engine)->peak_gathered_units();
      });
      EXPECT_EQ(logs[0], logs[1]) << "limit " << limit;  // same collectives, same order
      // At most `limit` units gathered or in flight at once, and prefetch really happens.
      EXPECT_EQ(peaks[0], limit) << "ac " << to_string(ac);
    }
  }
}

TEST(FsdpState, MixedPrecisionGathersAndComputesInParamDtype) {
  // param_dtype bf16 (gathered as fp16 bits over Gloo), reduce_dtype fp32, fp32 masters.
  // run_rank refuses bf16 on Gloo for whole runs (docs/trainer.md: bf16 is not run on Gloo); the runtime path
  // itself is exercised here so GPU builds are not its first user.
  TrainConfig cfg = tiny_config(ShardingStrategy::shard_grad_op, 2);
  cfg.precision.param_dtype = "bf16";
  const RunResult bf = train_fsdp(cfg, 1);
  const RunResult ref = train_reference(tiny_config(ShardingStrategy::no_shard, 2), 1);
  // bf16 keeps 8 mantissa bits (relative rounding 2^-9 ≈ 2e-3 per value). The loss averages
  // 128 token losses, so independent roundings shrink: 1e-3 relative (measured ~1e-5).
  // Gradients chain ~10 rounded ops per block: a few times 2e-3, bound 3e-2 (measured ~6e-3).
  EXPECT_NEAR(bf.losses[0], ref.losses[0], 1e-3 * ref.losses[0]);
  EXPECT_LE(max_rel_error(bf.grads1, ref.grads1), 3e-2);
  for (const auto& [n, g] : bf.grads1) EXPECT_EQ(g.scalar_type(), at::kFloat) << n;
  std::printf("[mixed] bf16 step-1 loss rel err %.2e, grad max rel err %.2e\n",
              std::abs(bf.losses[0] - ref.losses[0]) / ref.losses[0], max_rel_error(bf.grads1, ref.grads1));
  // Gathered buffers are bf16: half the bytes of fp32.
  auto gathered = [&](const TrainConfig& c) {
    int64_t b = 0;
    TokenFile data(synthetic_token_file());
    run_ranks(2, 2, [&](int rank, ProcessGroups g) {
      auto e = make_fsdp_engine(c, std::move(g));
      at::Tensor batch = at::empty({2, 33}, at::kLong);
      read_sequences(data, 1, 1, rank * 2, 2, 32, batch.data_ptr<int64_t>());
      at::Tensor loss = e->forward_loss(batch.narrow(1, 0, 32), batch.narrow(1, 1, 32), true);
      if (rank == 0) b = fsdp_model_of(*e)->gathered_bytes();
      loss.backward();
    });
    return b;
  };
  EXPECT_EQ(2 * gathered(cfg), gathered(tiny_config(ShardingStrategy::shard_grad_op, 2)));
}

TEST(FsdpState, PrefetchDepthDoesNotChangeResults) {
  TrainConfig one = tiny_config(ShardingStrategy::full_shard, 2);
  one.parallelism.max_inflight_all_gathers = 1;
  TrainConfig three = one;
  three.parallelism.max_inflight_all_gathers = 3;
  const RunResult a = train_fsdp(one, 3), b = train_fsdp(three, 3);
  // Same collectives, same order of arithmetic: bitwise equal.
  EXPECT_EQ(max_rel_error(a.params, b.params), 0.0);
}

}  // namespace
}  // namespace shardcast::trainer::testing
