// run_thread_ranks / run_mesh_ranks: `world` ranks as threads of this process, each with its process groups over
// a shared c10d::HashStore and Gloo on 127.0.0.1.
//
// What it is: the one in-process rank harness of the trainer's tests (tests/trainer/harness.h),
// the collective micro-benchmark (microbench/) and the per-phase step profile (bench/).
// What it is not: a launcher (launch/ starts one process per rank) or a scheduler; every
// rank's fn must make the same collectives in the same order.
// Ownership and threading: fn(rank, groups) runs on its rank's own thread with one intra-op
// thread (ranks share the machine's cores). Each rank's groups outlive fn until every rank's fn
// has returned or thrown: a rank that tears its Gloo pairs down while a peer is still
// connecting or communicating makes that peer fail with a closed connection. All threads are
// joined, then the first exception of any rank is rethrown; when more than one rank failed, the
// others' messages go to stderr first, each with its rank (a peer's "connection closed" is often
// what arrives first, the cause is in another rank's).
#pragma once

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "trainer/comm/collectives.h"

namespace shardcast::trainer {

// The mesh dp_replicate × dp_shard × tp (make_mesh_groups' layout, tp innermost).
inline void run_mesh_ranks(int dp_replicate, int dp_shard, int tp, double timeout_seconds,
                           const std::function<void(int rank, ProcessGroups groups)>& fn,
                           at::Device device = at::kCPU) {
  const int world = dp_replicate * dp_shard * tp;
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::thread> threads;
  std::mutex mu;
  std::condition_variable all_done;
  int finished = 0;
  std::exception_ptr first;
  int first_rank = -1;
  std::vector<std::exception_ptr> failed(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      ProcessGroups groups;  // outlives fn: destroyed only after every rank's fn has returned
      try {
        at::set_num_threads(1);
        CommOptions co;
        co.backend = "gloo";
        co.timeout_seconds = timeout_seconds;
        co.hostname = "127.0.0.1";
        co.device = device;
        groups = make_mesh_groups(store, r, dp_replicate, dp_shard, tp, co);
        fn(r, groups);
      } catch (...) {
        std::lock_guard<std::mutex> l(mu);
        failed[size_t(r)] = std::current_exception();
        if (!first) {
          first = failed[size_t(r)];
          first_rank = r;
        }
      }
      std::unique_lock<std::mutex> l(mu);
      ++finished;
      all_done.notify_all();
      all_done.wait(l, [&] { return finished == world; });
    });
  }
  for (auto& t : threads) t.join();
  if (!first) return;
  for (int r = 0; r < world; ++r) {
    if (!failed[size_t(r)] || r == first_rank) continue;
    try {
      std::rethrow_exception(failed[size_t(r)]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "run_thread_ranks: rank %d also failed: %s\n", r, e.what());
    } catch (...) {
      std::fprintf(stderr, "run_thread_ranks: rank %d also failed (not a std::exception)\n", r);
    }
  }
  std::rethrow_exception(first);
}

// `world` ranks, shard groups of `shard_size` (shard-major), no tp.
inline void run_thread_ranks(int world, int shard_size, double timeout_seconds,
                             const std::function<void(int rank, ProcessGroups groups)>& fn,
                             at::Device device = at::kCPU) {
  if (shard_size < 1 || world % shard_size != 0)
    throw std::invalid_argument("run_thread_ranks: shard group size does not divide the world");
  run_mesh_ranks(world / shard_size, shard_size, 1, timeout_seconds, fn, device);
}

}  // namespace shardcast::trainer
