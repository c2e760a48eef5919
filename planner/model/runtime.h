// The one function that turns a runtime profile into the planner's options.
//
// What it is: resolve_plan_options(cfg, hw) loads cfg.runtime (configs/runtimes/, cached),
// checks that the runtime can run cfg (reduce dtype, compile, fp8, checkpointing mode, a given
// parallelism.sync_every_micro_step), resolves the terms that follow cfg, and
// returns the PlanOptions every command uses: plan, search, scale, emit, validate, calibrate
// and the GUI. One config and one runtime therefore give one answer whichever command asks.
// What it is not: the runtime's file format (shared/runtime_spec.h) or the cost model.
// Thread-safe: the preset cache is guarded by a mutex; the functions are otherwise pure.
#pragma once

#include <string>
#include <vector>

#include "planner/model/plan.h"
#include "shared/hardware_spec.h"
#include "shared/runtime_spec.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// A GPU profile has a 16-bit peak; a CPU profile (configs/hardware/cpu.toml) has none, and
// only shardcast-train's Gloo path runs there.
bool is_gpu(const HardwareSpec& hw);

// The runtime preset by name, read once per process (ConfigError for an unknown name).
const RuntimeSpec& runtime_preset(const std::string& name);

// The runtime's attention is F.scaled_dot_product_attention (term attention = "flash"), whose
// backend (flash or cuDNN: term cudnn_attention, or a published row's column) the GPU decides.
bool runs_sdpa(const RuntimeTerms& t);

// Which of the precision keys that have a runtime default the user gave (a flag, a run.toml
// key, a form of shardcast-gui). A key not given takes the runtime's own value.
struct PrecisionKeysGiven {
  bool reduce_dtype = false;
  bool master_dtype = false;
};

// The precision keys cfg leaves unset, as rt runs them when its own config does not say:
// - reduce_dtype: its profile's reduce_dtype_default, fp32 or, for a 16-bit default or a runtime
//   that always reduces in param_dtype, the parameters' dtype (so fp32 over fp32 parameters);
// - master_dtype: its profile's master_dtype_default over bf16 parameters; fp32 over others
//   (pure bf16 needs bf16 parameters, and a runtime that runs bf16 only then refuses).
// A given key is never replaced; a given value the runtime cannot run is refused by
// runtime_refusal. Every command that builds a config from a user's words calls it once, after
// the runtime and the parameters' dtype are known (plan, emit and import from flags or
// run.toml, search and scale, the GUI's form).
void take_runtime_precision(TrainConfig& cfg, const RuntimeSpec& rt, const HardwareSpec& hw,
                            PrecisionKeysGiven given);
// The same with the runtime's terms for the hardware already chosen (the published reader, whose
// rows run on GPUs: terms_for(true)).
void take_runtime_precision(TrainConfig& cfg, const RuntimeTerms& t, PrecisionKeysGiven given);

// Why `rt` cannot run cfg on hw ("" = it can): e.g. "torchtitan accepts reduce_dtype fp32 only".
std::string runtime_refusal(const RuntimeSpec& rt, const TrainConfig& cfg, const HardwareSpec& hw);

// Why rt cannot run on hw's kind of device (RuntimeSpec::devices; "" = it can). Part of
// runtime_refusal; search asks it too.
std::string devices_refusal(const RuntimeSpec& rt, const HardwareSpec& hw);

// Why rt (terms t) cannot run cfg's precision.master_dtype ("" = it can). Part of
// runtime_refusal; search asks it of its base config.
std::string master_dtype_refusal(const RuntimeSpec& rt, const RuntimeTerms& t, const TrainConfig& cfg);

// Why rt (terms t) cannot run cfg's optimizer.state_dtype (term optimizer_state_dtypes; "" = it
// can). Part of runtime_refusal; search asks it of its base config.
std::string optimizer_state_dtype_refusal(const RuntimeSpec& rt, const RuntimeTerms& t, const TrainConfig& cfg);
// Why bf16 moments cannot run beside an AdamW update `update` (adamw_update's value: only
// "fused" runs them); "" where cfg keeps the master dtype's moments or the update is fused. The
// profile's own pair is checked when the profile is read (runtime_spec.cpp); this one serves a
// published row's adamw_update column.
std::string bf16_moments_update_refusal(const std::string& runtime, const TrainConfig& cfg, const std::string& update);

// Why rt (terms t) cannot run cfg's parallelism.sync_every_micro_step ("" = it can: the key
// is unset, the runtime follows the config, or the value is the runtime's fixed one). Part of
// runtime_refusal; search asks it of its base config.
std::string sync_every_micro_step_refusal(const RuntimeSpec& rt, const RuntimeTerms& t, const TrainConfig& cfg);

// The value of a term that may follow run.toml (RuntimeTerms::from_config): the config's
// parallelism.sync_every_micro_step where the runtime says "config" (unset: true), else the
// runtime's fixed value. No check: runtime_refusal refuses a given value a runtime cannot run.
bool sync_every_micro_step(const RuntimeTerms& t, const TrainConfig& cfg);

// The options for rt's terms on hw, the terms that follow the config taken from cfg (no
// check of cfg).
PlanOptions plan_options(const RuntimeSpec& rt, const HardwareSpec& hw, const TrainConfig& cfg);

// runtime_preset(cfg.runtime), checked against cfg (ConfigError naming `runtime` and the
// refused key), as PlanOptions. The one entry point of every command.
PlanOptions resolve_plan_options(const TrainConfig& cfg, const HardwareSpec& hw);

// The runtime a published row's `framework` column and `framework_date` (the commit date of
// the framework version it ran, "YYYY-MM-DD" or "YYYY-MM"; "" = not stated) choose. The
// framework is the first one the column names, case-insensitively, of the presets' frameworks
// (RuntimeSpec::framework: "torchtitan (FSDP2)" -> torchtitan, "OLMo-core @..." -> olmo-core,
// "atorch (dlrover) ..." -> atorch), "Composer" naming llm-foundry and "shardcast"
// shardcast-train; among the runtime presets of that framework the one whose
// [from_date, until_date) holds the date, or, without a date, the newest (no until_date):
// e.g. torchtitan + 2024-04-24 -> torchtitan-2024-04. "" when no framework matches.
// InputError for a malformed date or a date no generation covers.
std::string runtime_for_framework(const std::string& framework, const std::string& date = "");

// The runtime presets that are generations of `framework` (RuntimeSpec::framework), sorted by
// from_date.
std::vector<std::string> runtime_generations(const std::string& framework);

}  // namespace shardcast::planner
