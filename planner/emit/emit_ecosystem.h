// The same plan for trainers users already have: torchtitan, HF accelerate, fms-fsdp.
//
// What it is: pure renderers from a TrainConfig to each tool's own names, every string from the
// config written by that format's writer — TOML by toml++'s formatter, Python string literals
// by a JSON encoder (ASCII), shell words by shared/emitted_text.h shell_quote (the override and
// argument files are one shell word per line) — after require_emittable_strings refused what
// no file can hold (a line break, a control character, bytes that are not UTF-8). The tools:
// torchtitan in its two configuration generations — v0.2.x, a TOML job config and its `--section.key=value`
// overrides (one list, two spellings; keys of torchtitan/config/job_config.py), and the current
// one, a Python Trainer.Config function chosen with `--module/--config` (keys of
// torchtitan/config/configs.py and the component configs at pytorch/torchtitan@b5bcd76c6) —
// accelerate's fsdp_config.yaml, and fms-fsdp's `--key=value` arguments. The keys each
// generation accepts are kept in tests/planner/data/torchtitan_keys_{v0.2,current}.txt.
// emit.h writes a tool's files only when the tool can run the plan as planned
// (planner/model/runtime.h runtime_refusal, the rule `plan --runtime` applies). Where a tool
// expresses part of the plan only approximately (e.g. grad accumulation in fms-fsdp, a
// selective ratio that is not 1/k in torchtitan v0.2, block-level selective in the current
// torchtitan), the file says so in a comment and uses the nearest setting that needs no more
// memory than the plan — never silently.
// What it is not: the writer (emit.h writes the files) or a parser of these formats.
// Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "shared/train_config.h"

namespace shardcast::planner {

// torchtitan's configuration generations: v0.2.1+ (TOML, v0.2.1 = 81af8833d to 238fa9953) and
// the current Python config registry (pytorch/torchtitan#2386 onwards; read at b5bcd76c6).
enum class TorchtitanVersion { v0_2, current };
std::optional<TorchtitanVersion> parse_torchtitan_version(const std::string& s);  // "0.2" | "current"
inline const char* kTorchtitanVersionNames = "0.2 | current";
// The float8 recipes generation `tv` can be configured with: v0.2 all three (recipe_name
// unset = tensorwise), current rowwise and rowwise_with_gw_hp only (tensorwise removed in
// pytorch/torchtitan#3127, 6348d93d1). `emit --from-search` searches only these.
std::vector<Fp8Recipe> torchtitan_fp8_recipes(TorchtitanVersion tv);
// The runtime generation whose files each version's are (configs/runtimes/): v0.2's TOML
// (v0.2.1 and v0.2.2, 2025-10 to 2026-02) torchtitan-2025-10; the current recipe (@b5bcd76c6)
// torchtitan.
const char* torchtitan_generation(TorchtitanVersion tv);
// Why generation `tv` cannot be configured with cfg's float8 recipe ("" = it can).
std::string torchtitan_version_refusal(const TrainConfig& cfg, TorchtitanVersion tv);

// torchtitan v0.2.1 and v0.2.2 (v0.2.0 has no [debug] table). Precondition (ConfigError
// otherwise): precision.reduce_dtype = fp32, the only mixed_precision_reduce torchtitan accepts.
std::string render_torchtitan_toml(const TrainConfig& cfg);
std::string render_torchtitan_overrides(const TrainConfig& cfg);  // one override per line
// torchtitan current: torchtitan_recipe.py, a function `shardcast_plan() -> Trainer.Config`
// derived from the flavor's registered config (llama3_8b, ...), with the launch command in its
// header. Same precondition.
std::string render_torchtitan_recipe(const TrainConfig& cfg);
std::string render_accelerate_yaml(const TrainConfig& cfg);
std::string render_fms_fsdp_args(const TrainConfig& cfg);         // one argument per line
// What fms_fsdp_args.txt leaves out and fms-fsdp then takes from its /fsx defaults (data and
// tokenizer always: fms-fsdp reads no llm.c token file; the checkpoint folders when the plan
// has none): each a sentence, written as "# NOTE:" lines in the file and by emit on stderr.
std::vector<std::string> fms_fsdp_notes(const TrainConfig& cfg);

// The configuration a framework's emitted file runs, where the file can only approximate the
// plan (each approximation is also a comment in the file): fms-fsdp reduces in the parameters'
// dtype (its mixed-precision policies), has no gradient accumulation (grad_accum micro-steps
// become grad_accum steps of one), shards hsdp within one node, runs shard_grad_op as
// full_shard and op-level checkpointing as every block; accelerate checkpoints every block for
// selective and selective_op; torchtitan v0.2 checkpoints every k-th block (k = floor(1/ratio)),
// the current generation every block for a block-level selective. emit predicts this, so the
// numbers a file carries are the run's. Other frameworks, and what a file runs as planned: cfg.
TrainConfig as_emitted(const TrainConfig& cfg, const std::string& framework, TorchtitanVersion tv);

// torchtitan flavor with these dimensions in generation `tv`, "" if none: llama3's v0.2 "8B",
// "70B", "405B", current also "1B" and "3B" (tied embeddings); for a model with model.qk_norm
// qwen3's v0.2 "0.6B" ... "32B" (torchtitan_model_name), none in the current generation.
std::string torchtitan_flavor(const ModelSpec& m, TorchtitanVersion tv);
// torchtitan's model name for m: "qwen3" for a model with per-head q/k norms (model.qk_norm,
// torchtitan/models/qwen3), else "llama3".
inline std::string torchtitan_model_name(const ModelSpec& m) { return m.qk_norm ? "qwen3" : "llama3"; }
// fms-fsdp model_variant ("llama2_7b", "llama3_8b", ...) with these dimensions, "" if none.
std::string fms_fsdp_variant(const ModelSpec& m);
// torchtitan's selective_ac_option "k" (every k-th block) for a ratio: k = floor(1/ratio), so
// at least the planned fraction of blocks is checkpointed.
int every_kth_block(double ratio);

}  // namespace shardcast::planner
