#include "planner/emit/emit_ecosystem.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "planner/model/runtime.h"
#include "planner/decide/search.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {

struct Dims {
  const char* name;
  int n_layers, d_model, n_heads, n_kv_heads;
  int64_t ffn_dim;
  int64_t vocab;  // 0 = any (the tool takes the vocabulary as a separate argument)
  bool tied = false;  // input embedding and output head share one weight
};

bool same(const ModelSpec& m, const Dims& d) {
  return m.n_layers == d.n_layers && m.d_model == d.d_model && m.n_heads == d.n_heads &&
         m.n_kv_heads == d.n_kv_heads && m.ffn_dim == d.ffn_dim && (d.vocab == 0 || m.vocab == d.vocab) &&
         m.tied_embeddings == d.tied && m.mlp_type == MlpType::swiglu;
}

// torchtitan torchtitan/models/llama3 flavors: v0.2.x llama3_configs (8B, 70B, 405B, untied;
// torchtitan/models/llama3/__init__.py @e61f2cce4); the current generation adds 1B and 3B
// (_1b, _3b @b5bcd76c6: enable_weight_tying=True; 1B ffn = compute_ffn_hidden_dim(2048,
// multiple_of=1024, ffn_dim_multiplier=1.5) = 8192, 3B ffn = compute_ffn_hidden_dim(3072, 1024, 1.0) = 8192).
const Dims kTorchtitan[] = {
    {"8B", 32, 4096, 32, 8, 14336, 128256},
    {"70B", 80, 8192, 64, 8, 28672, 128256},
    {"405B", 126, 16384, 128, 8, 53248, 128256},
};
const Dims kTorchtitanCurrentOnly[] = {
    {"1B", 16, 2048, 32, 8, 8192, 128256, true},
    {"3B", 28, 3072, 24, 8, 8192, 128256, true},
};
// fms-fsdp fms_fsdp/utils/config_utils.py get_model_config (vocab from --vocab_size).
const Dims kFms[] = {
    {"llama2_7b", 32, 4096, 32, 32, 11008, 0},   {"llama2_13b", 40, 5120, 40, 40, 13824, 0},
    {"llama2_34b", 48, 8192, 64, 8, 22016, 0},   {"llama2_70b", 80, 8192, 64, 8, 28672, 32000},
    {"llama2_1.4b", 24, 2048, 16, 4, 6144, 0},   {"llama3_8b", 32, 4096, 32, 8, 14336, 128256},
    {"llama3_70b", 80, 8192, 64, 8, 28672, 128256}, {"llama3_1.8b", 24, 2048, 16, 8, 7168, 128256},
    {"llama3_3.2b", 24, 3072, 24, 8, 8192, 128256},
};

std::string torch_dtype(const std::string& d) {
  if (d == "bf16") return "bfloat16";
  if (d == "fp16") return "float16";
  return "float32";
}

int shard_size(const TrainConfig& c) {
  return c.parallelism.shard_group_size(c.world_size(), c.cluster.gpus_per_node);
}

// One torchtitan setting: written as TOML (`key = value`) and as a command-line override.
// `cli` is the override's whole text after `--`: `section.key=value`, or for a boolean tyro's
// flag pair `section.key` / `section.no-key` (tyro turns a bool with a default into two flags
// that take no value: torchtitan/config/manager.py tyro.cli @e61f2cce4; docs/debugging.md there
// writes `--profiling.no-enable-memory-snapshot`), and for a list of choices its values
// space-separated (`compile.components model loss`: list[Literal[...]] is not comma-split, only
// list[str] is, manager.py list_str_rule).
struct TitanEntry {
  std::string section, key, toml, cli, note;
};

// tyro's negated flag: "enable" -> "no-enable", "enable_memory_snapshot" -> "no-enable-memory-snapshot".
std::string tyro_negated(const std::string& key) {
  std::string k = "no-" + key;
  std::replace(k.begin(), k.end(), '_', '-');
  return k;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// A float that TOML and Python both read as a float: 1 -> "1.0", 3e-4 -> "0.0003".
std::string real(double v) {
  std::string s = fmt::format("{:g}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// torchtitan's mixed_precision_reduce is Literal["float32"] (job_config.py v0.2.x, configs.py now).
void require_fp32_reduce(const TrainConfig& c) {
  if (c.precision.reduce_dtype != "fp32")
    throw ConfigError("torchtitan", "precision.reduce_dtype",
                      fmt::format("\"{}\": torchtitan reduces gradients in float32 only (mixed_precision_reduce)",
                                  c.precision.reduce_dtype));
}

std::vector<TitanEntry> torchtitan_entries(const TrainConfig& c) {
  require_fp32_reduce(c);
  std::vector<TitanEntry> e;
  auto add = [&](const std::string& sec, const std::string& key, const std::string& toml,
                 const std::string& cli, const std::string& note = "") {
    e.push_back({sec, key, toml, cli, note});
  };
  auto num = [&](const std::string& sec, const std::string& key, const std::string& v,
                 const std::string& note = "") { add(sec, key, v, sec + "." + key + "=" + v, note); };
  auto str = [&](const std::string& sec, const std::string& key, const std::string& v,
                 const std::string& note = "") { add(sec, key, quoted(v), sec + "." + key + "=" + v, note); };
  auto boolean = [&](const std::string& sec, const std::string& key, bool v) {
    add(sec, key, v ? "true" : "false", sec + "." + (v ? key : tyro_negated(key)));
  };
  const int W = c.world_size();
  const int Ns = shard_size(c);
  const auto s = c.parallelism.sharding_strategy;

  const std::string flavor = torchtitan_flavor(c.model, TorchtitanVersion::v0_2);
  str("model", "name", "llama3");
  if (flavor.empty())
    str("model", "flavor", c.model_label(),
        fmt::format("no torchtitan llama3 flavor has these dimensions (L={} d={} heads={} kv={} ffn={}); "
                    "register one under this name",
                    c.model.n_layers, c.model.d_model, c.model.n_heads, c.model.n_kv_heads, c.model.ffn_dim));
  else
    str("model", "flavor", flavor);
  // The float8 converter's registered name (torchtitan/components/quantization/float8.py,
  // register_model_converter(Float8LinearConverter, "quantize.linear.float8") at
  // pytorch/torchtitan@e61f2cce4). FSDP's float8
  // all-gather stays off (enable_fsdp_float8_all_gather = false by default; removed upstream).
  // The recipe: [quantize.linear.float8] recipe_name (job_config.py Float8Linear @e61f2cce4,
  // Literal["tensorwise", "rowwise", "rowwise_with_gw_hp"] | None). tensorwise is left unset
  // (None = torchao's Float8LinearConfig() default, tensorwise): a recipe_name together with
  // enable_fsdp_float8_all_gather is refused by components/quantization/float8.py.
  if (c.precision.fp8_on()) {
    add("model", "converters", "[\"quantize.linear.float8\"]", "model.converters=quantize.linear.float8",
        fmt::format("fp8 matmuls (float8 linear, {})", to_string(c.precision.fp8)));
    if (c.precision.fp8 != Fp8Recipe::tensorwise)
      str("quantize.linear.float8", "recipe_name", to_string(c.precision.fp8), "torchao Float8LinearRecipeName");
  }

  str("optimizer", "name", "AdamW");
  // The AdamW the plan charged (runtime term adamw_update of c.runtime, torchtitan's spelling:
  // job_config.py Optimizer.implementation, Literal["for-loop", "foreach", "fused"]).
  AdamwUpdate update{};
  const bool known = parse_adamw_update(runtime_preset(c.runtime).terms.adamw_update, update);
  assert(known && "the runtime schema allows fused | foreach | for_loop");
  (void)known;
  str("optimizer", "implementation", torchtitan_name(update),
      fmt::format("the AdamW the plan charged (runtime {}'s adamw_update)", c.runtime));
  num("optimizer", "lr", real(c.optimizer.lr));
  num("optimizer", "beta1", real(c.optimizer.beta1));
  num("optimizer", "beta2", real(c.optimizer.beta2));
  num("optimizer", "eps", real(c.optimizer.eps));
  num("optimizer", "weight_decay", real(c.optimizer.weight_decay));

  num("lr_scheduler", "warmup_steps", std::to_string(c.lr_schedule.warmup_steps));
  if (c.lr_schedule.decay == "constant") {
    num("lr_scheduler", "decay_ratio", "0.0", "constant lr: no decay phase");
  } else {
    str("lr_scheduler", "decay_type", c.lr_schedule.decay);
    num("lr_scheduler", "min_lr_factor", real(c.lr_schedule.min_lr_factor));
  }

  num("training", "local_batch_size", std::to_string(c.training.micro_batch), "micro_batch per GPU");
  num("training", "global_batch_size",
      std::to_string(int64_t(c.training.micro_batch) * c.training.grad_accum * W),
      fmt::format("sequences per step: micro_batch x grad_accum {} x {} ranks", c.training.grad_accum, W));
  num("training", "seq_len", std::to_string(c.training.seq_len));
  num("training", "max_norm", real(c.training.max_grad_norm));
  num("training", "steps", std::to_string(c.training.steps));
  str("training", "mixed_precision_param", torch_dtype(c.precision.param_dtype));
  str("training", "mixed_precision_reduce", "float32");  // the only value torchtitan accepts

  if (s == ShardingStrategy::no_shard) {
    num("parallelism", "data_parallel_replicate_degree", std::to_string(W), "no_shard: plain data parallel");
    num("parallelism", "data_parallel_shard_degree", "1");
  } else if (s == ShardingStrategy::hybrid_shard) {
    num("parallelism", "data_parallel_replicate_degree", std::to_string(W / Ns), "hybrid_shard replicas");
    num("parallelism", "data_parallel_shard_degree", std::to_string(Ns), "hybrid_shard group size");
  } else {
    num("parallelism", "data_parallel_replicate_degree", "1");
    num("parallelism", "data_parallel_shard_degree", std::to_string(W));
  }
  if (s == ShardingStrategy::shard_grad_op)
    str("parallelism", "fsdp_reshard_after_forward", "never", "shard_grad_op: keep parameters gathered");
  else if (s != ShardingStrategy::no_shard)
    str("parallelism", "fsdp_reshard_after_forward", "default");

  const auto& ac = c.activation_checkpointing;
  if (ac.mode == AcMode::selective_op) {
    str("activation_checkpoint", "mode", "selective", "op-level selective checkpointing");
    str("activation_checkpoint", "selective_ac_option", "op");
  } else {
    str("activation_checkpoint", "mode", to_string(ac.mode));
  }
  if (ac.mode == AcMode::selective) {
    const int k = every_kth_block(ac.ratio);
    const double got = 1.0 / k;
    str("activation_checkpoint", "selective_ac_option", std::to_string(k),
        std::abs(got - ac.ratio) < 1e-9
            ? fmt::format("every {}-th block = ratio {:g}", k, ac.ratio)
            : fmt::format("ratio {:g} is not 1/k: every {}-th block checkpoints {:g} of them (more, so "
                          "memory stays within the plan; slower)",
                          ac.ratio, k, got));
  }
  boolean("compile", "enable", c.precision.compile);
  if (c.precision.compile) add("compile", "components", "[\"model\", \"loss\"]", "compile.components model loss");

  const CheckpointConfig& ck = c.checkpoint;
  if (!ck.dir.empty() || !ck.initial_load_path.empty()) {
    boolean("checkpoint", "enable", true);
    if (!ck.dir.empty()) str("checkpoint", "folder", ck.dir);
    if (ck.interval > 0) num("checkpoint", "interval", std::to_string(ck.interval));
    num("checkpoint", "keep_latest_k", std::to_string(ck.keep));
    // Literal["disabled", "async", "async_with_pinned_mem"] (job_config.py Checkpoint @e61f2cce4).
    str("checkpoint", "async_mode", ck.async_mode);
    if (!ck.initial_load_path.empty()) {
      str("checkpoint", "initial_load_path", ck.initial_load_path,
          ck.dir.empty() ? "Hugging Face weights; enabled for them, torchtitan also saves to its default folder "
                           "every interval"
                         : "Hugging Face weights (model.safetensors + config.json)");
      boolean("checkpoint", "initial_load_in_hf", true);
    }
  }
  num("metrics", "log_freq", std::to_string(c.metrics.log_freq));
  // comm.timeout_seconds is the collective timeout of training (after the first step); the
  // start-up's own, init_timeout_seconds, keeps torchtitan's default (job_config.py Comm).
  num("comm", "train_timeout_seconds", std::to_string(std::llround(c.comm.timeout_seconds)));
  num("debug", "seed", std::to_string(c.training.seed));
  return e;
}

std::string header(const TrainConfig& c, const char* tool) {
  return fmt::format("# {} settings for the plan of `shardcast emit`: {} on {} x {} ({} node(s) x {}),\n"
                     "# {}.\n",
                     tool, c.model_label(), c.world_size(), c.cluster.hardware, c.cluster.nodes,
                     c.cluster.gpus_per_node, describe_config(c));
}

}  // namespace

TrainConfig as_emitted(const TrainConfig& cfg, const std::string& framework, TorchtitanVersion tv) {
  TrainConfig c = cfg;
  auto& ac = c.activation_checkpointing;
  auto every_block = [&] {
    ac.mode = AcMode::full;
    ac.ratio = 1.0;
  };
  if (framework == "fms-fsdp") {
    // render_fms_fsdp_args: --mixed_precision picks bfSixteen (reduce in bf16) or fp32.
    if (c.precision.param_dtype != "fp32") c.precision.reduce_dtype = c.precision.param_dtype;
    if (c.training.grad_accum > 1) {
      c.training.steps *= c.training.grad_accum;
      c.training.grad_accum = 1;
    }
    if (c.parallelism.sharding_strategy == ShardingStrategy::shard_grad_op)
      c.parallelism.sharding_strategy = ShardingStrategy::full_shard;
    if (c.parallelism.sharding_strategy == ShardingStrategy::hybrid_shard)
      c.parallelism.hsdp_shard_size = c.cluster.gpus_per_node;
    if (ac.mode == AcMode::selective_op) every_block();
  } else if (framework == "accelerate") {
    if (ac.mode == AcMode::selective || ac.mode == AcMode::selective_op) every_block();
  } else if (framework == "torchtitan") {
    if (ac.mode == AcMode::selective && tv == TorchtitanVersion::v0_2) ac.ratio = 1.0 / every_kth_block(ac.ratio);
    if (ac.mode == AcMode::selective && tv == TorchtitanVersion::current) every_block();
  }
  return c;
}

std::string torchtitan_flavor(const ModelSpec& m, TorchtitanVersion tv) {
  for (const Dims& d : kTorchtitan)
    if (same(m, d)) return d.name;
  if (tv == TorchtitanVersion::current)
    for (const Dims& d : kTorchtitanCurrentOnly)
      if (same(m, d)) return d.name;
  return "";
}

std::string fms_fsdp_variant(const ModelSpec& m) {
  for (const Dims& d : kFms)
    if (same(m, d)) return d.name;
  return "";
}

int every_kth_block(double ratio) {
  if (!(ratio > 0)) return 1;
  return std::max(1, int(std::floor(1.0 / ratio + 1e-9)));
}

// How to launch torchtitan with `args` on the plan's nodes: run_train.sh on one node (it runs
// torchrun --nproc_per_node=$NGPU with a local rendezvous and sets the allocator variable,
// run_train.sh @e61f2cce4 and @b5bcd76c6); on several, torchrun itself on every node with one
// rendezvous and the expandable segments the plan assumes (PYTORCH_ALLOC_CONF from torch 2.8,
// PYTORCH_CUDA_ALLOC_CONF before: both set).
// `run_train_env` names the config for run_train.sh, `train_args` for torchtitan.train.
std::string torchtitan_launch(const TrainConfig& c, const std::string& run_train_env, const std::string& train_args) {
  if (c.cluster.nodes == 1)
    return fmt::format("# Launch, from torchtitan's checkout:\n#   {} NGPU={} ./run_train.sh\n", run_train_env,
                       c.cluster.gpus_per_node);
  return fmt::format(
      "# Launch on each of the {} nodes, from torchtitan's checkout (run_train.sh starts one node only):\n"
      "#   PYTORCH_ALLOC_CONF=expandable_segments:True PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \\\n"
      "#   torchrun --nnodes {} --nproc_per_node {} --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500 \\\n"
      "#     -m torchtitan.train {}\n",
      c.cluster.nodes, c.cluster.nodes, c.cluster.gpus_per_node, train_args);
}

std::string render_torchtitan_toml(const TrainConfig& c) {
  std::string o = header(c, "torchtitan");
  o += "# torchtitan v0.2.1 and v0.2.2 TOML job config (torchtitan/config/job_config.py from e61f2cce4 to\n"
       "# 9810191bb^; v0.2.0 has no [debug] table). The current generation (from 9810191bb, #2386) reads\n"
       "# no TOML: emit --torchtitan-version current writes its torchtitan_recipe.py.\n";
  o += torchtitan_launch(c, "CONFIG_FILE=torchtitan.toml", "--job.config_file torchtitan.toml");
  std::string section;
  for (const TitanEntry& e : torchtitan_entries(c)) {
    if (e.section != section) {
      section = e.section;
      o += fmt::format("\n[{}]\n", section);
    }
    o += fmt::format("{} = {}", e.key, e.toml);
    if (!e.note.empty()) o += "  # " + e.note;
    o += "\n";
  }
  return o;
}

std::string render_torchtitan_overrides(const TrainConfig& c) {
  std::string o = header(c, "torchtitan");
  o += "# The settings of torchtitan.toml as command-line overrides, one per line, for torchtitan v0.2.1 and\n"
       "# v0.2.2 (tyro: a boolean is a flag, --compile.enable / --compile.no-enable). The current generation\n"
       "# (from 9810191bb, #2386) has other keys: emit --torchtitan-version current. E.g. on top of a config:\n"
       "#   CONFIG_FILE=... NGPU=... ./run_train.sh $(grep -v '^#' torchtitan_overrides.txt)\n";
  for (const TitanEntry& e : torchtitan_entries(c)) {
    if (!e.note.empty()) o += "# " + e.note + "\n";
    o += "--" + e.cli + "\n";
  }
  return o;
}

std::string render_accelerate_yaml(const TrainConfig& c) {
  const int W = c.world_size();
  const int Ns = shard_size(c);
  const auto s = c.parallelism.sharding_strategy;
  const auto& ac = c.activation_checkpointing;
  std::string o = header(c, "HF accelerate");
  o += fmt::format(
      "# Use: accelerate launch --config_file fsdp_config.yaml --machine_rank $NODE_RANK \\\n"
      "#        --main_process_ip $MASTER_ADDR train.py --per_device_train_batch_size {} "
      "--gradient_accumulation_steps {}\n",
      c.training.micro_batch, c.training.grad_accum);
  if (c.precision.fp8_on()) o += "# fp8: accelerate's mixed_precision 'fp8' needs an fp8 backend (TransformerEngine/torchao).\n";
  if (ac.mode == AcMode::selective)
    o += fmt::format("# selective ratio {:g}: accelerate checkpoints every block (more recompute than planned).\n",
                     ac.ratio);
  if (ac.mode == AcMode::selective_op)
    o += "# selective_op: accelerate has no op-level checkpointing; it checkpoints every block (less memory, slower).\n";
  o += "# mixed_precision also sets FSDP's reduce_dtype: the gradients are reduced in the param dtype\n"
       "# (accelerate utils/dataclasses.py FullyShardedDataParallelPlugin.set_mixed_precision).\n";
  o += "# train.py: set model.config.use_cache = False. The plan assumes it: with use_cache left on,\n"
       "# transformers returns every layer's K and V with the output in training (its own gradient\n"
       "# checkpointing turns it off, fsdp_activation_checkpointing does not), which the plan does not count.\n";
  o += "compute_environment: LOCAL_MACHINE\n";
  o += "distributed_type: FSDP\n";
  o += fmt::format("mixed_precision: {}\n",
                   c.precision.fp8_on() ? "fp8" : (c.precision.param_dtype == "fp32" ? "'no'" : c.precision.param_dtype));
  o += "downcast_bf16: 'no'\n";
  o += fmt::format("num_machines: {}\n", c.cluster.nodes);
  o += fmt::format("num_processes: {}   # total over all machines\n", W);
  o += "machine_rank: 0\n";
  o += "main_process_port: 29500\n";
  o += "rdzv_backend: static\n";
  o += "same_network: true\n";
  o += "use_cpu: false\n";
  if (c.precision.compile) o += "dynamo_config:\n  dynamo_backend: INDUCTOR\n";
  o += "fsdp_config:\n";
  if (s == ShardingStrategy::no_shard) {
    o += "  fsdp_version: 1   # FSDP2 has no NO_SHARD\n";
    o += "  fsdp_sharding_strategy: NO_SHARD\n";
    o += "  fsdp_use_orig_params: true\n";
  } else {
    o += "  fsdp_version: 2\n";
    o += fmt::format("  fsdp_reshard_after_forward: {}\n", s == ShardingStrategy::shard_grad_op ? "false" : "true");
  }
  o += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
  o += "  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n";
  o += "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
  o += "  fsdp_offload_params: false\n";
  o += "  fsdp_cpu_ram_efficient_loading: true\n";
  o += fmt::format("  fsdp_activation_checkpointing: {}\n", ac.mode == AcMode::none ? "false" : "true");
  if (s == ShardingStrategy::hybrid_shard) {
    o += "parallelism_config:\n";
    o += fmt::format("  parallelism_config_dp_replicate_size: {}\n", W / Ns);
    o += fmt::format("  parallelism_config_dp_shard_size: {}\n", Ns);
  }
  return o;
}

std::string render_fms_fsdp_args(const TrainConfig& c) {
  const auto s = c.parallelism.sharding_strategy;
  const auto& ac = c.activation_checkpointing;
  std::string o = header(c, "fms-fsdp");
  o += "# Arguments of fms-fsdp's main_training_llama.py, one per line, e.g.\n"
       "#   torchrun ... main_training_llama.py $(grep -v '^#' fms_fsdp_args.txt)\n";
  const std::string variant = fms_fsdp_variant(c.model);
  if (variant.empty())
    o += fmt::format("# no fms-fsdp model_variant has these dimensions (L={} d={} heads={} kv={} ffn={}); add one\n",
                     c.model.n_layers, c.model.d_model, c.model.n_heads, c.model.n_kv_heads, c.model.ffn_dim);
  o += fmt::format("--model_variant={}\n", variant.empty() ? c.model_label() : variant);
  std::string strategy = "fsdp";
  if (s == ShardingStrategy::hybrid_shard) {
    strategy = "hsdp";
    if (shard_size(c) != c.cluster.gpus_per_node)
      o += fmt::format("# fms-fsdp's hsdp shards within one node ({} GPUs); the plan's shard group is {}\n",
                       c.cluster.gpus_per_node, shard_size(c));
  } else if (s == ShardingStrategy::no_shard) {
    strategy = "ddp";
  } else if (s == ShardingStrategy::shard_grad_op) {
    o += "# shard_grad_op has no fms-fsdp name: fsdp (FULL_SHARD) needs less memory and is slower\n";
  }
  o += fmt::format("--sharding_strategy={}\n", strategy);
  o += fmt::format("--fsdp_activation_checkpointing={}\n", ac.mode == AcMode::none ? "False" : "True");
  if (ac.mode == AcMode::selective_op)
    o += "# selective_op: fms-fsdp has no op-level checkpointing; every block is checkpointed (less memory, slower)\n";
  if (ac.mode != AcMode::none)
    o += fmt::format("--selective_checkpointing={:g}\n", ac.mode == AcMode::selective ? ac.ratio : 1.0);
  if (c.precision.param_dtype == "fp16")
    o += "# fms-fsdp picks bf16 when the GPU supports it, else fp16\n";
  if (c.precision.param_dtype != "fp32" && c.precision.reduce_dtype != c.precision.param_dtype)
    o += fmt::format("# fms-fsdp's mixed-precision policies reduce in the param dtype (bfSixteen: bf16); the plan's {} "
                     "reduction is not expressible here and the run reduces in {}\n",
                     c.precision.reduce_dtype, c.precision.param_dtype);
  o += fmt::format("--mixed_precision={}\n", c.precision.param_dtype == "fp32" ? "False" : "True");
  if (c.precision.fp8_on()) o += "# fp8: fms-fsdp has no fp8 switch; the plan's fp8 speed-up does not apply\n";
  if (c.training.grad_accum > 1)
    o += fmt::format("# fms-fsdp has no gradient accumulation: the plan's {} micro-steps per step become {} "
                     "steps of 1/{} the batch\n",
                     c.training.grad_accum, c.training.grad_accum, c.training.grad_accum);
  o += fmt::format("--batch_size={}\n", c.training.micro_batch);
  o += fmt::format("--seq_length={}\n", c.training.seq_len);
  o += fmt::format("--vocab_size={}\n", c.model.vocab);
  o += fmt::format("--num_steps={}\n", int64_t(c.training.steps) * c.training.grad_accum);
  o += fmt::format("--learning_rate={}\n", real(c.optimizer.lr));
  o += fmt::format("--grad_clip_thresh={}\n", real(c.training.max_grad_norm));
  o += fmt::format("--seed={}\n", c.training.seed);
  o += fmt::format("--use_torch_compile={}\n", c.precision.compile ? "True" : "False");
  o += fmt::format("--report_interval={}\n", c.metrics.log_freq);
  if (!c.checkpoint.dir.empty()) {
    o += fmt::format("--ckpt_save_path={}\n", c.checkpoint.dir);
    if (c.checkpoint.interval > 0) o += fmt::format("--checkpoint_interval={}\n", c.checkpoint.interval);
  }
  return o;
}


std::optional<TorchtitanVersion> parse_torchtitan_version(const std::string& s) {
  if (s == "0.2") return TorchtitanVersion::v0_2;
  if (s == "current") return TorchtitanVersion::current;
  return std::nullopt;
}

// Float8LinearConverter.Config.recipe_name: Literal["rowwise", "rowwise_with_gw_hp"]
// (torchtitan/components/quantization/float8.py @b5bcd76c6; tensorwise removed in #3127);
// v0.2's [quantize.linear.float8] recipe_name: tensorwise (unset), rowwise, rowwise_with_gw_hp.
std::vector<Fp8Recipe> torchtitan_fp8_recipes(TorchtitanVersion tv) {
  if (tv == TorchtitanVersion::current) return {Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp};
  return {Fp8Recipe::tensorwise, Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp};
}

std::string torchtitan_version_refusal(const TrainConfig& c, TorchtitanVersion tv) {
  if (c.precision.fp8 == Fp8Recipe::none) return "";
  const std::vector<Fp8Recipe> ok = torchtitan_fp8_recipes(tv);
  if (std::find(ok.begin(), ok.end(), c.precision.fp8) != ok.end()) return "";
  std::vector<std::string> names;
  for (Fp8Recipe r : ok) names.push_back(to_string(r));
  return fmt::format("torchtitan's current generation cannot run precision.fp8 = \"{}\": its float8 recipes are "
                     "{} (tensorwise scaling removed in pytorch/torchtitan#3127, 6348d93d1); choose one of those or "
                     "--torchtitan-version 0.2",
                     to_string(c.precision.fp8), fmt::join(names, " | "));
}

// torchtitan's current generation (pytorch/torchtitan@b5bcd76c6): the plan as a function that
// derives a Trainer.Config from the flavor's registered one (torchtitan/models/llama3/
// config_registry.py), setting each attribute the plan decides. Attribute names are those of
// torchtitan/config/configs.py (training, parallelism, compile, comm, debug), the optimizer's
// param_groups (components/optimizer/optimizer.py, #3269), lr_scheduler, metrics, checkpoint,
// and the activation-checkpointing policy (distributed/activation_checkpoint.py, a subcommand
// on the command line: selective = op-level SAC, full, none).
std::string render_torchtitan_recipe(const TrainConfig& c) {
  require_fp32_reduce(c);
  if (const std::string why = torchtitan_version_refusal(c, TorchtitanVersion::current); !why.empty())
    throw ConfigError("torchtitan", "precision.fp8", why);
  const int W = c.world_size();
  const int Ns = shard_size(c);
  const auto s = c.parallelism.sharding_strategy;
  const auto& ac = c.activation_checkpointing;
  const std::string flavor = torchtitan_flavor(c.model, TorchtitanVersion::current);
  // The registered config the recipe starts from (its data loader, tokenizer and loss); every
  // setting of it the plan does not share is set below (config_registry.py @b5bcd76c6:
  // llama3_70b and llama3_405b set tensor_parallel_degree 8, llama3_405b adds a rowwise
  // Float8LinearConverter and compile with async TP, each profiles every 100 steps).
  std::string base = "llama3_8b";
  if (flavor == "70B") base = "llama3_70b";
  if (flavor == "405B") base = "llama3_405b";
  std::string o = header(c, "torchtitan");
  o += "# torchtitan's current configuration (a Trainer.Config function, --module/--config; read at\n"
       "# pytorch/torchtitan@b5bcd76c6). Put this file where Python finds it (PYTHONPATH=/path/to/this/dir).\n";
  o += torchtitan_launch(c, "PYTHONPATH=/path/to/this/dir MODULE=torchtitan_recipe CONFIG=shardcast_plan",
                         "--module torchtitan_recipe --config shardcast_plan");
  o += "# Not as planned (runtime torchtitan; docs/import.md \"Emitting for torchtitan\"): llama3's model_registry\n"
       "# builds FlexAttention with per-document (block-causal) masks (SDPA refused for language models since\n"
       "# 169545712, #3571), where the plan charges causal attention over the whole sequence; the registered\n"
       "# config's loss is ChunkedLossWrapper (9530a874d), where the plan charges the fp32 up-cast of all logits.\n";
  o += "from torchtitan.components.optimizer.optimizer import ParamGroupConfig\n";
  if (c.precision.fp8_on()) o += "from torchtitan.components.quantization import Float8LinearConverter\n";
  o += "from torchtitan.config import CompileConfig\n";
  if (ac.mode != AcMode::none) o += "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n";
  o += "from torchtitan.models.llama3 import model_registry\n";
  o += fmt::format("from torchtitan.models.llama3.config_registry import {}\n", base);
  o += "from torchtitan.trainer import Trainer\n\n\n";
  o += "def shardcast_plan() -> Trainer.Config:\n";
  o += fmt::format("    config = {}()\n", base);
  auto set = [&](const std::string& key, const std::string& value, const std::string& note = "") {
    o += fmt::format("    config.{} = {}{}\n", key, value, note.empty() ? "" : "  # " + note);
  };
  const std::string model_name = flavor.empty() ? c.model_label() : flavor;
  if (flavor.empty())
    o += fmt::format("    # no torchtitan llama3 flavor has these dimensions (L={} d={} heads={} kv={} ffn={} tied={}):\n"
                     "    # register one named \"{}\" in torchtitan/models/llama3/__init__.py llama3_configs\n",
                     c.model.n_layers, c.model.d_model, c.model.n_heads, c.model.n_kv_heads, c.model.ffn_dim,
                     c.model.tied_embeddings ? "yes" : "no", model_name);
  // Always the model the plan has, with the converters the plan has and no others.
  if (c.precision.fp8_on())
    set("model_spec",
        fmt::format("model_registry(\"{}\", converters=[Float8LinearConverter.Config(recipe_name=\"{}\", "
                    "model_compile_enabled={})])",
                    model_name, to_string(c.precision.fp8), c.precision.compile ? "True" : "False"),
        "fp8 matmuls (float8 linear; collectives in bf16)");
  else
    set("model_spec", fmt::format("model_registry(\"{}\")", model_name), "bf16 matmuls: no converters");
  const int64_t micro_tokens = int64_t(c.training.micro_batch) * c.training.seq_len;
  const int dp = W;  // data-parallel ranks (replicate x shard)
  set("training.num_tokens_per_microbatch_per_dp_rank", std::to_string(micro_tokens),
      fmt::format("micro_batch {} x seq_len {}", c.training.micro_batch, c.training.seq_len));
  set("training.num_tokens_per_train_step", std::to_string(micro_tokens * c.training.grad_accum * dp),
      fmt::format("x grad_accum {} x {} ranks", c.training.grad_accum, dp));
  set("training.max_context_length", std::to_string(c.training.seq_len));
  set("training.max_norm", real(c.training.max_grad_norm));
  set("training.steps", std::to_string(c.training.steps));
  set("training.mixed_precision_param", quoted(torch_dtype(c.precision.param_dtype)));
  set("training.mixed_precision_reduce", quoted("float32"));
  if (s == ShardingStrategy::no_shard) {
    set("parallelism.data_parallel_replicate_degree", std::to_string(W), "no_shard: plain data parallel");
    set("parallelism.data_parallel_shard_degree", "1");
  } else if (s == ShardingStrategy::hybrid_shard) {
    set("parallelism.data_parallel_replicate_degree", std::to_string(W / Ns), "hybrid_shard replicas");
    set("parallelism.data_parallel_shard_degree", std::to_string(Ns), "hybrid_shard group size");
  } else {
    set("parallelism.data_parallel_replicate_degree", "1");
    set("parallelism.data_parallel_shard_degree", std::to_string(W));
  }
  if (s == ShardingStrategy::shard_grad_op)
    set("parallelism.fsdp_reshard_after_forward", quoted("never"), "shard_grad_op: keep parameters gathered");
  else if (s != ShardingStrategy::no_shard)
    set("parallelism.fsdp_reshard_after_forward", quoted("default"));
  // Data parallel only: the base config's tensor parallelism (8 for 70B and 405B) and any
  // other dimension off, so the degrees multiply to the world size (parallel_dims.py).
  set("parallelism.tensor_parallel_degree", "1", "FSDP only");
  set("parallelism.pipeline_parallel_degree", "1");
  set("parallelism.context_parallel_degree", "1");
  set("parallelism.expert_parallel_degree", "1");
  if (ac.mode == AcMode::none)
    set("activation_checkpoint", "None", "activation-checkpoint:none");
  else if (ac.mode == AcMode::selective_op)
    set("activation_checkpoint", "SelectiveAC.Config()", "op-level selective checkpointing");
  else if (ac.mode == AcMode::full)
    set("activation_checkpoint", "FullAC.Config()");
  else
    set("activation_checkpoint", "FullAC.Config()",
        fmt::format("selective ratio {:g}: this torchtitan has no block-level selective option (#2357); every block "
                    "is checkpointed (less memory than planned, slower)",
                    ac.ratio));
  // A new CompileConfig: the base's async tensor parallelism (405B) goes with its TP.
  set("compile", fmt::format("CompileConfig(enable={}, components=[\"model\", \"loss\"])",
                             c.precision.compile ? "True" : "False"));
  set("optimizer.param_groups",
      fmt::format("[\n        ParamGroupConfig(\n            pattern=r\".*\",\n            optimizer_name=\"AdamW\",\n"
                  "            optimizer_kwargs={{\"lr\": {}, \"betas\": ({}, {}), \"eps\": {}, \"weight_decay\": {}}},\n"
                  "        )\n    ]",
                  real(c.optimizer.lr), real(c.optimizer.beta1), real(c.optimizer.beta2), real(c.optimizer.eps),
                  real(c.optimizer.weight_decay)));
  set("lr_scheduler.warmup_steps", std::to_string(c.lr_schedule.warmup_steps));
  if (c.lr_schedule.decay == "constant") {
    set("lr_scheduler.decay_ratio", "0.0", "constant lr: no decay phase");
  } else {
    set("lr_scheduler.decay_type", quoted(c.lr_schedule.decay));
    set("lr_scheduler.min_lr_factor", real(c.lr_schedule.min_lr_factor));
  }
  const CheckpointConfig& ck = c.checkpoint;
  if (!ck.dir.empty() || !ck.initial_load_path.empty()) {
    set("checkpoint.enable", "True");
    if (!ck.dir.empty()) set("checkpoint.folder", quoted(ck.dir));
    if (ck.interval > 0) set("checkpoint.interval", std::to_string(ck.interval));
    set("checkpoint.keep_latest_k", std::to_string(ck.keep));
    set("checkpoint.async_mode", quoted(ck.async_mode));  // CheckpointManager.Config (dcp.py)
    if (!ck.initial_load_path.empty()) {
      set("checkpoint.initial_load_path", quoted(ck.initial_load_path),
          ck.dir.empty() ? "Hugging Face weights; enabled for them, torchtitan also saves to its default folder"
                         : "Hugging Face weights");
      set("checkpoint.initial_load_in_hf", "True");
    }
  }
  // The base config profiles every 100 steps (a trace the plan does not time).
  set("profiler.enable_profiling", "False");
  set("metrics.log_freq", std::to_string(c.metrics.log_freq));
  set("comm.train_timeout_seconds", std::to_string(std::llround(c.comm.timeout_seconds)),
      "collective timeout after the first step (comm.timeout_seconds)");
  set("debug.seed", std::to_string(c.training.seed));
  o += "    return config\n";
  return o;
}

}  // namespace shardcast::planner
