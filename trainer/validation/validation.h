// validation.json: what the planner predicted for a run against what the trainer measured.
//
// What it is: make_validation() pairs the run.toml's [prediction] table with the run's
// measured summary (RunReport: medians over steady steps, peak tensor memory from the
// counting allocator, the persistent state by component); write_validation() writes
// validation.json and the resolved config (run.toml) into the run directory, so the planner
// can re-predict the run later (`shardcast calibrate --runs`); format_validation() is the
// table printed at the end of a run and by `shardcast validate RUN_DIR`.
// What it is not: the measuring (train/) or the planner's summary over many runs
// (planner/evidence/run_validation.h). No LibTorch. Pure functions, thread-safe.
#pragma once

#include <filesystem>
#include <string>

#include "shared/run_report.h"
#include "shared/train_config.h"

namespace shardcast::trainer {

// Entries: step_time_s, tokens_per_s_per_gpu, mfu, hfu, mem_peak_bytes, and each predicted
// memory component the trainer measures (mem.sharded_parameters, mem.sharded_gradients,
// mem.optimizer_states). Quantities without a prediction are left out, never zero-filled.
ValidationReport make_validation(const PredictionTable& predicted, const RunReport& measured,
                                 const std::string& run_dir);

// Fixed-width table: quantity, predicted, measured, error %.
std::string format_validation(const ValidationReport& v);

// Whether the run.toml at `run_toml` parses to exactly the config that runs (cfg as
// shardcast-train runs it): false when it is missing, not a config, or differs.
bool run_toml_holds(const std::filesystem::path& run_toml, const TrainConfig& cfg);

// Writes run_dir/validation.json and run_dir/run.toml atomically (run.toml left as it is when it
// already holds what ran: run_toml_holds).
void write_validation(const std::filesystem::path& run_dir, const ValidationReport& v, const TrainConfig& cfg);

// End of a run (rank 0): make_validation + write_validation + print the table to stdout.
void finish_run_validation(const TrainConfig& cfg, const RunReport& measured, const std::filesystem::path& run_dir);

}  // namespace shardcast::trainer
