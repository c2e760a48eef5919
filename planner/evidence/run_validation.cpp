// Trainer run directories: read, re-predict, compare, summarise. See run_validation.h.
#include "planner/evidence/predict.h"
#include "planner/evidence/run_validation.h"
#include "planner/evidence/run_dir.h"

#include "planner/model/runtime.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/evidence/error_band.h"
#include "planner/model/plan.h"
#include "planner/evidence/reference_run.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace fs = std::filesystem;

namespace {

double pct(double pred, double meas) { return meas != 0 ? 100.0 * (pred - meas) / meas : 0.0; }

}  // namespace


double RunComparison::err_step_pct() const { return pct(predicted_step_s, measured_step_s); }
double RunComparison::err_tps_rel() const { return measured_tps > 0 ? predicted_tps / measured_tps - 1.0 : 0.0; }
double RunComparison::err_mem_pct() const { return pct(predicted_mem_bytes, measured_mem_bytes); }
double RunComparison::err_reserved_pct() const {
  return measured_reserved_bytes > 0 ? pct(predicted_reserved_bytes, measured_reserved_bytes) : 0.0;
}

RunComparison compare_run(const RunDir& run, const HardwareSpec& hw, const ReferenceRun* reference) {
  RunComparison c;
  c.name = fs::path(run.dir).filename().string();
  if (c.name.empty()) c.name = fs::path(run.dir).parent_path().filename().string();
  c.model = run.cfg.model.name.empty() ? run.cfg.model_preset : run.cfg.model.name;
  c.strategy = to_string(run.cfg.parallelism.sharding_strategy);
  c.world_size = run.cfg.world_size();
  PlanOptions opt = resolve_plan_options(run.cfg, hw);
  if (reference) {
    require_hardware(*reference, hw.name);
    require_runtime(*reference, run.cfg.runtime);
    carry_reference(*reference, opt);
  }
  const Prediction p = predict(run.cfg, hw, opt);
  c.predicted_step_s = p.step_time_s;
  c.measured_step_s = run.report.median_step_time_s;
  c.predicted_mem_bytes = p.mem_peak_bytes;
  c.measured_mem_bytes = run.report.mem_peak_bytes;
  if (!(run.report.mem_peak_bytes > 0) && run.report.mem_reserved_peak_bytes.value_or(0) > 0) {
    // Only the reserved peak was measured (an imported torchtitan log): compare reserved.
    c.predicted_mem_bytes = p.mem_reserved_bytes;
    c.measured_mem_bytes = *run.report.mem_reserved_peak_bytes;
    c.mem_metric = "reserved";
  } else if (run.report.mem_reserved_peak_bytes.value_or(0) > 0) {
    c.predicted_reserved_bytes = p.mem_reserved_bytes;
    c.measured_reserved_bytes = *run.report.mem_reserved_peak_bytes;
  }
  c.predicted_tps = p.tokens_per_s_per_gpu;
  c.measured_tps = run.report.tokens_per_s_per_gpu;
  c.band_rel = p.error_band_rel;
  c.band_note = p.error_band_note;
  c.from_reference = reference != nullptr;
  return c;
}

RunSummary summarize_runs(const std::vector<RunComparison>& rows) {
  RunSummary s;
  for (const auto& r : rows) {
    ++s.n;
    s.mape_step += std::abs(r.err_step_pct());
    s.max_abs_step = std::max(s.max_abs_step, std::abs(r.err_step_pct()));
    s.mape_mem += std::abs(r.err_mem_pct());
    s.max_abs_mem = std::max(s.max_abs_mem, std::abs(r.err_mem_pct()));
  }
  if (s.n > 0) {
    s.mape_step /= s.n;
    s.mape_mem /= s.n;
  }
  return s;
}

}  // namespace shardcast::planner
