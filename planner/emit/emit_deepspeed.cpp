#include "planner/emit/emit_deepspeed.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/model/zero_memory.h"
#include "shared/emitted_text.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {

// A float as Python's and JSON's shortest round-trip decimal ("0.0003", "1.0").
std::string real(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// The HF Trainer's lr_scheduler_type for the plan's decay (transformers SchedulerType), and its
// kwargs: cosine_with_min_lr takes min_lr_rate (= lr_schedule.min_lr_factor).
struct HfSchedule {
  std::string type;
  std::string kwargs_json;  // "" = none
  std::string note;         // what the Trainer's schedule does not express ("" = none)
};
HfSchedule hf_schedule(const TrainConfig& c) {
  const auto& s = c.lr_schedule;
  if (s.decay == "cosine")
    return {"cosine_with_min_lr", nlohmann::json{{"min_lr_rate", s.min_lr_factor}}.dump(), ""};
  if (s.decay == "linear")
    return {"linear", "",
            fmt::format("the HF Trainer's linear schedule decays to 0, not to min_lr_factor {:g} of lr", s.min_lr_factor)};
  return {"constant_with_warmup", "", ""};
}

}  // namespace

std::string render_ds_config_json(const TrainConfig& c, const ZeroTerms& z) {
  if (std::string why = zero_refusal(c); !why.empty()) throw ConfigError(c.source_file, "parallelism.sharding_strategy", why);
  const int stage = zero_stage(c);
  const int64_t d = c.model.d_model;
  const auto count = [&](const ZeroCount& n, const char* key) { return zero_elements(n, key, d); };
  nlohmann::ordered_json j;
  j["train_micro_batch_size_per_gpu"] = c.training.micro_batch;
  j["gradient_accumulation_steps"] = c.training.grad_accum;
  j["train_batch_size"] = int64_t(c.training.micro_batch) * c.training.grad_accum * c.world_size();
  j["gradient_clipping"] = c.training.max_grad_norm;
  j["steps_per_print"] = std::max(1, c.metrics.log_freq);
  j["wall_clock_breakdown"] = false;
  const auto& pr = c.precision;
  j["bf16"] = {{"enabled", pr.param_dtype == "bf16"}};
  j["fp16"] = {{"enabled", pr.param_dtype == "fp16"}};
  // runtime/config.py get_communication_data_type: unset = the model's dtype.
  if (pr.reduce_dtype != pr.param_dtype) j["communication_data_type"] = pr.reduce_dtype;
  // engine.py _configure_basic_optimizer: type AdamW -> FusedAdam(adam_w_mode=True).
  j["optimizer"] = {{"type", "AdamW"},
                    {"params",
                     {{"lr", c.optimizer.lr},
                      {"betas", {c.optimizer.beta1, c.optimizer.beta2}},
                      {"eps", c.optimizer.eps},
                      {"weight_decay", c.optimizer.weight_decay}}}};
  nlohmann::ordered_json zo;
  zo["stage"] = stage;
  zo["contiguous_gradients"] = z.contiguous_gradients;
  zo["overlap_comm"] = z.overlap_comm;
  zo["reduce_bucket_size"] = count(z.reduce_bucket_size, "reduce_bucket_size");
  if (stage <= 2) {  // stages 1 and 2: DeepSpeedZeroOptimizer (stage_1_and_2.py)
    zo["reduce_scatter"] = true;
    zo["allgather_partitions"] = true;
    zo["allgather_bucket_size"] = count(z.allgather_bucket_size, "allgather_bucket_size");
  } else {
    zo["stage3_prefetch_bucket_size"] = count(z.stage3_prefetch_bucket_size, "stage3_prefetch_bucket_size");
    zo["stage3_param_persistence_threshold"] =
        count(z.stage3_param_persistence_threshold, "stage3_param_persistence_threshold");
    zo["stage3_max_live_parameters"] = count(z.stage3_max_live_parameters, "stage3_max_live_parameters");
    zo["stage3_max_reuse_distance"] = count(z.stage3_max_reuse_distance, "stage3_max_reuse_distance");
    zo["sub_group_size"] = count(z.sub_group_size, "sub_group_size");
    zo["stage3_gather_16bit_weights_on_model_save"] = true;
  }
  j["zero_optimization"] = zo;
  return j.dump(2) + "\n";
}

std::vector<std::string> deepspeed_notes(const TrainConfig& c) {
  std::vector<std::string> n;
  n.push_back(fmt::format(
      "MODEL_NAME_OR_PATH and TRAIN_FILE come from the environment: the HF Trainer script loads a Hugging Face "
      "checkpoint of {} and a text file itself (it reads no llm.c token file)",
      c.model_label()));
  if (c.checkpoint.dir.empty())
    n.push_back("OUTPUT_DIR comes from the environment: the plan has no checkpoint.dir and the HF Trainer requires --output_dir");
  const HfSchedule s = hf_schedule(c);
  if (!s.note.empty()) n.push_back(s.note);
  return n;
}

std::string render_deepspeed_launch(const TrainConfig& c, const std::string& head) {
  require_emittable_strings(c);
  const int nodes = c.cluster.nodes, gpn = c.cluster.gpus_per_node;
  const auto& ac = c.activation_checkpointing;
  std::string o = "#!/usr/bin/env bash\n" + head;
  o += fmt::format("# DeepSpeed ZeRO stage {} under the HF Trainer: ds_config.json (microsoft/DeepSpeed@38327e07f keys)\n"
                   "# and the Trainer arguments that match it (transformers integrations/deepspeed.py checks\n"
                   "# batch sizes, clipping, lr, betas, eps, weight decay and bf16 against them).\n",
                   zero_stage(c));
  for (const std::string& note : deepspeed_notes(c)) o += "# NOTE: " + note + ".\n";
  if (ac.mode == AcMode::full)
    o += "# --gradient_checkpointing: transformers checkpoints every decoder layer (reentrant).\n";
  o += "# It runs in this script's folder: relative TRAIN_SCRIPT, TRAIN_FILE and output paths name files there.\n";
  o += "set -euo pipefail\n";
  o += kCdToScriptFolder;
  o += "TRAIN_SCRIPT=\"${TRAIN_SCRIPT:?set TRAIN_SCRIPT to your HF Trainer script, e.g. "
       "examples/pytorch/language-modeling/run_clm.py of transformers}\"\n";
  o += "MODEL_NAME_OR_PATH=\"${MODEL_NAME_OR_PATH:?set MODEL_NAME_OR_PATH to the Hugging Face checkpoint to train}\"\n";
  o += "TRAIN_FILE=\"${TRAIN_FILE:?set TRAIN_FILE to the training text file}\"\n";
  std::string out_dir;
  if (c.checkpoint.dir.empty()) {
    o += "OUTPUT_DIR=\"${OUTPUT_DIR:?the plan has no checkpoint.dir: set OUTPUT_DIR}\"\n";
    out_dir = "\"$OUTPUT_DIR\"";
  } else {
    out_dir = shell_quote(c.checkpoint.dir);
  }
  const HfSchedule sched = hf_schedule(c);
  std::vector<std::string> args = {
      "--deepspeed", "ds_config.json",
      "--per_device_train_batch_size", std::to_string(c.training.micro_batch),
      "--gradient_accumulation_steps", std::to_string(c.training.grad_accum),
      "--block_size", std::to_string(c.training.seq_len),
      "--max_steps", std::to_string(c.training.steps),
      "--learning_rate", real(c.optimizer.lr),
      "--adam_beta1", real(c.optimizer.beta1),
      "--adam_beta2", real(c.optimizer.beta2),
      "--adam_epsilon", real(c.optimizer.eps),
      "--weight_decay", real(c.optimizer.weight_decay),
      "--max_grad_norm", real(c.training.max_grad_norm),
      "--warmup_steps", std::to_string(c.lr_schedule.warmup_steps),
      "--lr_scheduler_type", sched.type,
      "--logging_steps", std::to_string(std::max(1, c.metrics.log_freq)),
      "--seed", std::to_string(c.training.seed),
  };
  if (!sched.kwargs_json.empty()) args.insert(args.end(), {"--lr_scheduler_kwargs", sched.kwargs_json});
  if (c.precision.param_dtype == "bf16") args.push_back("--bf16");
  if (c.precision.param_dtype == "fp16") args.push_back("--fp16");
  if (ac.mode == AcMode::full) args.push_back("--gradient_checkpointing");
  if (c.checkpoint.interval > 0) {
    args.insert(args.end(), {"--save_steps", std::to_string(c.checkpoint.interval)});
    // checkpoint.keep: the HF Trainer keeps every checkpoint unless told (TrainingArguments.save_total_limit).
    if (c.checkpoint.keep > 0) args.insert(args.end(), {"--save_total_limit", std::to_string(c.checkpoint.keep)});
  }
  std::string words;  // the arguments, a flag and its value per line
  for (size_t i = 0; i < args.size(); ++i)
    words += (args[i].rfind("--", 0) == 0 && i > 0 ? " \\\n  " : " ") + shell_quote(args[i]);
  const std::string script_args = " \\\n  --model_name_or_path \"$MODEL_NAME_OR_PATH\" --train_file \"$TRAIN_FILE\" --output_dir " +
                                  out_dir + " \\\n ";
  if (nodes == 1) {
    o += fmt::format("exec deepspeed --num_gpus {} \"$TRAIN_SCRIPT\"", gpn) + script_args + words + "\n";
  } else {
    o += "# Several nodes: a hostfile (one line per node: `HOST slots=GPUS`); the launcher starts every node over ssh.\n";
    o += "HOSTFILE=\"${HOSTFILE:?set HOSTFILE to a DeepSpeed hostfile naming the nodes}\"\n";
    o += fmt::format("exec deepspeed --hostfile \"$HOSTFILE\" --num_nodes {} --num_gpus {} \"$TRAIN_SCRIPT\"", nodes, gpn) +
         script_args + words + "\n";
  }
  o += fmt::format(
      "# Or with accelerate, on each node:\n"
      "#   accelerate launch --use_deepspeed --deepspeed_config_file ds_config.json --num_machines {} \\\n"
      "#     --num_processes {} --machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR{} \"$TRAIN_SCRIPT\" ...\n"
      "#   (the same script arguments)\n",
      nodes, c.world_size(),
      // Several machines: accelerate's default multi-node launcher is pdsh from one node; "standard"
      // is the per-node torchrun this line is (accelerate launch's --deepspeed_multinode_launcher).
      nodes > 1 ? " \\\n#     --deepspeed_multinode_launcher standard" : "");
  return o;
}

}  // namespace shardcast::planner
