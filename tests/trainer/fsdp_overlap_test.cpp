// Asynchronous gradient reductions (FsdpOptions::max_inflight_reductions >= 1, CPU) against
// the synchronous reference path (0): the same collectives on the same tensors, waited
// later, so losses, gradient norms, step-1 gradients and final parameters must be bitwise
// equal for every strategy, gradient accumulation and activation checkpointing; and the
// reductions really are in flight together (else the comparison would prove nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "harness.h"

namespace shardcast::trainer::testing {
namespace {

void expect_bitwise_equal(const std::vector<std::pair<std::string, at::Tensor>>& a,
                          const std::vector<std::pair<std::string, at::Tensor>>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first) << what;
    EXPECT_TRUE(at::equal(a[i].second, b[i].second)) << what << ": " << a[i].first;
  }
}

FsdpOptions with_inflight(const TrainConfig& cfg, int k) {
  FsdpOptions o = fsdp_options(cfg);
  o.max_inflight_reductions = k;
  return o;
}

struct Case {
  ShardingStrategy strategy;
  int world;
  int grad_accum;
  AcMode ac;
};

TEST(FsdpOverlap, AsynchronousReductionsAreBitwiseEqualToSynchronous) {
  const Case cases[] = {
      {ShardingStrategy::no_shard, 2, 1, AcMode::none},      {ShardingStrategy::full_shard, 2, 1, AcMode::none},
      {ShardingStrategy::shard_grad_op, 2, 1, AcMode::none}, {ShardingStrategy::hybrid_shard, 4, 1, AcMode::none},
      {ShardingStrategy::full_shard, 2, 2, AcMode::full},    {ShardingStrategy::no_shard, 2, 2, AcMode::none},
  };
  for (const Case& c : cases) {
    TrainConfig cfg = tiny_config(c.strategy, c.world, c.ac);
    cfg.training.grad_accum = c.grad_accum;
    const std::string what = fmt::format("{} {} ranks, grad_accum {}, ac {}", to_string(c.strategy), c.world,
                                         c.grad_accum, to_string(c.ac));
    const RunResult sync = train_fsdp(cfg, 4, at::kCPU, with_inflight(cfg, 0));
    for (int k : {1, 2, 100}) {
      const RunResult async = train_fsdp(cfg, 4, at::kCPU, with_inflight(cfg, k));
      EXPECT_EQ(async.losses, sync.losses) << what << ", k " << k;
      EXPECT_EQ(async.grad_norms, sync.grad_norms) << what << ", k " << k;
      expect_bitwise_equal(async.grads1, sync.grads1, what + " step-1 gradients");
      expect_bitwise_equal(async.params, sync.params, what + " parameters");
    }
    // The run trains (equal losses of a run that does nothing would prove little).
    EXPECT_LT(sync.losses.back(), sync.losses.front()) << what;
  }
}

// Counts reductions issued and not yet waited (decorator over the real group).
class InflightCounter final : public Collectives {
 public:
  explicit InflightCounter(std::shared_ptr<Collectives> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  at::Device device() const override { return inner_->device(); }
  PendingWork all_gather(at::Tensor o, at::Tensor i) override { return inner_->all_gather(o, i); }
  PendingWork reduce_scatter_async(at::Tensor o, at::Tensor i) override { return counted(inner_->reduce_scatter_async(o, i)); }
  PendingWork all_reduce_async(at::Tensor t, ReduceOp op) override { return counted(inner_->all_reduce_async(t, op)); }
  void broadcast(at::Tensor t, int root) override { inner_->broadcast(t, root); }
  void barrier() override { inner_->barrier(); }
  int peak = 0;

 private:
  PendingWork counted(PendingWork w) {
    peak = std::max(peak, ++*now_);
    auto inner = std::make_shared<PendingWork>(std::move(w));
    return PendingWork(c10::intrusive_ptr<c10d::Work>(), [inner, now = now_] {
      inner->wait();
      --*now;
    });
  }
  std::shared_ptr<Collectives> inner_;
  std::shared_ptr<int> now_ = std::make_shared<int>(0);
};

TEST(FsdpOverlap, ReductionsAreInFlightTogether) {
  // small-6l: 8 units, room for k = 3 in flight.
  for (auto s : {ShardingStrategy::no_shard, ShardingStrategy::full_shard}) {
    TrainConfig cfg = tiny_config(s, 2);
    cfg.model = load_model("small-6l");
    cfg.training.seq_len = 16;
    cfg.training.micro_batch = 1;
    TokenFile data(synthetic_token_file());
    for (int k : {0, 1, 3}) {
      std::vector<int> peaks(2);
      run_ranks(2, shard_size_of(cfg), [&](int rank, ProcessGroups g) {
        auto counted = std::make_shared<InflightCounter>(s == ShardingStrategy::no_shard ? g.replicate : g.shard);
        ProcessGroups groups = s == ShardingStrategy::no_shard ? ProcessGroups{g.world, g.shard, counted, g.tp}
                                                               : ProcessGroups{g.world, counted, g.replicate, g.tp};
        auto engine = make_fsdp_engine(cfg, groups, with_inflight(cfg, k));
        TrainLoop loop(cfg, *engine, data, DataSlice{rank, 1, 2}, 0);
        loop.step(1);
        peaks[rank] = counted->peak;
      });
      // k in flight after each post-backward, plus the one just issued before the oldest is
      // waited; the synchronous path waits each reduction before issuing the next.
      EXPECT_EQ(peaks[0], k + 1) << to_string(s) << " k " << k;
      EXPECT_EQ(peaks[1], k + 1) << to_string(s) << " k " << k;
    }
  }
}

}  // namespace
}  // namespace shardcast::trainer::testing
