#include "shared/hardware_spec.h"

#include <iterator>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "shared/closest_match.h"
#include "shared/errors.h"

namespace shardcast {

double HardwareSpec::peak_flops(const std::string& dtype) const {
  double v = -1;
  if (dtype == "bf16") v = gpu.bf16_flops;
  else if (dtype == "fp16") v = gpu.fp16_flops;
  else if (dtype == "fp32") v = gpu.fp32_flops;
  else if (dtype == "fp8") v = gpu.fp8_flops;
  else throw ConfigError(file.empty() ? name : file, "", "unknown dtype '" + dtype + "' (allowed: bf16, fp16, fp32, fp8)");
  if (v <= 0)
    throw ConfigError(file.empty() ? name : file, "gpu." + dtype + "_tflops",
                      "hardware '" + name + "' has no " + dtype + " peak in its preset");
  return v;
}

void check_efficiency_key(const std::string& key, const std::string& file) {
  const std::vector<std::string> keys(std::begin(kEfficiencyKeys), std::end(kEfficiencyKeys));
  for (const auto& k : keys)
    if (k == key) return;
  std::string detail = "unknown cost-model parameter";
  const std::string near = closest_match(key, keys);
  if (!near.empty()) detail += fmt::format("; did you mean 'efficiency.{}'?", near);
  detail += fmt::format(" (allowed: {}; docs/cost-model.md)", fmt::join(keys, " | "));
  throw ConfigError(file, "efficiency." + key, detail);
}

double HardwareSpec::efficiency_param(const std::string& key) const {
  auto it = efficiency.find(key);
  if (it == efficiency.end())
    throw ConfigError(file.empty() ? name : file, "efficiency." + key,
                      "missing cost-model parameter (see docs/cost-model.md)");
  return it->second;
}

}  // namespace shardcast
