#include "shared/hardware_spec.h"

#include <stdexcept>

#include "shared/errors.h"

namespace shardcast {

double HardwareSpec::peak_flops(const std::string& dtype) const {
  double v = -1;
  if (dtype == "bf16") v = gpu.bf16_flops;
  else if (dtype == "fp16") v = gpu.fp16_flops;
  else if (dtype == "fp32") v = gpu.fp32_flops;
  else if (dtype == "fp8") v = gpu.fp8_flops;
  else throw std::invalid_argument("unknown dtype '" + dtype + "' (allowed: bf16, fp16, fp32, fp8)");
  if (v <= 0)
    throw std::invalid_argument("hardware '" + name + "' has no " + dtype + " peak in its preset");
  return v;
}

double HardwareSpec::efficiency_param(const std::string& key) const {
  auto it = efficiency.find(key);
  if (it == efficiency.end())
    throw ConfigError(file.empty() ? name : file, "efficiency." + key,
                      "missing cost-model parameter (see docs/cost-model.md)");
  return it->second;
}

}  // namespace shardcast
