// torchtitan's v0.2.x TOML job config, read for what it says about a run's plan.
//
// What it is: read_torchtitan_job_toml() takes the keys of a v0.2.x job config
// (torchtitan/config/job_config.py at pytorch/torchtitan@e61f2cce4 .. 238fa9953; the key list is
// tests/planner/data/torchtitan_keys_v0.2.txt) that decide memory and time: [model] name/flavor
// and converters, [training] local_batch_size/global_batch_size/seq_len/steps/max_norm/
// mixed_precision_param/mixed_precision_reduce, [parallelism] data_parallel_shard_degree/
// data_parallel_replicate_degree/fsdp_reshard_after_forward and the mesh (tensor_parallel_degree,
// enable_async_tensor_parallel, disable_loss_parallel, context_parallel_degree,
// context_parallel_rotate_method, pipeline_parallel_degree, pipeline_parallel_schedule,
// pipeline_parallel_microbatch_size, pipeline_parallel_layers_per_stage; expert parallelism
// above 1 is refused), [activation_checkpoint] mode/
// selective_ac_option, [compile] enable/components, [optimizer] lr/eps/weight_decay/implementation,
// [lr_scheduler] warmup_steps. Every other key is listed in `ignored` (it does not change the
// plan, or the planner does not model it). The world size is not in the file (torchrun's
// NGPU), so the caller resolves degrees of -1 and the gradient accumulation.
// What it is not: the current Python-config generation (a Trainer.Config function cannot be
// read without running it) or a validator of torchtitan's own rules. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/model/optimizer_step.h"

namespace shardcast::planner {

struct TorchtitanJob {
  std::string file;
  std::string model_name, flavor;           // [model] name, flavor
  std::string model_preset;                 // the shardcast preset with these dimensions
  std::optional<int> local_batch_size, global_batch_size, seq_len, steps;
  std::optional<int> dp_shard, dp_replicate;  // -1 = leftover ranks (shard only)
  // The rest of the mesh ([parallelism], job_config.py Parallelism at e61f2cce4): degrees,
  // async TP, the pipeline's schedule (torchtitan's names, as run.toml's), micro-batch size and
  // layers per stage, CP's rotate method.
  std::optional<int> tp, cp, pp;
  std::optional<bool> tp_async, disable_loss_parallel;
  std::optional<std::string> pp_schedule, cp_rotate;
  std::optional<int> pp_microbatch_size, pp_layers_per_stage;
  std::optional<std::string> reshard_after_forward;  // default | always | never
  std::optional<std::string> ac_mode, selective_ac_option;
  std::optional<std::string> param_dtype, reduce_dtype;  // shardcast spelling (bf16, fp32)
  // training.dtype (full bf16 training from e99e16c91, 2025-09-16): bf16 keeps parameters,
  // gradients and AdamW states in bf16 with no fp32 copy (precision.master_dtype = bf16).
  std::optional<std::string> master_dtype;
  std::optional<double> max_norm, lr, eps, weight_decay;
  // [optimizer] implementation (torchtitan's "for-loop" | "foreach" | "fused").
  std::optional<AdamwUpdate> adamw_update;
  std::optional<int> warmup_steps;
  bool compile = false;              // [compile] enable
  // [compile] components lists "model" (absent: torchtitan's default ["model", "loss"]).
  bool compile_model_listed = true;
  // precision.fp8: "" = no float8 converter; else the recipe ([quantize.linear.float8]
  // recipe_name, or [float8] recipe_name before v0.2; absent = tensorwise, torchao's default).
  std::string fp8;
  std::vector<std::string> ignored;         // section.key present but not used
};

// ConfigError naming the file and key for a syntax error, a wrong type, a value outside
// torchtitan's allowed set, or a model without a shardcast preset.
TorchtitanJob read_torchtitan_job_toml(const std::string& path);
TorchtitanJob parse_torchtitan_job_toml(const std::string& text, const std::string& file);

}  // namespace shardcast::planner
