#include "planner/model/power_limit.h"

#include <cassert>
#include <cmath>

#include <fmt/format.h>

#include "shared/errors.h"

namespace shardcast::planner {

double power_clock_exponent(const GpuSpec& gpu) {
  if (gpu.lower_power_rating_w <= 0) return 1.0 / 3;
  return std::log(gpu.lower_power_bf16_flops / gpu.bf16_flops) / std::log(gpu.lower_power_rating_w / gpu.board_power_w);
}

double clock_scale_at(double limit_w, double board_w, double exponent) {
  assert(limit_w > 0 && limit_w <= board_w);
  assert(exponent > 0 && exponent <= 1 + 1e-12);
  if (limit_w == board_w) return 1.0;
  return exponent == 1.0 / 3 ? std::cbrt(limit_w / board_w) : std::pow(limit_w / board_w, exponent);
}

PowerLimit resolve_power_limit(const TrainConfig& cfg, const HardwareSpec& hw) {
  PowerLimit p;
  p.board_w = hw.gpu.board_power_w;
  const double given = cfg.cluster.power_limit_w;
  const std::string preset = hw.file.empty() ? hw.name : hw.file;
  if (p.board_w <= 0) {
    if (given > 0)
      throw ConfigError(cfg.source_file, "cluster.power_limit_w",
                        fmt::format("{} W cannot be modelled: hardware preset {} states no gpu.board_power_w "
                                    "(the power its peaks are rated at)", given, preset));
    return p;  // no power model: rates as rated
  }
  p.from_preset = given <= 0;
  p.limit_w = given > 0 ? given : hw.gpu.power_limit_w > 0 ? hw.gpu.power_limit_w : p.board_w;
  const std::string key = p.from_preset ? "gpu.power_limit_w" : "cluster.power_limit_w";
  const std::string& file = p.from_preset ? preset : cfg.source_file;
  if (p.limit_w > p.board_w)
    throw ConfigError(file, key,
                      fmt::format("{} W is above the board power of {} ({} W, gpu.board_power_w): a limit cannot "
                                  "raise the rated peaks", p.limit_w, hw.name, p.board_w));
  if (p.limit_w < kMinPowerFraction * p.board_w)
    throw ConfigError(file, key,
                      fmt::format("{} W is below {} W, half of {}'s board power: the clock model (docs/cost-model.md "
                                  "§2.4) is not used there", p.limit_w,
                                  kMinPowerFraction * p.board_w, hw.name));
  p.exponent = power_clock_exponent(hw.gpu);
  p.clock_scale = clock_scale_at(p.limit_w, p.board_w, p.exponent);
  return p;
}

std::string power_limit_note(const PowerLimit& p) {
  if (p.board_w <= 0 || p.limit_w >= p.board_w) return "";
  return fmt::format(", power limit {:.0f} of {:.0f} W (compute x{:.3f})", p.limit_w, p.board_w, p.clock_scale);
}

}  // namespace shardcast::planner
