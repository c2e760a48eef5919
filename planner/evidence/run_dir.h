// A run directory read back: run.toml (the resolved config the trainer wrote), run_report.json
// (measured: median step time over steady steps, tokens/s per rank, peak tensor bytes per rank
// from the counting allocator) and validation.json if present (the trainer's comparison with the
// [prediction] table it was given). A shardcast-train run directory, or one `shardcast import`
// made from another trainer's log.
//
// What it is not: the comparison with a prediction (run_validation.h) or a reference run's level
// (reference_run.h); both read run directories through this. Reentrant; the caller owns the
// RunDir it gets.
#pragma once

#include <string>

#include "shared/run_report.h"
#include "shared/train_config.h"

namespace shardcast::planner {

struct RunDir {
  std::string dir;
  TrainConfig cfg;
  RunReport report;
  bool has_validation = false;
  ValidationReport validation;
};

// Throws InputError naming the file for a missing or malformed run.toml / run_report.json /
// validation.json.
RunDir read_run_dir(const std::string& dir);

}  // namespace shardcast::planner
