// Matmul, memory and Gloo collective micro-benchmarks. See microbench.h.
#include "trainer/microbench/microbench.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "trainer/comm/collectives.h"
#include "trainer/comm/thread_ranks.h"

namespace shardcast::trainer {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best time of fn over repeats lasting at least min_s in total.  // s
template <class F>
double best_time(F&& fn, double min_s) {
  fn();  // warm-up
  double best = 1e30, total = 0;
  int reps = 0;
  while (total < min_s || reps < 3) {
    const double t0 = now_s();
    fn();
    const double t = now_s() - t0;
    best = std::min(best, t);
    total += t;
    ++reps;
  }
  return best;
}

}  // namespace


MicrobenchResult run_microbench(const MicrobenchOptions& o) {
  MicrobenchResult r;
  at::set_num_threads(1);  // one core per rank, as the launcher runs ranks
  r.threads_per_rank = 1;

  // 1. GEMMs: squares and the trainer's (tokens x d) x (d x out) shapes.
  std::vector<std::array<int64_t, 3>> shapes = {{64, 64, 64},     {128, 128, 128},  {256, 256, 256},
                                                {512, 512, 512},  {1024, 64, 192},  {1024, 256, 256},
                                                {1024, 256, 768}, {1024, 768, 256}, {4096, 256, 256}};
  if (o.quick) shapes = {{64, 64, 64}, {256, 256, 256}};
  // 2. Memory bandwidth: copy 64 MiB (read + write).
  // Both in o.rounds interleaved rounds; each point keeps its best.
  std::vector<double> gemm_best(shapes.size(), 1e30);
  double copy_best = 1e30;
  const int64_t copy_n = (o.quick ? 4 : 16) << 20;  // floats
  for (int round = 0; round < std::max(1, o.rounds); ++round) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto& [m, k, n] = shapes[i];
      at::Tensor a = at::randn({m, k}), b = at::randn({k, n}), c = at::empty({m, n});
      gemm_best[i] = std::min(gemm_best[i], best_time([&] { at::mm_out(c, a, b); }, o.min_seconds));
    }
    at::Tensor src = at::ones({copy_n}), dst = at::empty({copy_n});
    copy_best = std::min(copy_best, best_time([&] { dst.copy_(src); }, o.min_seconds));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [m, k, n] = shapes[i];
    r.matmul.push_back({m, k, n, 2.0 * double(m) * double(n) * double(k) / gemm_best[i]});
  }
  r.memory_bytes_per_s = 2.0 * double(copy_n) * 4 / copy_best;

  // 3. Collectives over the trainer's Gloo layer, ranks as threads.
  std::vector<double> sizes;  // total bytes
  for (double s = 16 << 10; s <= (o.quick ? (256 << 10) : (16 << 20)); s *= 4) sizes.push_back(s);
  std::mutex mu;
  for (int W : o.ranks) {
    run_thread_ranks(W, W, 120, [&](int rank, ProcessGroups g) {
      auto& c = *g.world;
      for (const char* op : {"all_gather", "all_reduce", "reduce_scatter"}) {
        for (double bytes : sizes) {
          const int64_t n = int64_t(bytes / 4) / W * W;  // floats, divisible by W
          at::Tensor full = at::ones({n}), shard = at::ones({n / W});
          auto run = [&] {
            if (std::string(op) == "all_gather") c.all_gather(full, shard).wait();
            else if (std::string(op) == "all_reduce") c.all_reduce(full);
            else c.reduce_scatter(shard, full);
          };
          // Same repeat count on every rank (collectives must match): fixed by size.
          const int reps = std::max(3, int(std::min(200.0, 4e6 / bytes)));
          run();
          std::vector<double> ts;
          for (int i = 0; i < reps; ++i) {
            c.barrier();
            const double t0 = now_s();
            run();
            ts.push_back(now_s() - t0);
          }
          std::sort(ts.begin(), ts.end());
          if (rank == 0) {
            std::lock_guard<std::mutex> l(mu);
            r.collectives.push_back({op, W, double(n) * 4, ts[ts.size() / 2]});
          }
        }
      }
    });
  }
  return r;
}

void to_json(nlohmann::json& j, const MicrobenchResult& r) {
  j = nlohmann::json{{"schema", 1}, {"threads_per_rank", r.threads_per_rank}, {"memory_bytes_per_s", r.memory_bytes_per_s}};
  j["matmul"] = nlohmann::json::array();
  for (const auto& m : r.matmul) j["matmul"].push_back({{"m", m.m}, {"k", m.k}, {"n", m.n}, {"flops_per_s", m.flops_per_s}});
  j["collectives"] = nlohmann::json::array();
  for (const auto& c : r.collectives)
    j["collectives"].push_back({{"op", c.op}, {"ranks", c.ranks}, {"bytes", c.bytes}, {"seconds", c.seconds}});
}

}  // namespace shardcast::trainer
