// Collectives over Gloo with ranks as threads: the composed flat all-gather and
// reduce-scatter against values computed by hand, bf16 gathers (moved as fp16 bits), the
// hybrid group layout, and the errors for what Gloo cannot do.
#include <gtest/gtest.h>

#include "harness.h"

namespace shardcast::trainer::testing {
namespace {

TEST(Collectives, AllGatherIntoFlatBuffer) {
  for (int world : {2, 3, 4}) {
    run_ranks(world, world, [&](int rank, ProcessGroups g) {
      const int64_t n = 5;
      at::Tensor in = at::arange(n, at::kFloat) + 100.0 * rank;
      at::Tensor out = at::full({n * world}, -1.0f);
      g.shard->all_gather(out, in).wait();
      for (int r = 0; r < world; ++r)
        EXPECT_TRUE(out.narrow(0, r * n, n).equal(at::arange(n, at::kFloat) + 100.0 * r)) << "rank " << r;
    });
  }
}

TEST(Collectives, AllGatherBf16MovesExactBits) {
  run_ranks(2, 2, [&](int rank, ProcessGroups g) {
    at::Tensor in = (at::randn({7}, at::kFloat) * (rank + 1)).to(at::kBFloat16);
    at::Tensor out = at::empty({14}, at::kBFloat16);
    g.shard->all_gather(out, in).wait();
    EXPECT_TRUE(out.narrow(0, 7 * rank, 7).equal(in));
  });
}

TEST(Collectives, ReduceScatterSumsMyChunk) {
  for (int world : {2, 4}) {
    run_ranks(world, world, [&](int rank, ProcessGroups g) {
      const int64_t n = 3;
      // Rank r contributes (r+1)·[0, 1, ..., world·n): my chunk sums to Σ(r+1)·index.
      at::Tensor in = at::arange(n * world, at::kFloat) * double(rank + 1);
      at::Tensor out = at::empty({n}, at::kFloat);
      g.shard->reduce_scatter(out, in);
      const double factor = world * (world + 1) / 2.0;
      at::Tensor want = at::arange(n * rank, n * (rank + 1), at::kFloat) * factor;
      EXPECT_TRUE(out.equal(want)) << out << want;
    });
  }
}

TEST(Collectives, HybridGroupsAreShardMajor) {
  // 4 ranks, shard groups {0,1} {2,3}; replicate groups {0,2} {1,3}.
  run_ranks(4, 2, [&](int rank, ProcessGroups g) {
    EXPECT_EQ(g.world->size(), 4);
    EXPECT_EQ(g.shard->size(), 2);
    EXPECT_EQ(g.replicate->size(), 2);
    EXPECT_EQ(g.shard->rank(), rank % 2);
    EXPECT_EQ(g.replicate->rank(), rank / 2);
    at::Tensor t = at::full({1}, double(rank));
    g.shard->all_reduce(t);
    EXPECT_EQ(t.item<float>(), rank < 2 ? 1.0f : 5.0f);
    at::Tensor u = at::full({1}, double(rank));
    g.replicate->all_reduce(u, ReduceOp::max);
    EXPECT_EQ(u.item<float>(), float(rank % 2 + 2));
  });
}

TEST(Collectives, NoShardUsesASelfShardGroup) {
  run_ranks(2, 1, [&](int, ProcessGroups g) {
    EXPECT_EQ(g.shard->size(), 1);
    EXPECT_EQ(g.shard->backend(), "self");
    EXPECT_EQ(g.replicate->size(), 2);
  });
}

TEST(Collectives, Bf16ReductionIsRefusedOnGloo) {
  run_ranks(2, 2, [&](int, ProcessGroups g) {
    at::Tensor t = at::ones({4}, at::kBFloat16);
    EXPECT_THROW(g.world->all_reduce(t), std::invalid_argument);
  });
}

TEST(Collectives, BadGroupSizesAreRejected) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommOptions co;
  EXPECT_THROW(make_process_groups(store, 0, 4, 3, co), std::invalid_argument);
  EXPECT_THROW(make_process_groups(store, 4, 4, 4, co), std::invalid_argument);
  co.backend = "mpi";
  EXPECT_THROW(make_process_groups(store, 0, 2, 2, co), std::invalid_argument);
  if (!nccl_compiled()) {
    co.backend = "nccl";
    EXPECT_THROW(make_process_groups(store, 0, 2, 2, co), std::invalid_argument);
  }
}

}  // namespace
}  // namespace shardcast::trainer::testing
