// The same plan for trainers users already have: torchtitan, HF accelerate, fms-fsdp.
//
// What it is: pure renderers from a TrainConfig to each tool's own names (users_ecosystem.md
// §2.3–2.5): torchtitan's TOML job config and its `--section.key=value` overrides (one list,
// two spellings), accelerate's fsdp_config.yaml, and fms-fsdp's `--key=value` arguments.
// Where a tool cannot express part of the plan (e.g. grad accumulation in fms-fsdp, a
// selective ratio that is not 1/k in torchtitan), the file says so in a comment and uses the
// nearest setting that needs no more memory than the plan — never silently.
// What it is not: the writer (emit.h writes the files) or a parser of these formats.
// Pure functions, thread-safe.
#pragma once

#include <string>

#include "shared/train_config.h"

namespace shardcast::planner {

std::string render_torchtitan_toml(const TrainConfig& cfg);
std::string render_torchtitan_overrides(const TrainConfig& cfg);  // one override per line
std::string render_accelerate_yaml(const TrainConfig& cfg);
std::string render_fms_fsdp_args(const TrainConfig& cfg);         // one argument per line

// torchtitan llama3 flavor ("8B", "70B", "405B") with these dimensions, "" if none.
std::string torchtitan_flavor(const ModelSpec& m);
// fms-fsdp model_variant ("llama2_7b", "llama3_8b", ...) with these dimensions, "" if none.
std::string fms_fsdp_variant(const ModelSpec& m);
// torchtitan's selective_ac_option "k" (every k-th block) for a ratio: k = floor(1/ratio), so
// at least the planned fraction of blocks is checkpointed.
int every_kth_block(double ratio);

}  // namespace shardcast::planner
