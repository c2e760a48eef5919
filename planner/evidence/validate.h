// Validation against published runs: predict every in-scope row, compare with what was
// measured, and summarise (n, MAPE, median / max absolute error, 1σ) per source, per hardware
// and overall.
//
// What it is: the engine of `shardcast validate --published` and of the fitter's residuals.
// Rows are resolved against hardware presets (gpus_per_node and NIC bandwidth default to the
// preset's when the CSV leaves them empty, as the CSV's README specifies); a row whose
// gpu_type has no preset is skipped with that reason. What it is not: CSV parsing
// (published_csv.h) or printing (cli/cmd_validate.cpp). Functions are reentrant.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "planner/model/plan.h"
#include "planner/evidence/published_csv.h"

namespace shardcast::planner {

using HardwareSet = std::map<std::string, HardwareSpec>;

// One row that can be predicted: its config with the cluster completed.
struct ValidationCase {
  size_t row = 0;          // index into the rows
  TrainConfig cfg;
  std::string hardware;    // key into the HardwareSet
  PlanOptions options = {};  // the row's framework behaviour (published_csv.h)
};

// Complete the cluster of every in-scope row, loading presets into `hardware` as needed
// (load_hardware); rows that cannot be completed get a skip reason. Throws InputError (naming
// the file, row_id, line and column) for a measured figure above its plausible bound on the
// row's GPU (published_csv.h implausible_measurement).
std::vector<ValidationCase> resolve_cases(std::vector<PublishedRow>& rows, HardwareSet& hardware);

struct ValidationRowResult {
  int line = 0;
  std::string row_id, source, hardware, skip_reason;
  std::string runtime;  // runtime profile the row was predicted for (from its framework column)
  std::string fp8;      // precision.fp8 recipe it was predicted with (fp8_key)
  double predicted_tps = 0, measured_tps = 0, err_tps_pct = 0;  // tokens/s/GPU
  bool has_tps = false;
  double predicted_mfu = 0, measured_mfu = 0, err_mfu_pct = 0;
  bool has_mfu = false;
  double predicted_mem_gib = 0, measured_mem_gib = 0, err_mem_pct = 0;  // like for like
  double predicted_alloc_gib = 0, predicted_reserved_gib = 0;  // allocated peak, reserved estimate
  // Reserved with expandable_segments off and on (rows with a memory figure; 0 on CPU).
  double predicted_reserved_lo_gib = 0, predicted_reserved_hi_gib = 0;
  bool allocator_setting_stated = false;  // the row's `expandable_segments` column is filled
  // Memory error against the band: for a reserved figure of a row that does not state its
  // allocator setting, 0 inside [lo, hi] and the error of the nearer end outside it; else
  // err_mem_pct.  // %
  double err_mem_band_pct = 0;
  double predicted_device_total_gib = 0;  // reserved + outside the allocator (nvidia-smi)
  std::string mem_metric;  // what the source measured
  std::string config_notes;  // framework defaults and annotations applied to the row
  bool has_mem = false;
  bool fits = true;
  double band_rel_1sigma = 0;  // the band the planner states for this prediction  // fraction
  std::string band_note;       // what the band comes from (error_band.h)
};

struct ValidationSummary {
  std::string name;
  int n = 0;                        // rows with measured tokens/s
  double mape_tps = 0;              // %
  double median_abs_err_tps = 0;    // %
  double max_abs_err_tps = 0;       // %
  double sigma_rel_tps = 0;         // rms of (pred/meas − 1), the error band  // fraction
  double bias_tps = 0;              // mean signed error  // %
  int within_1sigma = 0, within_2sigma = 0;  // rows within 1σ / 2σ of their stated band
  int n_mem = 0;
  double mape_mem = 0;              // %
  // Memory rows predicted more than 5 % under: by err_mem_pct, and by
  // err_mem_band_pct (a reserved figure whose allocator setting the source leaves open, against
  // the range over both settings).
  int mem_under_5pct = 0, mem_under_5pct_band = 0;
};

struct ValidationResult {
  std::vector<ValidationRowResult> rows;  // every row, skipped ones with their reason
  ValidationSummary overall;
  std::vector<ValidationSummary> per_source;
  std::vector<ValidationSummary> per_hardware;
  int n_skipped = 0;
};

// Predict the cases and score them; rows not in `cases` are reported as skipped.
ValidationResult validate_cases(const std::vector<PublishedRow>& rows,
                                const std::vector<ValidationCase>& cases,
                                const HardwareSet& hardware);
ValidationSummary summarize(const std::string& name, const std::vector<const ValidationRowResult*>& rows);

void to_json(nlohmann::json& j, const ValidationResult& v);

}  // namespace shardcast::planner
