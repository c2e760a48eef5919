// Power limit: the tensor-core clock of a GPU held below its rated board power.
//
// What it is: the one place that turns a board power limit (nvidia-smi -pl; a preset's default,
// run.toml cluster.power_limit_w, --power-limit-w, a published row's power_limit_w) into the
// factor by which the GPU's compute rates fall: the SM clock under dynamic voltage and
// frequency scaling, f ∝ P^(1/3) (P_dynamic ∝ C·V²·f with V ∝ f), so the factor is
// (limit / board power)^(1/3) (docs/cost-model.md §2.4). What it is not: a power or energy
// model — HBM bandwidth, links and memory are unchanged, and the MFU a plan reports stays
// against the rated peak. Pure functions, thread-safe.
#pragma once

#include <string>

#include "shared/hardware_spec.h"
#include "shared/train_config.h"

namespace shardcast::planner {

struct PowerLimit {
  double limit_w = 0;      // the limit the GPU runs at; 0 = the preset states no board power  // W
  double board_w = 0;      // the board power the preset's peaks are rated at  // W
  double clock_scale = 1;  // compute rates at the limit / at the board power, in (0, 1]
  bool from_preset = true; // the limit is the preset's default, not the config's
};

// Lowest limit the cube-root law is used for, as a fraction of the board power: below it the
// static (leakage) power the law leaves out is no longer small against the dynamic power, and
// the only datasheet check (H100 NVL at 400 W of the SXM part's 700 W, 0.57) lies above it.
inline constexpr double kMinPowerFraction = 0.5;

// (limit / board)^(1/3); limit == board gives exactly 1. Asserts 0 < limit <= board.
double clock_scale_at(double limit_w, double board_w);

// The limit cfg runs at on hw: cfg.cluster.power_limit_w when > 0, else the preset's
// gpu.power_limit_w, else its board power. Throws ConfigError naming the key when a limit is
// given for a preset without gpu.board_power_w, above the board power, or below
// kMinPowerFraction of it.
PowerLimit resolve_power_limit(const TrainConfig& cfg, const HardwareSpec& hw);

// ", power limit 700 of 1000 W (compute x0.888)" when the limit is below the board power, else
// "": the clause the search and scale headers print after the hardware.
std::string power_limit_note(const PowerLimit& p);

}  // namespace shardcast::planner
