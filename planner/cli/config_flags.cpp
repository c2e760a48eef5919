#include "planner/cli/config_flags.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include "planner/model/node_placement.h"
#include "planner/model/power_limit.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "shared/session.h"

namespace shardcast::cli {

namespace {

// --tp ... --cp-rotate onto the config's [parallelism]; the names were checked by CLI11.
void apply_mesh_flags(const std::string& cmd, const ConfigFlags& a, ParallelismConfig& p) {
  if (a.tp) p.tp = *a.tp;
  if (a.cp) p.cp = *a.cp;
  if (a.pp) p.pp = *a.pp;
  if (a.dp_replicate) p.dp_replicate = *a.dp_replicate;
  if (a.dp_shard) p.dp_shard = *a.dp_shard;
  if (a.tp_async) p.tp_async = *a.tp_async;
  if (a.pp_microbatch) p.pp_microbatch = *a.pp_microbatch;
  if (a.pp_virtual_stages) p.pp_virtual_stages = *a.pp_virtual_stages;
  if (!a.pp_schedule.empty()) {
    auto s = parse_pp_schedule(a.pp_schedule);
    if (!s) throw UsageError(cmd + fmt::format(": --pp-schedule '{}' (allowed: {})", a.pp_schedule, kPpScheduleNames));
    p.pp_schedule = *s;
  }
  if (!a.cp_rotate.empty()) {
    auto r = parse_cp_rotate(a.cp_rotate);
    if (!r) throw UsageError(cmd + fmt::format(": --cp-rotate '{}' (allowed: {})", a.cp_rotate, kCpRotateNames));
    p.cp_rotate = *r;
  }
}

std::vector<std::string> names_of(const char* list) {  // "a | b | c" -> {a, b, c}
  std::vector<std::string> v;
  std::string s(list);
  for (size_t i = 0; i <= s.size();) {
    size_t j = s.find(" | ", i);
    if (j == std::string::npos) j = s.size();
    v.push_back(s.substr(i, j - i));
    i = j + 3;
  }
  return v;
}

}  // namespace

namespace {

// Where the configuration starts: a run.toml, a shardcast-gui session (.json: a TrainConfig and
// maybe a custom hardware), or nothing (then --model, --hardware and --gpus are required).
struct ConfigSource {
  bool from_file = false, from_session = false;
  std::string file_text;  // a run.toml's text (not a session's)
  std::optional<HardwareSpec> session_hw;
};

TrainConfig read_base_config(const std::string& cmd, const ConfigFlags& a, ConfigSource* src) {
  TrainConfig c;
  src->from_file = !a.config.empty();
  src->from_session = src->from_file && a.config.size() > 5 && a.config.substr(a.config.size() - 5) == ".json";
  if (src->from_session) {
    session::Session s = session::read_session(a.config);
    c = s.config;
    src->session_hw = s.custom_hardware;
  } else if (src->from_file) {
    src->file_text = read_config_text(a.config);
    c = parse_train_config(src->file_text, a.config);
  } else {
    if (a.model.empty()) throw UsageError(cmd + ": --model is required without a run.toml");
    if (a.gpu.empty()) throw UsageError(cmd + ": --hardware is required without a run.toml");
    if (!a.gpus) throw UsageError(cmd + ": --gpus is required without a run.toml");
  }
  return c;
}

// The model, the hardware (loaded into *hw) and the cluster's flags; a preset a run.toml names
// that does not exist is refused with the file and the key, then what exists.
void apply_model_and_cluster(const std::string& cmd, const ConfigFlags& a, const ConfigSource& src, TrainConfig* cfg,
                             HardwareSpec* hw) {
  TrainConfig& c = *cfg;
  if (!a.model.empty()) {
    c.model = load_model(a.model);
    c.model_preset = a.model;
    if (!a.seq_len && !src.from_file) c.training.seq_len = c.model.max_seq_len;
  }
  if (!a.gpu.empty()) c.cluster.hardware = a.gpu;
  auto preset_of_file = [&](const std::string& name, const char* kind, const char* what, const char* key) {
    if (!src.from_file || src.from_session) return;
    try {
      resolve_preset(name, kind, what);
    } catch (const ConfigError& e) {
      throw ConfigError(a.config, key, e.detail());
    }
  };
  if (a.gpu.empty()) preset_of_file(c.cluster.hardware, "hardware", "hardware", "cluster.hardware");
  if (a.runtime.empty()) preset_of_file(c.runtime, "runtimes", "runtime", "runtime");
  *hw = src.session_hw && a.gpu.empty() ? *src.session_hw : load_hardware(c.cluster.hardware);
  if (a.gpus || a.gpus_per_node) {
    const int gpus = a.gpus ? *a.gpus : c.world_size();
    // 2 GPUs of the preset's 8-GPU node: one node of 2 ranks (as search); a --gpus-per-node
    // above --gpus is refused, not lowered.
    int gpn = 0;
    if (!planner::place_on_nodes(gpus, a.gpus_per_node ? *a.gpus_per_node : hw->node.gpus_per_node, !a.gpus_per_node,
                                 c.cluster, &gpn))
      throw UsageError(cmd + fmt::format(": --gpus {} is not a multiple of gpus per node {}", gpus, gpn));
  }
  if (a.inter_node_gbps) c.cluster.inter_node_gbps = *a.inter_node_gbps;
  if (a.power_limit_w) c.cluster.power_limit_w = *a.power_limit_w;
}

// Sharding, the mesh, the batch, checkpointing, compile and fp8 from their flags; a name no
// table holds is refused with what is allowed.
void apply_training_flags(const std::string& cmd, const ConfigFlags& a, TrainConfig* cfg) {
  TrainConfig& c = *cfg;
  if (!a.strategy.empty()) {
    auto s = parse_sharding_strategy(a.strategy);
    if (!s) throw UsageError(cmd + fmt::format(": --strategy '{}' (allowed: {})", a.strategy, kShardingStrategyNames));
    c.parallelism.sharding_strategy = *s;
  }
  if (a.hsdp_shard_size) c.parallelism.hsdp_shard_size = *a.hsdp_shard_size;
  apply_mesh_flags(cmd, a, c.parallelism);
  if (a.micro_batch) c.training.micro_batch = *a.micro_batch;
  if (a.seq_len) c.training.seq_len = *a.seq_len;
  if (a.grad_accum) c.training.grad_accum = *a.grad_accum;
  if (a.mean_doc_len) c.data.mean_doc_len = *a.mean_doc_len;
  if (a.sync_every_micro_step) c.parallelism.sync_every_micro_step = *a.sync_every_micro_step;
  if (!a.ac.empty()) {
    auto m = parse_ac_mode(a.ac);
    if (!m) throw UsageError(cmd + fmt::format(": --ac '{}' (allowed: {})", a.ac, kAcModeNames));
    c.activation_checkpointing.mode = *m;
  }
  if (a.ac_ratio) {
    // A given ratio is never dropped: it means something for the block-level selective mode only.
    if (c.activation_checkpointing.mode != AcMode::selective)
      throw UsageError(cmd + fmt::format(": --ac-ratio {} applies to --ac selective only (the mode is {})",
                                         *a.ac_ratio, to_string(c.activation_checkpointing.mode)));
    c.activation_checkpointing.ratio = *a.ac_ratio;
  }
  if (a.compile) c.precision.compile = true;
  if (!a.fp8.empty()) {
    auto r = parse_fp8_recipe(a.fp8);
    if (!r) throw UsageError(cmd + fmt::format(": --fp8 '{}' (allowed: {})", a.fp8, kFp8RecipeNames));
    c.precision.fp8 = *r;
  }
}

// The dtypes and the runtime: the flags, the file's keys, the runtime's own for what neither
// gives (take_runtime_precision; named in *from_runtime), and the runtime's origin.
void apply_precision_and_runtime(const ConfigFlags& a, const ConfigSource& src, const HardwareSpec& hw,
                                 TrainConfig* cfg, std::vector<std::string>* from_runtime, std::string* runtime_from) {
  TrainConfig& c = *cfg;
  // Which precision keys the user gave: a flag, a key of the run.toml, or the GUI session's form
  // (which always holds both). The others are the runtime's own (take_runtime_precision).
  planner::PrecisionKeysGiven given;
  if (src.from_session) {
    given = {true, true};
  } else if (src.from_file) {
    const std::vector<bool> set =
        train_config_text_sets(src.file_text, a.config, {"precision.reduce_dtype", "precision.master_dtype"});
    given = {set[0], set[1]};
  }
  if (!src.from_file && hw.gpu.bf16_flops <= 0 && a.param_dtype.empty()) {
    // A preset without bf16 (the CPU profile) computes and reduces in fp32; printed in the header.
    c.precision.param_dtype = "fp32";
    c.precision.reduce_dtype = "fp32";
    given.reduce_dtype = true;
  }
  if (!a.param_dtype.empty()) c.precision.param_dtype = a.param_dtype;
  if (!a.reduce_dtype.empty()) c.precision.reduce_dtype = a.reduce_dtype;
  if (!a.master_dtype.empty()) c.precision.master_dtype = a.master_dtype;
  if (!a.state_dtype.empty()) c.optimizer.state_dtype = a.state_dtype;
  given.reduce_dtype = given.reduce_dtype || !a.reduce_dtype.empty();
  given.master_dtype = given.master_dtype || !a.master_dtype.empty();
  // The runtime: --runtime, the file's `runtime` key (a session always holds one), then the
  // user's default (SHARDCAST_RUNTIME).
  const bool file_runtime =
      src.from_session || (src.from_file && train_config_text_sets(src.file_text, a.config, {"runtime"})[0]);
  if (!a.runtime.empty()) c.runtime = a.runtime;
  else if (!file_runtime) c.runtime = default_runtime();
  if (runtime_from) *runtime_from = runtime_origin(!a.runtime.empty(), file_runtime);
  planner::take_runtime_precision(c, planner::runtime_preset(c.runtime), hw, given);
  if (from_runtime) {
    if (!given.reduce_dtype && c.precision.reduce_dtype != "fp32")
      from_runtime->push_back("precision.reduce_dtype " + c.precision.reduce_dtype);
    if (!given.master_dtype && c.precision.master_dtype != "fp32")
      from_runtime->push_back("precision.master_dtype " + c.precision.master_dtype);
  }
}

}  // namespace

TrainConfig config_from_flags(const std::string& cmd, const ConfigFlags& a, HardwareSpec& hw,
                              std::vector<std::string>* from_runtime, std::string* runtime_from) {
  ConfigSource src;
  TrainConfig c = read_base_config(cmd, a, &src);
  apply_model_and_cluster(cmd, a, src, &c, &hw);
  apply_training_flags(cmd, a, &c);
  apply_precision_and_runtime(a, src, hw, &c, from_runtime, runtime_from);
  validate_or_throw(c);
  return c;
}

std::string mean_doc_len_unused(double mean_doc_len, const std::string& runtime) {
  return fmt::format("data.mean_doc_len {:g} not used: runtime {}'s attention is causal over the whole packed sequence",
                     mean_doc_len, runtime);
}

void add_state_dtype_flag(CLI::App* cmd, std::string& state_dtype) {
  cmd->add_option("--state-dtype", state_dtype,
                  "optimizer.state_dtype: AdamW's two moments in the master dtype (master, default) or in bf16 "
                  "beside fp32 master weights (bf16: torchtitan's optimizer.implementation = "
                  "\"fused_opt_states_bf16\")")
      ->check(CLI::IsMember(optimizer_state_dtype_names()));
}

void add_runtime_flag(CLI::App* cmd, std::string& runtime) {
  std::string names;
  for (const std::string& n : list_runtime_presets()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--runtime", runtime,
                  "the software that runs the plan: a preset of configs/runtimes/ (" + names +
                      "); default: the config's, else $SHARDCAST_RUNTIME, else shardcast-train");
}

void add_power_limit_flag(CLI::App* cmd, std::optional<double>& power_limit_w) {
  cmd->add_option("--power-limit-w", power_limit_w,
                  std::string("GPU board power limit in W, as nvidia-smi -pl sets it (default: the preset's; ") +
                      planner::kPowerLimitEffect + ")");
}

CLI::Option* add_hardware_flag(CLI::App* cmd, std::string& hardware, const std::string& help) {
  return cmd->add_option("--hardware", hardware, help);
}

std::vector<std::string> with_current_flag_names(std::vector<std::string> args) {
  bool old_name = false, new_name = false;
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    std::string& a = args[i];
    new_name |= a == "--hardware" || a.rfind("--hardware=", 0) == 0;
    if (a != "--gpu" && a.rfind("--gpu=", 0) != 0) continue;
    a = "--hardware" + a.substr(5);
    old_name = true;
    fmt::print(stderr, "shardcast: --gpu is now --hardware (cluster.hardware, as shardcast-train names it); "
                       "--gpu still works\n");
  }
  if (old_name && new_name) throw UsageError("--gpu is the old name of --hardware: give one of them");
  return args;
}

void add_reference_run_flag(CLI::App* cmd, std::string& dir) {
  cmd->add_option("--reference-run", dir,
                  "a measured run of the same GPU type and runtime (a shardcast-train run directory, or one `shardcast "
                  "import` made from a log): predictions take its measured / predicted tokens/s and the reference band "
                  "(planner/evidence/reference_run.h)")
      ->check(CLI::ExistingDirectory);
}

void add_choice_flags(CLI::App* cmd, ConfigFlags& f) {
  cmd->add_option("--strategy", f.strategy, kShardingStrategyNames);
  cmd->add_option("--hsdp-shard-size", f.hsdp_shard_size, "hybrid_shard: data-parallel ranks per shard group (0 = those of one node: gpus per node / (tp · cp))");
  cmd->add_option("--tp", f.tp, "parallelism.tp: tensor parallel degree (with sequence parallel), inside a node");
  cmd->add_option("--cp", f.cp, "parallelism.cp: context parallel degree (ring attention)");
  cmd->add_option("--pp", f.pp, "parallelism.pp: pipeline stages");
  cmd->add_option("--dp-replicate", f.dp_replicate, "parallelism.dp_replicate: replicas of a shard group (HSDP)");
  cmd->add_option("--dp-shard", f.dp_shard,
                  "parallelism.dp_shard: ranks FSDP shards over (omitted: the rest of the world, run.toml's -1)");
  cmd->add_option("--tp-async", f.tp_async, "parallelism.tp_async: asynchronous TP (true | false)")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->add_option("--pp-schedule", f.pp_schedule, std::string("parallelism.pp_schedule: ") + kPpScheduleNames)
      ->check(CLI::IsMember(names_of(kPpScheduleNames)));
  cmd->add_option("--pp-microbatch", f.pp_microbatch, "parallelism.pp_microbatch: sequences per pipeline micro-batch");
  cmd->add_option("--pp-virtual-stages", f.pp_virtual_stages,
                  "parallelism.pp_virtual_stages: stages per pp rank (0 = the schedule's)");
  cmd->add_option("--cp-rotate", f.cp_rotate, std::string("parallelism.cp_rotate: ") + kCpRotateNames)
      ->check(CLI::IsMember(names_of(kCpRotateNames)));
  cmd->add_option("--micro-batch", f.micro_batch, "sequences per data-parallel rank per micro-step");
  cmd->add_option("--grad-accum", f.grad_accum, "micro-steps per optimizer step");
  cmd->add_option("--mean-doc-len", f.mean_doc_len,
                  "data.mean_doc_len: mean tokens per document packed into a sequence, for a runtime whose attention "
                  "masks at document boundaries (runtime term attention = flex_document); 0 = dense causal (default)");
  cmd->add_option("--sync-every-micro-step", f.sync_every_micro_step,
                  "true: every micro-step reduce-scatters its gradients into the shard; false: non-final "
                  "micro-steps keep an unsharded gradient sum (default: the runtime's; shardcast-train: true)")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->add_option("--ac", f.ac, std::string("activation checkpointing: ") + kAcModeNames);
  cmd->add_option("--ac-ratio", f.ac_ratio, "selective: fraction of blocks checkpointed, in (0, 1]");
  cmd->add_flag("--compile", f.compile, "torch.compile (fused elementwise ops)");
  // --fp8 alone = tensorwise (what the flag meant before it took a recipe). A bare --fp8 takes
  // the next word as its recipe: write the config file before it, or --fp8 tensorwise.
  cmd->add_option("--fp8", f.fp8,
                  std::string("fp8 matmuls (torchao float8 training recipe): ") + kFp8RecipeNames +
                      "; --fp8 alone = tensorwise")
      ->expected(0, 1)
      ->default_str("tensorwise")
      ->check(CLI::IsMember(std::vector<std::string>{to_string(Fp8Recipe::none), to_string(Fp8Recipe::tensorwise),
                                                     to_string(Fp8Recipe::rowwise),
                                                     to_string(Fp8Recipe::rowwise_with_gw_hp),
                                                     to_string(Fp8Recipe::mxfp8), to_string(Fp8Recipe::nvfp4)}));
  cmd->add_option("--param-dtype", f.param_dtype, "fp32 | bf16 | fp16 (default bf16; fp32 on presets without bf16)");
  cmd->add_option("--reduce-dtype", f.reduce_dtype,
                  "fp32 | bf16 | fp16 (default: the runtime's own, its profile's reduce_dtype_default, or "
                  "param_dtype where it always reduces in that)");
  cmd->add_option("--master-dtype", f.master_dtype,
                  "sharded parameters, gradients and AdamW moments: fp32 (fp32 master weights) | bf16 (pure bf16; "
                  "needs --param-dtype bf16) (default: the runtime's own, its profile's master_dtype_default)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  add_state_dtype_flag(cmd, f.state_dtype);
}

}  // namespace shardcast::cli
