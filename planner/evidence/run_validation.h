// Validation of the trainer's own runs: read run directories, re-predict each run with the
// planner, and compare with what the trainer measured; summary over several runs.
//
// What it is: compare_run() takes a run directory read by read_run_dir() (run_dir.h) and predicts the
// run now for its runtime (run.toml's `runtime`, resolve_plan_options) with a hardware profile (default: the run's own) so a re-calibrated profile can be
// judged on old runs.
// What it is not: published-run validation (validate.h) or fitting (calibrate.h). Functions
// are reentrant; they print nothing (planner/cli/run_dirs_report.h prints).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "planner/evidence/run_dir.h"
#include "planner/model/plan.h"
#include "shared/hardware_spec.h"
#include "shared/run_report.h"
#include "shared/train_config.h"

namespace shardcast::planner {

struct RunComparison {
  std::string name;            // run directory's last component
  std::string model, strategy;
  int world_size = 0;
  double predicted_step_s = 0, measured_step_s = 0;        // s
  double predicted_mem_bytes = 0, measured_mem_bytes = 0;  // peak bytes per rank, of mem_metric
  // Which peak is compared: "allocated" (the trainer's counting allocator, torch's max allocated)
  // or "reserved" when the run measured only the allocator's reserved peak (imported logs).
  std::string mem_metric = "allocated";
  // Max reserved besides max allocated, when the run measured both (the trainer on a GPU: the
  // CUDA caching allocator's reserved peak); both 0 otherwise.  // bytes per rank
  double predicted_reserved_bytes = 0, measured_reserved_bytes = 0;
  double predicted_tps = 0, measured_tps = 0;              // tokens/s per rank
  // The 1σ band plan() states for this prediction (Prediction::error_band_rel) and what it
  // comes from; with a reference run, the reference band.  // fraction
  double band_rel = 0;
  std::string band_note;
  bool from_reference = false;  // tokens/s carried from a reference run (memory is not)
  double err_tps_rel() const;   // predicted / measured tokens/s − 1, what the band is of  // fraction
  double err_step_pct() const;
  double err_mem_pct() const;
  double err_reserved_pct() const;  // 0 when reserved was not measured
};

// reference (may be null): a reference run (reference_run.h) whose level the prediction carries;
// one of another GPU type or runtime than the run's is refused (UsageError).
struct ReferenceRun;
RunComparison compare_run(const RunDir& run, const HardwareSpec& hw, const ReferenceRun* reference = nullptr);

struct RunSummary {
  int n = 0;
  double mape_step = 0, max_abs_step = 0;  // %
  double mape_mem = 0, max_abs_mem = 0;    // %
};
RunSummary summarize_runs(const std::vector<RunComparison>& rows);

}  // namespace shardcast::planner
