// bench_step_profile: where one training step's time goes, per phase — data, forward,
// backward, collectives, clip, optimizer — for 1 and 2 ranks, so the next speed-up is chosen
// from numbers.
//
// Ranks are threads of this process over a HashStore with Gloo on loopback (as the trainer
// tests run them; one intra-op thread in all), driving the same Engine calls as
// TrainLoop::step with a timer around each phase. Collectives are timed by wrapping every
// process group in TimedCollectives, which forwards each call and adds its wall time to the
// phase it ran in; to make them measurable it waits for each one inside the call, so the
// profiled step has no communication/compute overlap. The "overlapped" column is the
// trainer's own step (unwrapped groups: all-gather prefetch and asynchronous reductions),
// "sync red." the same with synchronous reductions, measured in the same run, interleaved.
// Compute = phase time − collectives in that phase. Numbers are rank 0's, median over steady
// steps (the first excluded). The host heap is set up as a rank's (host_malloc.h).
// What it is not: a test (no thresholds) and not a GPU profile.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <ATen/Parallel.h>

#include "shared/config_io.h"
#include "trainer/comm/collectives.h"
#include "trainer/comm/thread_ranks.h"
#include "trainer/data/token_file.h"
#include "trainer/train/engine.h"
#include "trainer/train/host_malloc.h"

namespace fs = std::filesystem;
using namespace shardcast;
using namespace shardcast::trainer;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Forwards every call to `inner`, adding its duration to *sink (the current phase's counter).
class TimedCollectives final : public Collectives {
 public:
  TimedCollectives(std::shared_ptr<Collectives> inner, double* const* sink) : inner_(std::move(inner)), sink_(sink) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  at::Device device() const override { return inner_->device(); }
  PendingWork all_gather(at::Tensor out, at::Tensor in) override {
    const auto t0 = Clock::now();
    inner_->all_gather(out, in).wait();  // synchronous here: its whole time is counted
    **sink_ += since(t0);
    return PendingWork();
  }
  // Reductions are waited inside the call too (no overlap with backward in the timed step).
  PendingWork reduce_scatter_async(at::Tensor out, at::Tensor in) override {
    timed([&] { inner_->reduce_scatter(out, in); });
    return PendingWork();
  }
  PendingWork all_reduce_async(at::Tensor t, ReduceOp op) override {
    timed([&] { inner_->all_reduce(t, op); });
    return PendingWork();
  }
  void broadcast(at::Tensor t, int root) override { timed([&] { inner_->broadcast(t, root); }); }
  void barrier() override { timed([&] { inner_->barrier(); }); }

 private:
  template <class F>
  void timed(F f) {
    const auto t0 = Clock::now();
    f();
    **sink_ += since(t0);
  }
  std::shared_ptr<Collectives> inner_;
  double* const* sink_;  // points at the pointer to the current phase's seconds
};

enum Phase { kData, kForward, kBackward, kClip, kOptimizer, kPhases };

struct StepTimes {
  double phase[kPhases] = {};  // wall s per phase
  double comm[kPhases] = {};   // collectives s inside each phase
  double step = 0;             // s
};

TrainConfig profile_config(const std::string& model, ShardingStrategy s, int world, int b, int T) {
  TrainConfig c;
  c.model_preset = model;
  c.model = load_model(model);
  c.cluster.nodes = 1;
  c.cluster.gpus_per_node = world;
  c.parallelism.sharding_strategy = s;
  c.training.micro_batch = b;
  c.training.seq_len = T;
  c.training.steps = 1000;
  c.training.seed = 1;
  c.precision.param_dtype = "fp32";
  c.precision.reduce_dtype = "fp32";
  return c;
}

// Rank 0's per-step times of `steps` steps; `timed` wraps the groups in TimedCollectives.
// inflight_reductions: FsdpOptions::max_inflight_reductions (0 = synchronous reductions).
std::vector<StepTimes> profile(const TrainConfig& cfg, const TokenFile& data, int steps, bool timed,
                               int inflight_reductions) {
  const int world = cfg.world_size();
  const int shard = cfg.parallelism.shard_group_size(world, world);
  std::vector<StepTimes> out;
  std::mutex mu;
  run_thread_ranks(world, shard, 300, [&](int r, ProcessGroups g) {
    double scratch = 0;
    double* sink = &scratch;
    if (timed) {
      std::map<Collectives*, std::shared_ptr<Collectives>> wrapped;  // keep shared groups shared
      for (auto* p : {&g.world, &g.shard, &g.replicate}) {
        auto& w = wrapped[p->get()];
        if (!w) w = std::make_shared<TimedCollectives>(*p, &sink);
        *p = w;
      }
    }
    FsdpOptions fo = fsdp_options(cfg);
    fo.max_inflight_reductions = inflight_reductions;
    auto engine = make_fsdp_engine(cfg, g, fo);
    const int b = cfg.training.micro_batch, T = cfg.training.seq_len;
    at::Tensor batch = at::empty({b, T + 1}, at::kLong);
    std::vector<StepTimes> mine;
    for (int s = 1; s <= steps; ++s) {
      StepTimes st;
      auto phase = [&](Phase p, auto&& f) {
        sink = &st.comm[p];
        const auto t0 = Clock::now();
        f();
        st.phase[p] += since(t0);
        sink = &scratch;
      };
      const auto t0 = Clock::now();
      engine->zero_grad();
      at::Tensor loss;
      phase(kData, [&] { read_sequences(data, cfg.training.seed, s, int64_t(r) * b, b, T, batch.data_ptr<int64_t>()); });
      phase(kForward, [&] { loss = engine->forward_loss(batch.narrow(1, 0, T), batch.narrow(1, 1, T), true); });
      phase(kBackward, [&] {
        loss.backward();
        (void)loss.item<double>();
      });
      phase(kClip, [&] { engine->clip_grad_norm(1.0); });
      phase(kOptimizer, [&] { engine->optimizer_step(cfg.optimizer, 3e-4); });
      st.step = since(t0);
      mine.push_back(st);
    }
    if (r == 0) {
      std::lock_guard<std::mutex> l(mu);
      out = mine;
    }
  });
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_step_profile: time per phase of one FSDP step (data, forward, backward, collectives, clip, "
               "optimizer) for 1 and 2 ranks"};
  std::string model = "small-6l";
  int steps = 6, micro_batch = 2, seq_len = 256, repeats = 3;
  int inflight_reductions = FsdpOptions{}.max_inflight_reductions;
  app.add_option("--model", model, "model preset");
  app.add_option("--steps", steps, "steps per measurement, 2 to 1000 (the first is excluded)")->check(CLI::Range(2, 1000));
  app.add_option("--micro-batch", micro_batch, "sequences per rank per step, 1 to 4096")->check(CLI::Range(1, 4096));
  app.add_option("--seq-len", seq_len, "tokens per sequence, 1 to the model's max_seq_len")->check(CLI::Range(1, 1 << 20));
  app.add_option("--repeats", repeats, "interleaved repetitions, 1 to 100; the median over all steady steps is kept")
      ->check(CLI::Range(1, 100));
  app.add_option("--max-inflight-reductions", inflight_reductions,
                 "FsdpOptions::max_inflight_reductions of the 'overlapped' column, 0 to 1000 (0 = synchronous); "
                 "the 'sync reductions' column always uses 0")
      ->check(CLI::Range(0, 1000));
  CLI11_PARSE(app, argc, argv);
  keep_freed_host_memory();  // as shardcast-train's ranks do (run_rank)

  // Throughput does not depend on the text: a synthetic byte corpus.
  const fs::path data_path = fs::temp_directory_path() / fmt::format("bench_step_profile_{}.bin", ::getpid());
  std::vector<uint16_t> toks(400000);
  uint64_t x = 1;
  for (auto& t : toks) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t = uint16_t((x >> 33) % 96 + 32);
  }
  write_token_file(data_path.string(), toks);
  TokenFile data(data_path.string());

  struct Case {
    int world;
    ShardingStrategy s;
  };
  const std::vector<Case> cases{{1, ShardingStrategy::no_shard}, {2, ShardingStrategy::no_shard},
                                {2, ShardingStrategy::full_shard}};
  std::map<int, std::vector<StepTimes>> timed_steps, plain_steps, sync_steps;
  for (int rep = 0; rep < repeats; ++rep)
    for (size_t i = 0; i < cases.size(); ++i) {
      const TrainConfig cfg = profile_config(model, cases[i].s, cases[i].world, micro_batch, seq_len);
      fmt::print(stderr, "  repeat {}/{}: {} rank(s) {} ...\n", rep + 1, repeats, cases[i].world, to_string(cases[i].s));
      auto t = profile(cfg, data, steps, true, 0);
      auto p = profile(cfg, data, steps, false, inflight_reductions);
      auto q = profile(cfg, data, steps, false, 0);
      timed_steps[int(i)].insert(timed_steps[int(i)].end(), t.begin() + 1, t.end());
      plain_steps[int(i)].insert(plain_steps[int(i)].end(), p.begin() + 1, p.end());
      sync_steps[int(i)].insert(sync_steps[int(i)].end(), q.begin() + 1, q.end());
    }
  fs::remove(data_path);

  fmt::print("\nbench_step_profile: model {}, micro_batch {}, seq_len {}, 1 thread per rank, ranks as threads "
             "(Gloo on loopback); rank 0, median ms over {} steady steps x {} repeats\n",
             model, micro_batch, seq_len, steps - 1, repeats);
  fmt::print("collectives are timed synchronously (every collective waited inside the call): 'step' = that step; "
             "'overlapped' = the trainer's step with unwrapped groups (all-gather prefetch, up to {} reductions in "
             "flight); 'sync red.' = the same with synchronous reductions (max_inflight_reductions 0)\n\n",
             inflight_reductions);
  fmt::print("{:<18} {:>7} {:>9} {:>9} {:>9} {:>12} {:>7} {:>10} {:>9} {:>11} {:>10}\n", "ranks x strategy", "data",
             "forward", "backward", "clip", "collectives", "optim", "other", "step", "overlapped", "sync red.");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& v = timed_steps[int(i)];
    auto med = [&](auto f) {
      std::vector<double> xs;
      for (const auto& s : v) xs.push_back(f(s));
      return 1000 * median(xs);
    };
    const double comm = med([](const StepTimes& s) {
      double c = 0;
      for (int p = 0; p < kPhases; ++p) c += s.comm[p];
      return c;
    });
    double shown = comm;
    std::vector<double> compute(kPhases);
    for (int p = 0; p < kPhases; ++p) {
      compute[size_t(p)] = med([p](const StepTimes& s) { return s.phase[p] - s.comm[p]; });
      shown += compute[size_t(p)];
    }
    const double step = med([](const StepTimes& s) { return s.step; });
    std::vector<double> plain, sync;
    for (const auto& s : plain_steps[int(i)]) plain.push_back(s.step);
    for (const auto& s : sync_steps[int(i)]) sync.push_back(s.step);
    fmt::print("{:<18} {:>7.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>12.1f} {:>7.1f} {:>10.1f} {:>9.1f} {:>11.1f} {:>10.1f}\n",
               fmt::format("{} x {}", cases[i].world, to_string(cases[i].s)), compute[kData], compute[kForward],
               compute[kBackward], compute[kClip], comm, compute[kOptimizer], step - shown, step,
               1000 * median(plain), 1000 * median(sync));
  }
  fmt::print("\nforward / backward / clip / optim = compute only (collectives inside them are in 'collectives'); "
             "other = step − the sum of medians (zero_grad, rounding of medians).\n");
  return 0;
}
