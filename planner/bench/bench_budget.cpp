// bench_budget: wall time of the whole budget question on this machine.
//
// What it is: a timing harness, not a test. It runs budget() (planner/decide/budget.h) for
// Llama-3-70B, 2T tokens by 30 days, over four GPU types (H100-80GB-SXM, H200-141GB-SXM, B200,
// MI300X) x GPU counts 8..16384 (12 counts each, 48 searches), and prints the best wall time of
// the repeats, the configurations searched, the time per type, and whether the < 1 s target is
// met. Usage: bench_budget [repeats]  (default 3).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/core.h>

#include "planner/decide/budget.h"
#include "shared/config_io.h"

int main(int argc, char** argv) {
  using namespace shardcast;
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  planner::BudgetOptions o;
  o.scale.space.model = load_model("llama3-70b");
  o.scale.space.model_preset = "llama3-70b";
  o.scale.space.seq_len = 4096;
  o.scale.from = 8;
  o.scale.to = 16384;
  o.scale.tokens = 2e12;
  o.scale.reliability = planner::load_reliability("default");
  o.gpu_types = {"H100-80GB-SXM", "H200-141GB-SXM", "B200", "MI300X"};
  o.deadline_days = 30;
  fmt::print("bench_budget: {} hardware threads, best of {} runs\n", std::thread::hardware_concurrency(), repeats);
  fmt::print("llama3-70b, 2T tokens by 30 days, seq 4096, 4Mi-token batch, {} GPU types x counts 8..16384\n",
             o.gpu_types.size());
  double best = 1e30;
  planner::BudgetResult r;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    r = planner::budget(o);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  fmt::print("rows {} (type x count), configurations {}, plans meeting the deadline {}\n", r.rows.size(),
             r.n_candidates, r.ranked.size());
  for (const auto& t : o.gpu_types) {
    planner::BudgetOptions one = o;
    one.gpu_types = {t};
    const auto t0 = std::chrono::steady_clock::now();
    const auto rr = planner::budget(one);
    fmt::print("  {:<16} {:>8} configurations {:>7.3f} s\n", t, rr.n_candidates,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (!r.ranked.empty()) {
    const auto& w = r.rows[r.ranked.front()];
    fmt::print("cheapest: {} x {} ({}), {:.1f} days (1σ {:.1f}–{:.1f})\n", w.gpu_type, w.point.gpus,
               planner::describe_config(w.point.best.config), w.days, w.days_lo, w.days_hi);
  }
  fmt::print("target: the whole budget search in < 1 s: {} ({:.3f} s)\n", best < 1.0 ? "met" : "NOT met", best);
  return 0;
}
