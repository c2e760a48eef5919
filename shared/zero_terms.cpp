#include "shared/zero_terms.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "shared/errors.h"

namespace shardcast {

// Meanings cite deepspeed/runtime/zero/config.py DeepSpeedZeroConfig @38327e07f (defaults in
// brackets) and what the planner does with each (planner/model/zero_memory.h).
const std::vector<ZeroTermSchema> kZeroTerms = {
    {"contiguous_gradients", "bool",
     "[true] gradients are copied into a flat buffer as they are reduced: stage 3 keeps the IPG bucket "
     "(reduce_bucket_size elements) for the whole run; stage 1/2 allocate it at each backward and keep the "
     "gradient partition in one flat tensor (grads_in_partition)"},
    {"overlap_comm", "bool",
     "[stage 3: true, else false] reduction on a side stream during backward; stage 1/2 then allocate two IPG "
     "buffers of reduce_bucket_size elements instead of one (stage_1_and_2.py backward)"},
    {"reduce_bucket_size", "elements | \"auto\"",
     "[5e8] elements per gradient reduction bucket; \"auto\": the HF Trainer's hidden_size²"},
    {"allgather_bucket_size", "elements | \"auto\"",
     "[5e8] stage 1/2: elements per all-gather of the updated 16-bit partitions into the flat parameters "
     "(written into the flat buffer itself: no memory of its own)"},
    {"stage3_prefetch_bucket_size", "elements | \"auto\"",
     "[5e7] stage 3: elements gathered ahead of use; \"auto\": the HF Trainer's 0.9·hidden_size²"},
    {"stage3_param_persistence_threshold", "elements | \"auto\"",
     "[1e5] stage 3: parameters of at most this many elements are kept whole on every rank and never "
     "gathered; \"auto\": the HF Trainer's 10·hidden_size"},
    {"stage3_max_live_parameters", "elements | \"auto\"",
     "[1e9] stage 3: the most gathered elements kept alive before released ones are freed"},
    {"stage3_max_reuse_distance", "elements | \"auto\"",
     "[1e9] stage 3: a gathered parameter used again within this distance is not released"},
    {"sub_group_size", "elements | \"auto\"",
     "[1e9] stage 3: the optimizer step runs per sub-group of this many elements; the fp32 gradient of one "
     "sub-group exists during its step"},
};

namespace {

bool auto_filled(const std::string& key) {
  return key == "reduce_bucket_size" || key == "stage3_prefetch_bucket_size" ||
         key == "stage3_param_persistence_threshold";
}

void read_count(const toml::node& n, const std::string& file, const std::string& key, ZeroCount& out) {
  if (const auto* s = n.as_string()) {
    if (s->get() != "auto" || !auto_filled(key))
      throw ConfigError(file, "zero." + key,
                        fmt::format("\"{}\" is not allowed: a number of elements{}", s->get(),
                                    auto_filled(key) ? " or \"auto\" (the HF Trainer's fill)" : " (the HF Trainer "
                                                                                               "fills no \"auto\" here)"));
    out.is_auto = true;
    return;
  }
  if (const auto* i = n.as_integer()) {
    if (i->get() < 0) throw ConfigError(file, "zero." + key, "a number of elements is >= 0");
    out.value = i->get();
    return;
  }
  throw ConfigError(file, "zero." + key, "expected a number of elements (an integer) or \"auto\"");
}

}  // namespace

std::vector<std::string> read_zero_terms(const toml::table& zero, const std::string& file, ZeroTerms& out) {
  std::vector<std::string> given;
  auto boolean = [&](const std::string& key, const toml::node& n, bool& v) {
    if (!n.is_boolean()) throw ConfigError(file, "zero." + key, "expected true or false");
    v = n.as_boolean()->get();
  };
  for (auto&& [k, node] : zero) {
    const std::string key(k.str());
    if (key == "contiguous_gradients") boolean(key, node, out.contiguous_gradients);
    else if (key == "overlap_comm") boolean(key, node, out.overlap_comm);
    else if (key == "reduce_bucket_size") read_count(node, file, key, out.reduce_bucket_size);
    else if (key == "allgather_bucket_size") read_count(node, file, key, out.allgather_bucket_size);
    else if (key == "stage3_prefetch_bucket_size") read_count(node, file, key, out.stage3_prefetch_bucket_size);
    else if (key == "stage3_param_persistence_threshold")
      read_count(node, file, key, out.stage3_param_persistence_threshold);
    else if (key == "stage3_max_live_parameters") read_count(node, file, key, out.stage3_max_live_parameters);
    else if (key == "stage3_max_reuse_distance") read_count(node, file, key, out.stage3_max_reuse_distance);
    else if (key == "sub_group_size") read_count(node, file, key, out.sub_group_size);
    else {
      std::string allowed;
      for (const auto& s : kZeroTerms) allowed += (allowed.empty() ? "" : ", ") + std::string(s.key);
      throw ConfigError(file, "zero." + key, "unknown key; [zero] has: " + allowed);
    }
    given.push_back("zero." + key);
  }
  for (const auto& s : kZeroTerms)
    if (std::find(given.begin(), given.end(), std::string("zero.") + s.key) == given.end())
      throw ConfigError(file, std::string("zero.") + s.key,
                        fmt::format("missing: [zero] states every term ({}: {})", s.kind, s.meaning));
  return given;
}

int64_t zero_elements(const ZeroCount& c, const std::string& key, int64_t d_model) {
  if (!c.is_auto) return c.value;
  if (key == "reduce_bucket_size") return d_model * d_model;
  // HF fills 0.9 * hidden_size * hidden_size (a float); DeepSpeed's int field takes its whole part.
  if (key == "stage3_prefetch_bucket_size") return int64_t(std::floor(0.9 * double(d_model) * double(d_model)));
  if (key == "stage3_param_persistence_threshold") return 10 * d_model;
  throw ConfigError("", "zero." + key, "\"auto\" is filled by the HF Trainer only for reduce_bucket_size, "
                                       "stage3_prefetch_bucket_size and stage3_param_persistence_threshold");
}

}  // namespace shardcast
