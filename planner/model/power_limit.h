// Power limit: the tensor-core clock of a GPU held below its rated board power.
//
// What it is: the one place that turns a board power limit (nvidia-smi -pl; a preset's default,
// run.toml cluster.power_limit_w, --power-limit-w, a published row's power_limit_w) into the
// factor by which the GPU's compute rates fall: the SM clock under dynamic voltage and
// frequency scaling, f ∝ P^e, so the factor is (limit / board power)^e (docs/cost-model.md
// §2.4). e is the slope of the preset's own datasheet curve where it states the same silicon
// rated at a lower board power (gpu.lower_power_rating_w: B100 at 700 W for B200), else 1/3,
// the cube-root law (P_dynamic ∝ C·V²·f with V ∝ f). What it is not: a power or energy
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
  double exponent = 1.0 / 3;  // e of clock ∝ power^e: the preset's datasheet curve, else 1/3
  bool from_preset = true; // the limit is the preset's default, not the config's
};

// Lowest limit the clock law is used for, as a fraction of the board power: below it the
// static (leakage) power the law leaves out is no longer small against the dynamic power, and
// the datasheet ratings it is checked on (H100 NVL at 400 W of the SXM part's 700 W, 0.57; B100
// at 700 W of B200's 1000 W, 0.7) lie above it.
inline constexpr double kMinPowerFraction = 0.5;

// What a power limit does, in the words every flag and field that sets one uses.
inline constexpr char kPowerLimitEffect[] =
    "compute rates fall as (limit / board power)^e: e = 1/3, or the slope of the preset's two datasheet ratings "
    "(gpu.lower_power_rating_w); docs/cost-model.md §2.4";

// The exponent e of clock ∝ power^e on this GPU: ln(lower_power_bf16 / bf16) / ln(lower_power_w /
// board_w) when the preset states a lower-power rating of the same silicon (in (0, 1], checked
// when the preset is read), else 1/3.
double power_clock_exponent(const GpuSpec& gpu);

// (limit / board)^exponent; limit == board gives exactly 1. Asserts 0 < limit <= board and
// 0 < exponent <= 1.
double clock_scale_at(double limit_w, double board_w, double exponent = 1.0 / 3);

// The limit cfg runs at on hw: cfg.cluster.power_limit_w when > 0, else the preset's
// gpu.power_limit_w, else its board power. Throws ConfigError naming the key when a limit is
// given for a preset without gpu.board_power_w, above the board power, or below
// kMinPowerFraction of it.
PowerLimit resolve_power_limit(const TrainConfig& cfg, const HardwareSpec& hw);

// ", power limit 700 of 1000 W (compute x0.888)" when the limit is below the board power, else
// "": the clause the search and scale headers print after the hardware.
std::string power_limit_note(const PowerLimit& p);

}  // namespace shardcast::planner
