#include "planner/runtime.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "shared/errors.h"

namespace shardcast::planner {

bool is_gpu(const HardwareSpec& hw) { return hw.gpu.bf16_flops > 0 || hw.gpu.fp16_flops > 0; }

const RuntimeSpec& runtime_preset(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<RuntimeSpec>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, std::make_unique<RuntimeSpec>(load_runtime(name))).first;
  return *it->second;
}

std::string runtime_refusal(const RuntimeSpec& rt, const TrainConfig& cfg, const HardwareSpec& hw) {
  const RuntimeTerms& t = rt.terms_for(is_gpu(hw));
  const auto& pr = cfg.precision;
  if (t.reduce_dtype_is_param_dtype) {
    if (pr.reduce_dtype != pr.param_dtype)
      return fmt::format("{} reduces in param_dtype ({}): precision.reduce_dtype = \"{}\" cannot be expressed", rt.name,
                         pr.param_dtype, pr.reduce_dtype);
  } else if (std::find(t.reduce_dtypes.begin(), t.reduce_dtypes.end(), pr.reduce_dtype) == t.reduce_dtypes.end()) {
    std::string allowed;
    for (const auto& d : t.reduce_dtypes) allowed += (allowed.empty() ? "" : " | ") + d;
    return fmt::format("{} accepts precision.reduce_dtype {} only, not \"{}\"", rt.name, allowed, pr.reduce_dtype);
  }
  if (pr.compile && !t.compile) return fmt::format("{} cannot run precision.compile = true", rt.name);
  if (pr.fp8 && !t.fp8) return fmt::format("{} cannot run precision.fp8 = true", rt.name);
  const AcMode ac = cfg.activation_checkpointing.mode;
  if (ac == AcMode::selective_op && !t.selective_op)
    return fmt::format("{} cannot run activation_checkpointing.mode = \"selective_op\"", rt.name);
  if (ac == AcMode::selective && !t.selective_blocks)
    return fmt::format("{} cannot run activation_checkpointing.mode = \"selective\" (every k-th block)", rt.name);
  return "";
}

PlanOptions plan_options(const RuntimeSpec& rt, const HardwareSpec& hw) {
  const RuntimeTerms& t = rt.terms_for(is_gpu(hw));
  PlanOptions o;
  o.runtime = rt.name;
  o.attention_materialized = t.attention == "eager";
  if (!parse_cross_entropy(t.cross_entropy, o.cross_entropy))
    throw ConfigError(rt.file, "terms.cross_entropy", "\"" + t.cross_entropy + "\" is not allowed");
  o.reduce_copies_gradient = t.reduce_copies_gradient;
  o.root_unit = t.root_unit;
  o.grads_freed_between_steps = t.grads_freed_between_steps;
  o.sync_every_micro_step = t.sync_every_micro_step;
  o.fp8_all_gather = t.fp8_all_gather;
  o.expandable_segments = t.expandable_segments;
  o.record_stream_buffers = t.collective_buffers == "record_stream";
  return o;
}

PlanOptions resolve_plan_options(const TrainConfig& cfg, const HardwareSpec& hw) {
  const RuntimeSpec& rt = runtime_preset(cfg.runtime);
  const std::string why = runtime_refusal(rt, cfg, hw);
  if (!why.empty()) throw ConfigError(cfg.source_file, "runtime", why);
  return plan_options(rt, hw);
}

std::string runtime_for_framework(const std::string& framework) {
  std::string f = framework;
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (f.find("torchtitan") != std::string::npos) return "torchtitan";
  if (f.find("fms-fsdp") != std::string::npos) return "fms-fsdp";
  if (f.find("llm-foundry") != std::string::npos || f.find("composer") != std::string::npos) return "llm-foundry";
  if (f.find("accelerate") != std::string::npos) return "accelerate";
  if (f.find("shardcast") != std::string::npos) return "shardcast-train";
  return "";
}

}  // namespace shardcast::planner
