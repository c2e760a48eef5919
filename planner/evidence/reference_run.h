// A reference run: one measured run of the user's own stack (the same hardware preset and
// runtime), whose measured over predicted tokens/s carries the stack's level to the planner's
// predictions of other configurations of that stack.
//
// What it is: read_reference_run() reads a run directory — the trainer's, or one `shardcast
// import` made from a torchtitan or fms-fsdp log (planner/evidence/run_validation.h) — predicts its
// config now, with the hardware spec and planner of the prediction it will serve, and keeps
// level = measured / predicted tokens/s. plan() (PlanOptions::reference_level) multiplies
// tokens/s, MFU and HFU by the level and divides the step time by it, and states the
// reference band (configs/bands.toml [reference_run]) instead of the regime's. reference_pairs()
// measures what this does on published runs: every ordered pair (a, b) of predicted rows of one
// source, hardware preset and runtime, b predicted with a as its reference, against b's
// measurement. Across sources the planner's level is off by up to ±30 % (docs/validation.md,
// "The error on runs never fitted is the sources' levels"); within one source the settings a
// run varies are predicted within a few percent: a reference run keeps the second and replaces
// the first by a measurement.
// What it is not: a fit of the model's physics (calibrate.h fits efficiency keys to runs).
// Memory is not touched: the level is the throughput's. The time components of a prediction
// (compute, communication, ops_s, the timeline) stay the model's; only the step as a whole
// takes the level.
// Functions are reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shared/hardware_spec.h"

namespace shardcast::planner {

struct ReferenceRun {
  std::string dir;
  std::string hardware;        // the run's hardware preset (HardwareSpec::name)
  std::string runtime;         // the run's runtime profile (run.toml `runtime`)
  double measured_tps = 0;     // tokens/s per GPU the run measured
  double predicted_tps = 0;    // what the planner predicts for its config now
  double level() const { return measured_tps / predicted_tps; }
};

// Reads run directory `dir` (run.toml, run_report.json) and predicts its config with `hw` and
// the options of its own runtime. `hw` and `runtime` are those of the prediction the reference
// will serve: a run of another hardware preset (by name) or another runtime is refused, as is a
// run without a measured tokens/s. Throws UsageError naming --reference-run and `dir`, for
// these and for a missing or malformed file in it.
ReferenceRun read_reference_run(const std::string& dir, const HardwareSpec& hw, const std::string& runtime);
// The same for a command that predicts several runtimes at once (emit): the run's runtime is
// not checked here; the caller applies the level to the prediction of that runtime only.
ReferenceRun read_reference_run(const std::string& dir, const HardwareSpec& hw);

// The checks read_reference_run makes, for a reference read once and serving several
// predictions (validate RUN_DIR...): UsageError unless the run was made on hardware preset
// `hw_name` / by `runtime`.
void require_hardware(const ReferenceRun& r, const std::string& hw_name);
void require_runtime(const ReferenceRun& r, const std::string& runtime);

struct PlanOptions;
// Sets opt's reference_level and reference_run (plan.h) from r: the one way a reference enters a
// prediction.
void carry_reference(const ReferenceRun& r, PlanOptions& opt);

// One predicted and measured run of a published set, as reference_pairs() groups them.
struct ReferenceRow {
  std::string source, hardware, runtime;  // the group: source_key, hardware preset, runtime profile
  double predicted_tps = 0, measured_tps = 0;
};

struct ReferencePairs {
  int64_t n_pairs = 0;  // ordered pairs (a as reference, b predicted)
  int n_groups = 0;     // groups (source, hardware, runtime) with two or more rows
  double mape = 0;      // mean |error| over the pairs  // %
  double bias = 0;      // mean error over the pairs  // %
  // The band: root of the mean over groups of each group's mean squared error, so that a source
  // with many runs (llm-foundry's 216) weighs as much as one with two.  // fraction
  double rel_1sigma = 0;
  // Pairs with |error| <= rel (a band, fraction), error = (predicted_b · level_a) / measured_b − 1
  // computed as the pair's own error is: the same count as testing every pair, in n log n.
  int64_t within(double rel) const;

  // Each group of two or more rows, for within(): its rows' levels (measured / predicted)
  // sorted ascending, and each row's predicted and measured tokens/s in input order.
  struct Group {
    std::vector<double> levels;
    std::vector<double> predicted, measured;
  };
  std::vector<Group> groups;
};

// Every ordered pair of rows of one group: b's prediction times a's measured / predicted,
// against b's measurement. Groups in first-seen order; rows with a non-positive figure skipped.
// O(n log n) in the rows (a sort per group and prefix sums), not a loop over the n² pairs: the
// sums over pairs factor through the levels (planner/evidence/reference_run.cpp); the pairs are
// counted, never listed.
ReferencePairs reference_pairs(const std::vector<ReferenceRow>& rows);

}  // namespace shardcast::planner
