// bench_planner: how fast predict() and validation are (prints a table; not a test).
// Targets (docs/validation.md "Summary", speed): one 80-layer, 1024-GPU prediction < 0.1 ms; validate over
// 300 rows < 0.2 s.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "planner/evidence/predict.h"
#include "planner/model/plan.h"
#include "planner/evidence/published_csv.h"
#include "planner/evidence/validate.h"
#include "shared/config_io.h"

using namespace shardcast;
using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Case {
  std::string label, model, gpu;
  int gpus;
  ShardingStrategy strategy;
  AcMode ac;
  int micro_batch, seq_len, grad_accum;
  bool timeline;
};
}  // namespace

int main(int argc, char** argv) {
  const std::string csv = argc > 1 ? argv[1] : "";
  const std::vector<Case> cases = {
      {"llama2-70b 1024 GPU full_shard", "llama2-70b", "H100-80GB-SXM", 1024, ShardingStrategy::full_shard,
       AcMode::full, 2, 4096, 1, false},
      {"llama2-70b 1024 GPU + timeline", "llama2-70b", "H100-80GB-SXM", 1024, ShardingStrategy::full_shard,
       AcMode::full, 2, 4096, 1, true},
      {"llama2-70b 1024 GPU grad_accum 8", "llama2-70b", "H100-80GB-SXM", 1024, ShardingStrategy::full_shard,
       AcMode::full, 1, 4096, 8, false},
      {"llama2-7b 128 GPU hybrid_shard", "llama2-7b", "A100-80GB-SXM", 128, ShardingStrategy::hybrid_shard,
       AcMode::none, 2, 4096, 1, false},
  };
  fmt::print("{:<36} {:>10} {:>12} {:>10}\n", "case", "plans", "us/plan", "target");
  for (const Case& c : cases) {
    TrainConfig cfg;
    cfg.model = load_model(c.model);
    const HardwareSpec hw = load_hardware(c.gpu);
    cfg.cluster.hardware = c.gpu;
    cfg.cluster.gpus_per_node = hw.node.gpus_per_node;
    cfg.cluster.nodes = c.gpus / hw.node.gpus_per_node;
    cfg.parallelism.sharding_strategy = c.strategy;
    cfg.activation_checkpointing.mode = c.ac;
    cfg.training.micro_batch = c.micro_batch;
    cfg.training.seq_len = c.seq_len;
    cfg.training.grad_accum = c.grad_accum;
    planner::PlanOptions opt;
    opt.timeline = c.timeline;
    int n = 0;
    double sink = 0;
    const auto t0 = Clock::now();
    while (seconds_since(t0) < 0.5) {
      for (int i = 0; i < 20; ++i, ++n) sink += planner::predict(cfg, hw, opt).step_time_s;
    }
    const double us = 1e6 * seconds_since(t0) / n;
    fmt::print("{:<36} {:>10} {:>12.1f} {:>10}{}\n", c.label, n, us, &c == &cases.front() ? "< 100" : "", sink > 0 ? "" : " (?)");
  }
  if (!csv.empty()) {
    const auto t0 = Clock::now();
    auto rows = planner::read_published_csv(csv);
    planner::HardwareSet hw;
    const auto resolved = planner::resolve_cases(rows, hw);
    const auto v = planner::validate_cases(rows, resolved, hw);
    fmt::print("{:<36} {:>10} {:>12.1f} {:>10}\n", "validate " + std::to_string(rows.size()) + " rows (ms)",
               v.overall.n, 1e3 * seconds_since(t0), "< 200");
  } else {
    fmt::print("(pass configs/published/calibration.csv to time validate)\n");
  }
  return 0;
}
