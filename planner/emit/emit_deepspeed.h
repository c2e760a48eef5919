// The plan as DeepSpeed ZeRO runs it under the Hugging Face Trainer: ds_config.json and its
// launcher.
//
// What it is: pure renderers. render_ds_config_json writes the JSON DeepSpeed reads
// (nlohmann::json; keys of deepspeed/runtime/config.py and zero/config.py DeepSpeedZeroConfig
// at microsoft/DeepSpeed@38327e07f, kept in tests/planner/data/deepspeed_keys.txt): batch
// sizes, bf16/fp16, communication_data_type, gradient_clipping, AdamW (DeepSpeed's FusedAdam)
// and zero_optimization with the stage the sharding strategy runs (full_shard = 3,
// shard_grad_op = 2, shard_optimizer = 1) and the runtime profile's [zero] settings, "auto" filled as the HF Trainer
// fills it (so the file states what runs). Every value the HF Trainer checks against its
// arguments (integrations/deepspeed.py trainer_config_process @02348331b: batch sizes, clipping,
// lr, betas, eps, weight decay, bf16) is written, and render_deepspeed_launch passes the same
// values as the Trainer's arguments, every word through shared/emitted_text.h shell_quote.
// What it is not: the refusal of what DeepSpeed cannot run (planner/model/zero_memory.h
// zero_refusal and runtime_refusal, applied by emit.h before anything is rendered) or the
// writer (emit.h). Pure functions, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "shared/train_config.h"
#include "shared/zero_terms.h"

namespace shardcast::planner {

// ds_config.json for cfg with the runtime's ZeRO settings `z`. Precondition (ConfigError
// otherwise): zero_refusal(cfg) is "" (full_shard, shard_grad_op or shard_optimizer).
std::string render_ds_config_json(const TrainConfig& cfg, const ZeroTerms& z);

// launch_deepspeed.sh: the `deepspeed` launcher running the user's HF Trainer script (TRAIN_SCRIPT,
// e.g. transformers' examples/pytorch/language-modeling/run_clm.py) with --deepspeed
// ds_config.json and the Trainer arguments that match it; `accelerate launch` as the
// alternative in a comment. `head`: the plan's comment lines.
std::string render_deepspeed_launch(const TrainConfig& cfg, const std::string& head);

// What the files leave to the user (the model and data the Trainer script loads, the output
// folder when the plan has none): one sentence each, printed by emit on stderr.
std::vector<std::string> deepspeed_notes(const TrainConfig& cfg);

}  // namespace shardcast::planner
