// scale(): capacity planning — the best configuration at each GPU count from `from` to `to`.
//
// What it is: one search() (search.h) per GPU count at a fixed global batch, and what follows
// from its winner: total tokens/s, days and GPU-hours to train a token budget, scaling
// efficiency against the smallest count, where communication stops hiding behind compute, and
// flags where the global batch forces micro-batch 1, changes gradient accumulation, or cannot
// be met at all (then the smallest batch the count allows is used: micro-batch 1, no
// accumulation, and the point says so). With a reliability profile, each winner's goodput
// (goodput.h: interruptions, checkpoint saves, restarts), days with failures and the
// recommended checkpoint interval, and a flag where goodput falls below a threshold.
// What it is not: the cost model (plan.h) or output formatting (cmd_scale.cpp).
// Threading: each search() uses worker threads; progress is called from the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/decide/goodput.h"
#include "planner/decide/search.h"

namespace shardcast::planner {

struct ScaleOptions {
  SearchSpace space;               // model, hardware, axes; `gpus` is overwritten per count
  int from = 8;                    // smallest GPU count
  int to = 1024;                   // largest GPU count
  // Explicit GPU counts (sorted, de-duplicated); empty = scale_counts(from, to, gpus_per_node).
  std::vector<int> counts;
  double tokens = 2e12;            // training budget  // tokens
  // Global batch per optimizer step  // tokens. 0 = any (each count picks its own).
  int64_t global_batch_tokens = int64_t(4) << 20;
  // Communication counts as no longer hidden when exposed time exceeds this fraction of the step.
  double exposed_threshold = 0.05;
  // Failures and checkpoints (goodput.h). Absent: goodput is 1 and days_with_failures = days.
  std::optional<ReliabilitySpec> reliability;
  // Goodput below this is flagged "goodput<T". 0.9: Llama 3 405B kept > 90% effective training
  // time on 16,384 H100 (configs/reliability/default.toml), so below it a run loses more to
  // failures than a well-run large job does.
  double goodput_threshold = 0.9;
};

struct ScalePoint {
  int gpus = 0;
  int nodes = 0;
  bool feasible = false;           // some configuration fits (best is meaningless otherwise)
  Candidate best;
  double total_tokens_per_s = 0;   // tokens/s over all GPUs
  double days = 0;                 // to train `tokens`  // days
  double gpu_hours = 0;            // gpus · hours
  Goodput goodput;                 // of `best` (goodput 1 without a reliability profile)
  double days_with_failures = 0;   // days / goodput  // days
  double gpu_hours_with_failures = 0;  // gpus · wall hours with failures
  bool goodput_low = false;        // goodput < goodput_threshold
  double scaling_efficiency = 0;   // tokens/s/GPU here ÷ tokens/s/GPU at the smallest feasible count
  double exposed_fraction = 0;     // exposed communication / step time
  bool comm_exposed = false;       // exposed_fraction > exposed_threshold
  bool batch_met = true;           // the global batch target is met within tolerance
  int64_t global_batch_tokens = 0; // the winner's tokens per step
  // Space-separated: mb1, ga:4->2, batch>target or batch<target, batch-wall:tp2 or mesh:tp2, comm-exposed,
  // goodput<0.9, no-fit.
  std::string flags;
  int64_t n_candidates = 0;        // configurations searched at this count
};

// GPU counts from `from` to `to`: powers of two below one node, then whole nodes doubling
// (gpn, 2·gpn, 4·gpn, ...); with 8 GPUs per node these are the powers of two 8, 16, ...
// `from` and `to` themselves are included when they are valid counts (whole nodes above one).
std::vector<int> scale_counts(int from, int to, int gpus_per_node);

// Throws UsageError for an empty range or a count that is not a whole number of nodes.
// progress(fraction) is called from the calling thread.
std::vector<ScalePoint> scale(const ScaleOptions& opt, const HardwareSpec& hw,
                              const std::function<void(double)>& progress = {});

}  // namespace shardcast::planner
