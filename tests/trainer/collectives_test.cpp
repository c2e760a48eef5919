// Collectives over Gloo with ranks as threads: the composed flat all-gather and
// reduce-scatter against values computed by hand, bf16 gathers (moved as fp16 bits), the
// hybrid group layout, the errors for what Gloo cannot do, and the thread-rank harness's
// report of every failed rank.
#include <gtest/gtest.h>

#include <cstdlib>

#include "harness.h"

namespace shardcast::trainer::testing {
namespace {

// Two ranks fail: one exception is rethrown, the other rank's message goes to stderr with its
// rank (the first to arrive is often only a peer's closed connection).
TEST(ThreadRanks, EveryFailedRankIsReported) {
  ::testing::internal::CaptureStderr();
  std::string thrown;
  try {
    run_thread_ranks(2, 2, 30, [](int rank, ProcessGroups) {
      throw std::runtime_error("rank " + std::to_string(rank) + " broke");
    });
  } catch (const std::runtime_error& e) {
    thrown = e.what();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(thrown == "rank 0 broke" || thrown == "rank 1 broke") << thrown;
  const std::string other = thrown == "rank 0 broke" ? "1" : "0";
  EXPECT_NE(err.find("run_thread_ranks: rank " + other + " also failed: rank " + other + " broke"), std::string::npos)
      << err;
}

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

// The device contract (collectives.h): every group checks its tensors before the backend.
// NCCL rejects CPU tensors at run time on a GPU only; here a group declared on cuda:0
// (no CUDA needed: the check throws before anything touches the device) must reject the CPU
// tensors a caller might build with default options — the bug class of per-step metrics
// and checkpoint flags reduced as CPU tensors.
TEST(DeviceContract, RejectsTensorsOffTheComputeDevice) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommOptions co;
  auto g = make_process_groups(store, 0, 1, 1, co);
  auto cuda = with_device_contract(g.world, at::Device(at::kCUDA, 0));
  EXPECT_EQ(cuda->device(), at::Device(at::kCUDA, 0));
  at::Tensor host = at::zeros({4}, at::kDouble);
  try {
    cuda->all_reduce(host);
    FAIL() << "all_reduce took a CPU tensor on a cuda:0 group";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("all_reduce"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is on cpu"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
  }
  EXPECT_THROW(cuda->broadcast(host, 0), std::invalid_argument);
  EXPECT_THROW(cuda->all_gather(host, host), std::invalid_argument);
  EXPECT_THROW(cuda->reduce_scatter(host, host), std::invalid_argument);
}

TEST(DeviceContract, RejectsNonContiguousSparseAndUndefinedTensors) {
  run_ranks(2, 2, [&](int, ProcessGroups g) {
    at::Tensor strided = at::ones({4, 4}).t();  // a transposed view: not contiguous
    try {
      g.world->all_reduce(strided);
      FAIL() << "all_reduce took a non-contiguous tensor";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("not contiguous"), std::string::npos) << e.what();
    }
    at::Tensor out = at::empty({8});
    EXPECT_THROW(g.shard->all_gather(out, at::ones({8}).slice(0, 0, 8, 2)), std::invalid_argument);
    EXPECT_THROW(g.shard->reduce_scatter(at::empty({2}), at::ones({4}).to_sparse()), std::invalid_argument);
    EXPECT_THROW(g.world->broadcast(at::Tensor(), 0), std::invalid_argument);
    // Both ranks threw before the backend, so the group still works.
    at::Tensor t = at::ones({3});
    g.world->all_reduce(t);
    EXPECT_TRUE(t.equal(at::full({3}, 2.0f)));
  });
}

TEST(DeviceContract, HostValuesGoThroughTheGroupDevice) {
  run_ranks(3, 3, [&](int rank, ProcessGroups g) {
    std::vector<double> v{double(rank), 1.0};
    all_reduce_host(*g.world, v);
    EXPECT_EQ(v, (std::vector<double>{3.0, 3.0}));
    std::vector<double> m{double(rank) * 1.5};
    all_reduce_host(*g.world, m, ReduceOp::max);
    EXPECT_EQ(m[0], 3.0);
    EXPECT_EQ(broadcast_host(*g.world, rank == 1 ? "disk full on rank 1" : "ignored", 1), "disk full on rank 1");
    EXPECT_EQ(broadcast_host(*g.world, "", 0), "");
  });
}

// comm.timeout_seconds under NCCL needs async error handling or blocking wait (LibTorch reads
// the variables when a ProcessGroupNCCL is built); the environment logic runs on CPU too.
TEST(NcclTimeout, EnvironmentEnablesTimeoutHandlingOrRefuses) {
  const char* names[] = {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING",
                         "TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* n : names)
    if (const char* v = std::getenv(n)) saved.emplace_back(n, v);
  auto clear = [&] {
    for (const char* n : names) ::unsetenv(n);
  };
  auto get = [](const char* n) { const char* v = std::getenv(n); return std::string(v ? v : "<unset>"); };

  clear();
  enable_nccl_timeout_handling(60);
  EXPECT_EQ(get("TORCH_NCCL_ASYNC_ERROR_HANDLING"), "1");
  EXPECT_EQ(get("NCCL_ASYNC_ERROR_HANDLING"), "1");

  clear();  // the user's choice of blocking wait is kept, nothing added
  ::setenv("NCCL_BLOCKING_WAIT", "1", 1);
  enable_nccl_timeout_handling(60);
  EXPECT_EQ(get("TORCH_NCCL_ASYNC_ERROR_HANDLING"), "<unset>");

  clear();  // explicitly off: the timeout could not be honoured
  ::setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0", 1);
  try {
    enable_nccl_timeout_handling(60);
    FAIL() << "accepted TORCH_NCCL_ASYNC_ERROR_HANDLING=0";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("TORCH_NCCL_ASYNC_ERROR_HANDLING=0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("comm.timeout_seconds"), std::string::npos) << e.what();
  }
  clear();
  for (const auto& [n, v] : saved) ::setenv(n.c_str(), v.c_str(), 1);
}

}  // namespace
}  // namespace shardcast::trainer::testing
