// op_profile.json and the printed table of `shardcast-train profile`: measured time per op
// category (shared/op_category.h) of profiled training steps, beside the planner's breakdown
// of the same step (`shardcast plan RUN.toml --json`, key time.ops_s) when one is given.
//
// What it is: the per-step records the recorder fills (op_recorder.h), their summary (median
// over steps per category; `other` = step − the sum of the others, per step), JSON and a
// fixed-width table, and the reader of a plan's time.ops_s. What it is not: the timing
// (op_recorder.h) or the command (profile_command.h). No LibTorch. Plain values, thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "shared/op_category.h"

namespace shardcast::trainer {

// One op name's share of a step (only outermost classified ops are counted).
struct OpNameTime {
  OpCategory category = OpCategory::other;
  double seconds = 0;  // s
  int64_t count = 0;
};

// One profiled optimizer step of one rank.
struct StepOpTimes {
  double step_s = 0;                             // wall time of the whole step  // s
  std::array<double, kOpCategories> seconds{};   // counted ops per category; `other` is 0 here  // s
  std::array<int64_t, kOpCategories> count{};    // counted ops per category
  // By (category, recorded name): one backward node name can serve several categories
  // (MulBackward0 of an RMSNorm is `norm`, of RoPE `elementwise`).
  std::map<std::pair<OpCategory, std::string>, OpNameTime> ops;
  double counted_s() const;                      // Σ seconds (the counted ops: disjoint)  // s
};

struct OpProfile {
  std::string config_file;
  std::string model;
  std::string device;        // "cpu" | "cuda:0" ...
  std::string timing;        // "wall clock (synchronous CPU ops)" | "CUDA events on the current stream"
  int world_size = 1;
  int micro_batch = 0, seq_len = 0, grad_accum = 1;
  int warmup_steps = 0;
  std::vector<StepOpTimes> steps;  // rank 0's profiled steps
  // The planner's per-category seconds of one step (time.ops_s of `shardcast plan --json`).
  std::optional<std::array<double, kOpCategories>> planned;  // s
  std::string planned_source;      // the plan file
};

// Median over the profiled steps of each category (other = step − counted, per step), and
// of the step. Requires at least one step.
struct OpProfileSummary {
  double step_s = 0;                           // s
  std::array<double, kOpCategories> seconds{}; // s
  std::array<double, kOpCategories> count{};   // ops per step (median)
  // Per category, the op names by mean seconds per step, largest first.
  std::array<std::vector<std::pair<std::string, double>>, kOpCategories> top_ops;
};
OpProfileSummary summarize(const OpProfile& p);

nlohmann::json op_profile_json(const OpProfile& p);
// category | measured ms | planned ms | measured/planned | ops/step | top ops.
std::string format_op_profile(const OpProfile& p, int top_ops = 3);

// time.ops_s of a Prediction JSON file (`shardcast plan RUN.toml --json > FILE`). Throws
// InputError naming the file and the key when it is unreadable or has no time.ops_s.
std::array<double, kOpCategories> read_planned_ops(const std::string& plan_json_path);

}  // namespace shardcast::trainer
