// predict(): a plan with what the evidence says of it — the cost model's Prediction
// (model/plan.h) plus the error band of its regime and, when the options name a reference run,
// that run's measured level.
//
// What it is: the one call every command, the GUI and the validators use to answer "how fast,
// how much memory, and how sure". plan() stays the cost model alone; the band (configs/
// bands.toml, written by cross-validation over published runs: error_band.h) and the reference
// level (reference_run.h) are evidence about the model, so they are applied here, after it.
// What it is not: the cost model (model/) or a search. Pure, thread-safe: the shipped bands are
// read once under error_band.h's cache.
#pragma once

#include "planner/model/plan.h"
#include "shared/hardware_spec.h"
#include "shared/prediction.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// Set p's error band from the configuration's regime (choose_band over the shipped bands, or
// the preset's prior efficiency.error_band_rel for hardware no published run measured); with
// opt.reference_level > 0, scale the step by the reference run's level (tokens/s, MFU and HFU
// times it, step and host-bound time divided by it) and take the reference band.
// Throws ConfigError naming bands.toml when a reference run is asked for and no reference band
// was written.
void apply_evidence(Prediction& p, const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt);

// plan() then apply_evidence().
Prediction predict(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt = {});

}  // namespace shardcast::planner
