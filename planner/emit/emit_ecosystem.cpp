#include "planner/emit/emit_ecosystem.h"

#include "shared/train_config.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "planner/model/runtime.h"
#include "planner/decide/search.h"
#include "shared/config_io.h"
#include "shared/emitted_text.h"
#include "shared/errors.h"
#include "shared/toml_text.h"

namespace shardcast::planner {

namespace {

struct Dims {
  const char* name;
  int n_layers, d_model, n_heads, n_kv_heads;
  int64_t ffn_dim;
  int64_t vocab;  // 0 = any (the tool takes the vocabulary as a separate argument)
  bool tied = false;  // input embedding and output head share one weight
  int head_dim = 0;   // 0 = d_model / n_heads
  bool qk_norm = false;
};

bool same(const ModelSpec& m, const Dims& d) {
  return m.n_layers == d.n_layers && m.d_model == d.d_model && m.n_heads == d.n_heads &&
         m.n_kv_heads == d.n_kv_heads && m.ffn_dim == d.ffn_dim && (d.vocab == 0 || m.vocab == d.vocab) &&
         m.tied_embeddings == d.tied && m.mlp_type == MlpType::swiglu &&
         m.head_dim() == (d.head_dim > 0 ? d.head_dim : d.d_model / d.n_heads) && m.qk_norm == d.qk_norm;
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
// torchtitan torchtitan/models/qwen3 flavors of v0.2.x (qwen3_configs, torchtitan/models/qwen3/
// __init__.py @81af8833d, the same @e61f2cce4): heads of 128, q/k norms; up to 4B the embedding is
// tied (enable_weight_tying=True).
const Dims kTorchtitanQwen3[] = {
    {"0.6B", 28, 1024, 16, 8, 3072, 151936, true, 128, true},   {"1.7B", 28, 2048, 16, 8, 6144, 151936, true, 128, true},
    {"4B", 36, 2560, 32, 8, 9728, 151936, true, 128, true},     {"8B", 36, 4096, 32, 8, 12288, 151936, false, 128, true},
    {"14B", 40, 5120, 40, 8, 17408, 151936, false, 128, true},  {"32B", 64, 5120, 64, 8, 25600, 151936, false, 128, true},
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

// One torchtitan setting: written as TOML (`key = value`, toml++'s formatter) and as a
// command-line override. `cli` is the override's whole argument after `--`:
// `section.key=value`, or for a boolean tyro's flag pair `section.key` / `section.no-key` (tyro
// turns a bool with a default into two flags that take no value: torchtitan/config/manager.py
// tyro.cli @81af8833d, v0.2.1; docs/debugging.md there writes
// `--profiling.no-enable-memory-snapshot`), and for a list[str] one comma-separated value
// (`compile.components=model,loss`: manager.py list_str_rule splits list[str] on commas;
// compile.components is list[str] since e98ae9953, in v0.2.1 and v0.2.2). The file writes `cli`
// as one shell word (shell_quote).
struct TitanEntry {
  std::string section, key;
  toml::table key_value;  // {key: value}
  std::string cli, note;
};

// tyro's negated flag: "enable" -> "no-enable", "enable_memory_snapshot" -> "no-enable-memory-snapshot".
std::string tyro_negated(const std::string& key) {
  std::string k = "no-" + key;
  std::replace(k.begin(), k.end(), '_', '-');
  return k;
}

// A Python string literal that evaluates to `s`: its JSON encoding with every non-ASCII
// character escaped (\uXXXX; a pair of surrogate escapes, which Python would read as two
// characters, becomes one \UXXXXXXXX). Precondition: `s` is UTF-8 (require_one_line).
std::string python_str(const std::string& s) {
  const std::string json = nlohmann::json(s).dump(-1, ' ', /*ensure_ascii=*/true);
  std::string o;
  for (size_t i = 0; i < json.size(); ++i) {
    const auto hex4 = [&](size_t at) { return std::stoul(json.substr(at, 4), nullptr, 16); };
    if (json[i] == '\\' && i + 11 < json.size() && json[i + 1] == 'u' && json[i + 6] == '\\' && json[i + 7] == 'u') {
      const unsigned long hi = hex4(i + 2), lo = hex4(i + 8);
      if (hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF) {
        o += fmt::format("\\U{:08x}", 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
        i += 11;
        continue;
      }
    }
    if (json[i] == '\\') {  // an escape: copy it whole, so an escaped backslash is not read as a start
      o += json.substr(i, 2);
      ++i;
      continue;
    }
    o += json[i];
  }
  return o;
}

// A float that TOML and Python both read back as the same double: the shortest such decimal,
// with ".0" when it has no point or exponent (1 -> "1.0", 3e-4 -> "0.0003").
std::string real(double v) {
  std::string s = fmt::format("{}", v);
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

// torchtitan's pipeline_parallel_layers_per_stage for `stages` stages of the model: its split
// counts the embedding and the output as one layer each and makes ceil((L + 2) / layers_per_stage)
// stages (pipeline_parallel.py @e61f2cce4, pipeline_parallel_first/last_stage_less_layers = 1, the
// defaults; cmd_import.cpp reads it back so). 0 where no value makes exactly `stages`.
int torchtitan_layers_per_stage(int n_layers, int stages) {
  const int lps = (n_layers + 2 + stages - 1) / stages;
  return (n_layers + 2 + lps - 1) / lps == stages ? lps : 0;
}

// The pipeline_parallel_layers_per_stage a plan needs, 0 for none: with the schedule's own stages
// per rank (1, or 2 for a multi-stage schedule) torchtitan splits the model itself (None, the
// default) into the plan's stages; other stages per rank need the value. Throws ConfigError where
// no value makes the plan's stages.
int torchtitan_pp_layers_per_stage(const TrainConfig& c, const Mesh& m) {
  const ParallelismConfig& p = c.parallelism;
  if (p.pp_virtual_stages == 0 || p.pp_virtual_stages == (pp_schedule_multi_stage(p.pp_schedule) ? 2 : 1)) return 0;
  const int stages = m.pp * pp_stages_per_rank(p);
  const int lps = torchtitan_layers_per_stage(c.model.n_layers, stages);
  if (lps == 0)
    throw ConfigError(c.source_file, "parallelism.pp_virtual_stages",
                      fmt::format("{} stages per rank over pp {} are {} stages, which torchtitan's "
                                  "pipeline_parallel_layers_per_stage cannot make of {} layers (it makes "
                                  "ceil((layers + 2) / layers_per_stage) stages); use the schedule's own "
                                  "stages per rank (0) or another pp",
                                  p.pp_virtual_stages, m.pp, stages, c.model.n_layers));
  return lps;
}

// The mesh's degrees and settings in torchtitan v0.2.x's [parallelism] (job_config.py Parallelism
// @e61f2cce4: data_parallel_replicate_degree, data_parallel_shard_degree, tensor_parallel_degree,
// context_parallel_degree, pipeline_parallel_degree, enable_async_tensor_parallel,
// pipeline_parallel_schedule, pipeline_parallel_microbatch_size, pipeline_parallel_layers_per_stage,
// context_parallel_rotate_method; tests/planner/data/torchtitan_keys_v0.2.txt).
template <class Int, class Str, class Bool>
void add_mesh_entries(const TrainConfig& c, const Mesh& m, Int& integer, Str& str, Bool& boolean) {
  const ParallelismConfig& p = c.parallelism;
  // torchtitan's names of our keys, from the one table run.toml's reader refuses them by
  // (shared/train_config.h torchtitan_parallelism_names).
  auto tt = [](const char* ours) { return torchtitan_parallelism_name(ours); };
  integer("parallelism", tt("dp_replicate"), m.dp_replicate, "the mesh (shared/train_config.h)");
  integer("parallelism", tt("dp_shard"), m.dp_shard);
  integer("parallelism", tt("tp"), m.tp, "with sequence parallel and loss parallel (torchtitan's)");
  integer("parallelism", tt("cp"), m.cp);
  integer("parallelism", tt("pp"), m.pp);
  if (m.tp > 1) boolean("parallelism", tt("tp_async"), p.tp_async);
  if (m.pp > 1) {
    str("parallelism", tt("pp_schedule"), to_string(p.pp_schedule));
    integer("parallelism", tt("pp_microbatch"), p.pp_microbatch);
    if (const int lps = torchtitan_pp_layers_per_stage(c, m))
      integer("parallelism", "pipeline_parallel_layers_per_stage", lps,
              fmt::format("{} stages: ceil(({} layers + the embedding + the output) / {})", m.pp * pp_stages_per_rank(p),
                          c.model.n_layers, lps));
  }
  if (m.cp > 1) str("parallelism", tt("cp_rotate"), to_string(p.cp_rotate));
}

// [parallelism] of v0.2.x: the 1-D strategies' data-parallel degrees and resharding, or the mesh.
template <class Int, class Str, class Bool>
void add_parallelism_entries(const TrainConfig& c, const Mesh& mesh, Int& integer, Str& str, Bool& boolean) {
  const int W = c.world_size();
  const int Ns = shard_size(c);
  const auto s = c.parallelism.sharding_strategy;
  if (!mesh.one_d()) {
    add_mesh_entries(c, mesh, integer, str, boolean);
  } else if (s == ShardingStrategy::no_shard) {
    integer("parallelism", "data_parallel_replicate_degree", W, "no_shard: plain data parallel");
    integer("parallelism", "data_parallel_shard_degree", 1);
  } else if (s == ShardingStrategy::hybrid_shard) {
    integer("parallelism", "data_parallel_replicate_degree", W / Ns, "hybrid_shard replicas");
    integer("parallelism", "data_parallel_shard_degree", Ns, "hybrid_shard group size");
  } else {
    integer("parallelism", "data_parallel_replicate_degree", 1);
    integer("parallelism", "data_parallel_shard_degree", W);
  }
  if (s == ShardingStrategy::shard_grad_op)
    str("parallelism", "fsdp_reshard_after_forward", "never", "shard_grad_op: keep parameters gathered");
  else if (s != ShardingStrategy::no_shard)
    str("parallelism", "fsdp_reshard_after_forward", "default");
}


// What v0.2's files cannot express, refused by key: a 16-bit reduction, a float8 recipe they
// do not write (torchtitan_version_refusal).
void require_v02_expressible(const TrainConfig& c) {
  require_fp32_reduce(c);
  if (const std::string why = torchtitan_version_refusal(c, TorchtitanVersion::v0_2); !why.empty())
    throw ConfigError("torchtitan", "precision.fp8", why);
}

// v0.2's [model] flavor of the plan's model and, when no flavor of torchtitan's model has its
// dimensions, the model's own label with a note saying to register it under that name.
std::pair<std::string, std::string> v02_flavor(const TrainConfig& c) {
  const std::string flavor = torchtitan_flavor(c.model, TorchtitanVersion::v0_2);
  if (!flavor.empty()) return {flavor, ""};
  const ModelSpec& m = c.model;
  return {c.model_label(), fmt::format("no torchtitan {} flavor has these dimensions (L={} d={} heads={} kv={} "
                                       "ffn={}); register one under this name",
                                       torchtitan_model_name(m), m.n_layers, m.d_model, m.n_heads, m.n_kv_heads,
                                       m.ffn_dim)};
}

// torchtitan.toml's entries as they are added: each a one-key TOML table, its command-line
// override and a note.
class TitanEntries {
 public:
  void integer(const std::string& sec, const std::string& key, int64_t v, const std::string& note = "") {
    add(sec, key, v, sec + "." + key + "=" + std::to_string(v), note);
  }
  void number(const std::string& sec, const std::string& key, double v, const std::string& note = "") {
    add(sec, key, v, sec + "." + key + "=" + real(v), note);
  }
  void str(const std::string& sec, const std::string& key, const std::string& v, const std::string& note = "") {
    add(sec, key, v, sec + "." + key + "=" + v, note);
  }
  void boolean(const std::string& sec, const std::string& key, bool v) {
    add(sec, key, v, sec + "." + (v ? key : tyro_negated(key)));
  }
  // A list[str]: a TOML array, one comma-separated override value (manager.py list_str_rule).
  void list(const std::string& sec, const std::string& key, const std::vector<std::string>& v,
            const std::string& note = "") {
    toml::array a;
    for (const auto& x : v) a.push_back(x);
    add(sec, key, std::move(a), sec + "." + key + "=" + fmt::format("{}", fmt::join(v, ",")), note);
  }
  std::vector<TitanEntry> take() { return std::move(e_); }

 private:
  template <class V>
  void add(const std::string& sec, const std::string& key, V value, const std::string& cli,
           const std::string& note = "") {
    toml::table one;
    one.insert(key, std::move(value));
    e_.push_back({sec, key, std::move(one), cli, note});
  }
  std::vector<TitanEntry> e_;
};

// [model] name and flavor, and the float8 / MX converter the plan has.
void v02_model_entries(const TrainConfig& c, TitanEntries& w) {
  w.str("model", "name", torchtitan_model_name(c.model));
  const auto [flavor, flavor_note] = v02_flavor(c);
  w.str("model", "flavor", flavor, flavor_note);
  // The float8 converter's registered name (torchtitan/components/quantization/float8.py,
  // register_model_converter(Float8LinearConverter, "quantize.linear.float8") at
  // pytorch/torchtitan@e61f2cce4). FSDP's float8
  // all-gather stays off (enable_fsdp_float8_all_gather = false by default; removed upstream).
  // The recipe: [quantize.linear.float8] recipe_name (job_config.py Float8Linear @e61f2cce4,
  // Literal["tensorwise", "rowwise", "rowwise_with_gw_hp"] | None). tensorwise is left unset
  // (None = torchao's Float8LinearConfig() default, tensorwise): a recipe_name together with
  // enable_fsdp_float8_all_gather is refused by components/quantization/float8.py.
  // MXFP8: the MX converter (mx.py line 171 @e61f2cce4, "quantize.linear.mx"), recipe_name mxfp8_cublas
  // and filter_fqns ["output"] (job_config.py MXLinear's defaults, written out): the LM head bf16.
  if (c.precision.fp8 == Fp8Recipe::mxfp8) {
    w.list("model", "converters", {"quantize.linear.mx"}, "MXFP8 matmuls (torchao MXLinear, mxfp8_cublas)");
    w.str("quantize.linear.mx", "recipe_name", "mxfp8_cublas", "torchao MXLinearConfig recipe");
    w.list("quantize.linear.mx", "filter_fqns", {"output"}, "the LM head stays bf16, as planned");
  } else if (c.precision.fp8_on()) {
    w.list("model", "converters", {"quantize.linear.float8"},
         fmt::format("fp8 matmuls (float8 linear, {})", to_string(c.precision.fp8)));
    if (c.precision.fp8 != Fp8Recipe::tensorwise)
      w.str("quantize.linear.float8", "recipe_name", to_string(c.precision.fp8), "torchao Float8LinearRecipeName");
    // filter_fqns defaults to [] (job_config.py Float8Linear @81af8833d): every Linear whose dims
    // divide by 16, the LM head too, would run in float8; the plan keeps the head bf16.
    w.list("quantize.linear.float8", "filter_fqns", {"output"}, "the LM head stays bf16, as planned");
  }
}

// [optimizer] (the AdamW the plan charged) and [lr_scheduler].
void v02_optimizer_entries(const TrainConfig& c, TitanEntries& w) {
  w.str("optimizer", "name", "AdamW");
  // The AdamW the plan charged (runtime term adamw_update of c.runtime, torchtitan's spelling:
  // job_config.py Optimizer.implementation, Literal["for-loop", "foreach", "fused"]).
  // bf16 moments are refused for the generations this file is written for (runtime term
  // optimizer_state_dtypes: torchtitan 0610235bb is of 2026-04-15).
  assert(c.optimizer.state_dtype == "master");
  AdamwUpdate update{};
  const bool known = parse_adamw_update(runtime_preset(c.runtime).terms.adamw_update, update);
  assert(known && "the runtime schema allows fused | foreach | for_loop");
  (void)known;
  w.str("optimizer", "implementation", torchtitan_name(update),
      fmt::format("the AdamW the plan charged (runtime {}'s adamw_update)", c.runtime));
  w.number("optimizer", "lr", c.optimizer.lr);
  w.number("optimizer", "beta1", c.optimizer.beta1);
  w.number("optimizer", "beta2", c.optimizer.beta2);
  w.number("optimizer", "eps", c.optimizer.eps);
  w.number("optimizer", "weight_decay", c.optimizer.weight_decay);

  w.integer("lr_scheduler", "warmup_steps", c.lr_schedule.warmup_steps);
  if (c.lr_schedule.decay == "constant") {
    w.number("lr_scheduler", "decay_ratio", 0.0, "constant lr: no decay phase");
  } else {
    w.str("lr_scheduler", "decay_type", c.lr_schedule.decay);
    w.number("lr_scheduler", "min_lr_factor", c.lr_schedule.min_lr_factor);
  }
}

// [training]: batch sizes (per data-parallel rank beside a mesh), sequence, clipping, steps, dtypes.
void v02_training_entries(const TrainConfig& c, const Mesh& mesh, TitanEntries& w) {
  const int W = c.world_size();
  if (mesh.one_d()) {
    w.integer("training", "local_batch_size", c.training.micro_batch, "micro_batch per GPU");
    w.integer("training", "global_batch_size", int64_t(c.training.micro_batch) * c.training.grad_accum * W,
            fmt::format("sequences per step: micro_batch x grad_accum {} x {} ranks", c.training.grad_accum, W));
  } else {
    w.integer("training", "local_batch_size", c.training.micro_batch, "micro_batch per data-parallel rank");
    w.integer("training", "global_batch_size", int64_t(c.training.micro_batch) * c.training.grad_accum * mesh.dp(),
            fmt::format("sequences per step: micro_batch x grad_accum {} x {} data-parallel ranks",
                        c.training.grad_accum, mesh.dp()));
  }
  w.integer("training", "seq_len", c.training.seq_len);
  w.number("training", "max_norm", c.training.max_grad_norm);
  w.integer("training", "steps", c.training.steps);
  if (c.precision.master_dtype == "bf16")
    w.str("training", "dtype", "bfloat16", "full bf16: parameters, gradients and AdamW states in bf16 (precision.master_dtype)");
  w.str("training", "mixed_precision_param", torch_dtype(c.precision.param_dtype));
  w.str("training", "mixed_precision_reduce", "float32");  // the only value torchtitan accepts
}

// [activation_checkpoint] and [compile].
void v02_checkpointing_entries(const TrainConfig& c, TitanEntries& w) {
  const auto& ac = c.activation_checkpointing;
  if (ac.mode == AcMode::selective_op) {
    w.str("activation_checkpoint", "mode", "selective", "op-level selective checkpointing");
    w.str("activation_checkpoint", "selective_ac_option", "op");
  } else {
    w.str("activation_checkpoint", "mode", to_string(ac.mode));
  }
  if (ac.mode == AcMode::selective) {
    const int k = every_kth_block(ac.ratio);
    const double got = 1.0 / k;
    w.str("activation_checkpoint", "selective_ac_option", std::to_string(k),
        std::abs(got - ac.ratio) < 1e-9
            ? fmt::format("every {}-th block = ratio {:g}", k, ac.ratio)
            : fmt::format("ratio {:g} is not 1/k: every {}-th block checkpoints {:g} of them (more, so "
                          "memory stays within the plan; slower)",
                          ac.ratio, k, got));
  }
  w.boolean("compile", "enable", c.precision.compile);
  if (c.precision.compile) w.list("compile", "components", {"model", "loss"});

}

// [checkpoint], where the plan saves or loads.
void v02_checkpoint_entries(const TrainConfig& c, TitanEntries& w) {
  const CheckpointConfig& ck = c.checkpoint;
  if (!ck.dir.empty() || !ck.initial_load_path.empty()) {
    w.boolean("checkpoint", "enable", true);
    if (!ck.dir.empty()) w.str("checkpoint", "folder", ck.dir);
    // run.toml's interval 0 saves only at the end: torchtitan saves at its last step and every
    // interval (default 500), so the end is interval = steps.
    w.integer("checkpoint", "interval", ck.interval > 0 ? ck.interval : c.training.steps);
    w.integer("checkpoint", "keep_latest_k", ck.keep);
    // Literal["disabled", "async", "async_with_pinned_mem"] (job_config.py Checkpoint @81af8833d).
    w.str("checkpoint", "async_mode", ck.async_mode);
    if (!ck.initial_load_path.empty()) {
      w.str("checkpoint", "initial_load_path", ck.initial_load_path,
          ck.dir.empty() ? "Hugging Face weights; enabled for them, torchtitan also saves to its default folder "
                           "every interval"
                         : "Hugging Face weights (model.safetensors + config.json)");
      w.boolean("checkpoint", "initial_load_in_hf", true);
    }
  }
}

// [metrics], [comm] and [debug].
void v02_run_entries(const TrainConfig& c, TitanEntries& w) {
  w.integer("metrics", "log_freq", c.metrics.log_freq);
  // comm.timeout_seconds is the collective timeout of training (after the first step); the
  // start-up's own, init_timeout_seconds, keeps torchtitan's default (job_config.py Comm).
  w.integer("comm", "train_timeout_seconds", std::llround(c.comm.timeout_seconds));
  // TOML integers are 64-bit signed (toml.io v1.0.0, Integer).
  if (c.training.seed > uint64_t(INT64_MAX))
    throw ConfigError("torchtitan.toml", "training.seed",
                      fmt::format("{} is above 9223372036854775807, the largest TOML integer", c.training.seed));
  w.integer("debug", "seed", int64_t(c.training.seed));
}

std::vector<TitanEntry> torchtitan_entries(const TrainConfig& c) {
  require_v02_expressible(c);
  TitanEntries w;
  v02_model_entries(c, w);
  v02_optimizer_entries(c, w);
  const Mesh mesh = resolve_mesh(c.parallelism, c.world_size(), c.cluster.gpus_per_node);
  v02_training_entries(c, mesh, w);
  auto integer = [&w](auto&&... a) { w.integer(a...); };
  auto str = [&w](auto&&... a) { w.str(a...); };
  auto boolean = [&w](auto&&... a) { w.boolean(a...); };
  add_parallelism_entries(c, mesh, integer, str, boolean);
  v02_checkpointing_entries(c, w);
  v02_checkpoint_entries(c, w);
  v02_run_entries(c, w);
  return w.take();
}

// The first comment lines of every file here. Refuses (ConfigError) a config whose strings
// cannot be written into a file (shared/emitted_text.h): this runs before any text is made.
std::string header(const TrainConfig& c, const char* tool) {
  require_emittable_strings(c);
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
  if (m.qk_norm) {  // torchtitan's qwen3 model (v0.2.x; the current recipe writes llama3 only)
    if (tv == TorchtitanVersion::v0_2)
      for (const Dims& d : kTorchtitanQwen3)
        if (same(m, d)) return d.name;
    return "";
  }
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

// How to launch torchtitan on the plan's nodes: run_train.sh on one node (it runs torchrun
// --nproc_per_node=$NGPU with a local rendezvous and sets the allocator variable, run_train.sh
// @81af8833d and @b5bcd76c6); on several, torchrun itself on every node with one rendezvous and
// the expandable segments the plan assumes (PYTORCH_ALLOC_CONF from torch 2.8,
// PYTORCH_CUDA_ALLOC_CONF before: both set). `env` ("" or e.g. "PYTHONPATH=...") goes before
// both commands, `run_train_env` names the config for run_train.sh, `train_args` for
// torchtitan.train.
std::string torchtitan_launch(const TrainConfig& c, const std::string& env, const std::string& run_train_env,
                              const std::string& train_args) {
  const std::string prefix = env.empty() ? "" : env + " ";
  if (c.cluster.nodes == 1)
    return fmt::format("# Launch, from torchtitan's checkout:\n#   {}{} NGPU={} ./run_train.sh\n", prefix, run_train_env,
                       c.cluster.gpus_per_node);
  return fmt::format(
      "# Launch on each of the {} nodes, from torchtitan's checkout (run_train.sh starts one node only):\n"
      "#   {}PYTORCH_ALLOC_CONF=expandable_segments:True PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \\\n"
      "#   torchrun --nnodes {} --nproc_per_node {} --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500 \\\n"
      "#     -m torchtitan.train {}\n",
      c.cluster.nodes, prefix, c.cluster.nodes, c.cluster.gpus_per_node, train_args);
}

// How a file of arguments, one shell word per line, is used (`file` its name, `command` what
// takes them).
std::string word_file_usage(const std::string& file, const std::string& command) {
  return fmt::format(
      "# Each line below is one argument written as a shell word (quoted where it needs quotes); lines\n"
      "# starting with # are comments. In bash, the arguments with their quotes removed:\n"
      "#   eval \"args=($(grep -v '^#' {}))\"\n"
      "#   {} \"${{args[@]}}\"\n"
      "# In Python: shlex.split(open(\"{}\").read(), comments=True).\n",
      file, command, file);
}

std::string render_torchtitan_toml(const TrainConfig& c) {
  std::string o = header(c, "torchtitan");
  o += "# torchtitan v0.2.1 and v0.2.2 TOML job config (torchtitan/config/job_config.py from v0.2.1,\n"
       "# 81af8833d, to 9810191bb^; v0.2.0 has no [debug] table). The current generation (from 9810191bb,\n"
       "# #2386) reads no TOML: emit --torchtitan-version current writes its torchtitan_recipe.py.\n";
  o += torchtitan_launch(c, "", "CONFIG_FILE=torchtitan.toml", "--job.config_file torchtitan.toml");
  std::string section;
  for (const TitanEntry& e : torchtitan_entries(c)) {
    if (e.section != section) {
      section = e.section;
      o += fmt::format("\n[{}]\n", section);  // section names are this file's constants
    }
    o += toml_line(e.key_value);
    if (!e.note.empty()) o += "  # " + e.note;
    o += "\n";
  }
  return o;
}

std::string render_torchtitan_overrides(const TrainConfig& c) {
  std::string o = header(c, "torchtitan");
  o += "# The settings of torchtitan.toml as command-line overrides for torchtitan v0.2.1 and v0.2.2 (tyro:\n"
       "# a boolean is a flag, --compile.enable / --compile.no-enable; a list is one comma-separated value).\n"
       "# The current generation (from 9810191bb, #2386) has other keys: emit --torchtitan-version current.\n";
  o += word_file_usage("torchtitan_overrides.txt", "CONFIG_FILE=... NGPU=... ./run_train.sh");
  for (const TitanEntry& e : torchtitan_entries(c)) {
    if (!e.note.empty()) o += "# " + e.note + "\n";
    o += shell_quote("--" + e.cli) + "\n";
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

// fms-fsdp train_config's defaults point at its authors' cluster (data_path "/fsx/data",
// tokenizer_path "/fsx/tokenizer", ckpt_save_path and ckpt_load_path "/fsx/output/ckpt":
// fms_fsdp/config/training.py @5a296af); fms-fsdp saves at its last step whatever
// checkpoint_interval is (fms_fsdp/utils/train_utils.py, `batch_idx == cfg.num_steps`).
// Where fms-fsdp saves without a checkpoint folder in the plan (render_fms_fsdp_args).
constexpr const char* kFmsFsdpCheckpointFolder = "fms_ckpt";

std::vector<std::string> fms_fsdp_notes(const TrainConfig& c) {
  std::vector<std::string> notes;
  const std::string data =
      c.data.path.empty()
          ? "the plan names no data (emit --data / data.path)"
          : fmt::format("data.path {} is an llm.c token file, which fms-fsdp does not read", c.data.path);
  notes.push_back(fmt::format(
      "no data arguments are written: {}. fms-fsdp reads its own layout (--data_path DIR of --file_type shards with "
      "--datasets, --weights, --tokenizer_path); add those, or --use_dummy_dataset=True to time the plan on "
      "generated tokens. Without them it reads its defaults /fsx/data and /fsx/tokenizer.",
      data));
  if (c.checkpoint.dir.empty())
    notes.push_back(fmt::format(
        "the plan has no checkpoint folder (checkpoint.dir), but fms-fsdp cannot turn saving off: it saves at its last "
        "step and every --checkpoint_interval into --ckpt_save_path and resumes from there (default /fsx/output/ckpt). "
        "Written instead: --ckpt_save_path and --ckpt_load_path {0}, a folder relative to where torchrun runs, saved "
        "at the end only (--checkpoint_interval = num_steps); set checkpoint.dir to choose the folder.",
        kFmsFsdpCheckpointFolder));
  // fms-fsdp fixes its optimizer and schedule in code (main_training_llama.py @5a296af lines
  // 113-146): AdamW betas (0.9, 0.95), weight_decay 0.1, eps torch's 1e-8; warmup min(2000,
  // num_steps // 20) steps (quadratic), then cosine to 0.1 of the peak. Each plan setting it cannot
  // take is named; the run uses fms-fsdp's.
  const OptimizerConfig& o = c.optimizer;
  const LrScheduleConfig& l = c.lr_schedule;
  std::vector<std::string> differ;
  if (o.beta1 != 0.9 || o.beta2 != 0.95) differ.push_back(fmt::format("optimizer.beta1/beta2 {:g}/{:g} (runs 0.9/0.95)", o.beta1, o.beta2));
  if (o.eps != 1e-8) differ.push_back(fmt::format("optimizer.eps {:g} (runs 1e-08)", o.eps));
  if (o.weight_decay != 0.1) differ.push_back(fmt::format("optimizer.weight_decay {:g} (runs 0.1)", o.weight_decay));
  const int fms_warmup = std::min(2000, c.training.steps / 20);
  if (l.warmup_steps != fms_warmup)
    differ.push_back(fmt::format("lr_schedule.warmup_steps {} (runs min(2000, steps / 20) = {})", l.warmup_steps, fms_warmup));
  if (l.decay != "cosine") differ.push_back(fmt::format("lr_schedule.decay \"{}\" (runs cosine)", l.decay));
  if (l.min_lr_factor != 0.1) differ.push_back(fmt::format("lr_schedule.min_lr_factor {:g} (runs 0.1)", l.min_lr_factor));
  if (!differ.empty())
    notes.push_back(fmt::format("fms-fsdp fixes its optimizer and schedule in main_training_llama.py, so these plan "
                                "settings are not carried: {}.",
                                fmt::join(differ, "; ")));
  return notes;
}

std::string render_fms_fsdp_args(const TrainConfig& c) {
  const auto s = c.parallelism.sharding_strategy;
  const auto& ac = c.activation_checkpointing;
  std::string o = header(c, "fms-fsdp");
  o += "# Arguments of fms-fsdp's main_training_llama.py (fms_fsdp/config/training.py train_config).\n";
  o += word_file_usage("fms_fsdp_args.txt", "torchrun ... main_training_llama.py");
  for (const std::string& note : fms_fsdp_notes(c)) o += "# NOTE: " + note + "\n";
  // One argument, --key=value, as one shell word.
  const auto arg = [&](const std::string& key, const std::string& value) {
    o += shell_quote("--" + key + "=" + value) + "\n";
  };
  const std::string variant = fms_fsdp_variant(c.model);
  if (variant.empty())
    o += fmt::format("# no fms-fsdp model_variant has these dimensions (L={} d={} heads={} kv={} ffn={}); add one\n",
                     c.model.n_layers, c.model.d_model, c.model.n_heads, c.model.n_kv_heads, c.model.ffn_dim);
  arg("model_variant", variant.empty() ? c.model_label() : variant);
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
  arg("sharding_strategy", strategy);
  arg("fsdp_activation_checkpointing", ac.mode == AcMode::none ? "False" : "True");
  if (ac.mode == AcMode::selective_op)
    o += "# selective_op: fms-fsdp has no op-level checkpointing; every block is checkpointed (less memory, slower)\n";
  if (ac.mode != AcMode::none)
    arg("selective_checkpointing", fmt::format("{:g}", ac.mode == AcMode::selective ? ac.ratio : 1.0));
  if (c.precision.param_dtype == "fp16")
    o += "# fms-fsdp picks bf16 when the GPU supports it, else fp16\n";
  if (c.precision.param_dtype != "fp32" && c.precision.reduce_dtype != c.precision.param_dtype)
    o += fmt::format("# fms-fsdp's mixed-precision policies reduce in the param dtype (bfSixteen: bf16); the plan's {} "
                     "reduction is not expressible here and the run reduces in {}\n",
                     c.precision.reduce_dtype, c.precision.param_dtype);
  arg("mixed_precision", c.precision.param_dtype == "fp32" ? "False" : "True");
  if (c.precision.fp8_on()) o += "# fp8: fms-fsdp has no fp8 switch; the plan's fp8 speed-up does not apply\n";
  if (c.training.grad_accum > 1)
    o += fmt::format("# fms-fsdp has no gradient accumulation: the plan's {} micro-steps per step become {} "
                     "steps of 1/{} the batch\n",
                     c.training.grad_accum, c.training.grad_accum, c.training.grad_accum);
  arg("batch_size", fmt::format("{}", c.training.micro_batch));
  arg("seq_length", fmt::format("{}", c.training.seq_len));
  arg("vocab_size", fmt::format("{}", c.model.vocab));
  arg("num_steps", fmt::format("{}", int64_t(c.training.steps) * c.training.grad_accum));
  arg("learning_rate", real(c.optimizer.lr));
  arg("grad_clip_thresh", real(c.training.max_grad_norm));
  arg("seed", fmt::format("{}", c.training.seed));
  arg("use_torch_compile", c.precision.compile ? "True" : "False");
  arg("report_interval", fmt::format("{}", c.metrics.log_freq));
  // fms-fsdp resumes from the save folder when it holds a checkpoint, else starts from the load
  // path (checkpointing_utils.py Checkpointer.load): both the plan's folder, or, without one, a
  // folder of the run's own (fms_fsdp_notes) rather than fms-fsdp's default on its authors' cluster.
  const std::string folder = c.checkpoint.dir.empty() ? std::string(kFmsFsdpCheckpointFolder) : c.checkpoint.dir;
  arg("ckpt_save_path", folder);
  arg("ckpt_load_path", folder);
  // interval 0 (or no checkpointing) = only at the end: fms-fsdp saves at its last step and every
  // checkpoint_interval (default 10000), so the end is checkpoint_interval = num_steps.
  arg("checkpoint_interval", std::to_string(c.checkpoint.interval > 0 && !c.checkpoint.dir.empty()
                                                ? c.checkpoint.interval
                                                : c.training.steps));
  return o;
}


std::optional<TorchtitanVersion> parse_torchtitan_version(const std::string& s) {
  if (s == "0.2") return TorchtitanVersion::v0_2;
  if (s == "current") return TorchtitanVersion::current;
  return std::nullopt;
}

// Float8LinearConverter.Config.recipe_name: Literal["rowwise", "rowwise_with_gw_hp"]
// (torchtitan/components/quantization/float8.py @b5bcd76c6; tensorwise removed in #3127), and
// the MXFP8LinearConverter (mx.py) and NVFP4LinearConverter (nvfp4.py, bcc09297a) of that commit;
// v0.2's [quantize.linear.float8] recipe_name: tensorwise (unset), rowwise, rowwise_with_gw_hp,
// and its [quantize.linear.mx] converter (mxfp8_cublas); no NVFP4 before bcc09297a.
std::vector<Fp8Recipe> torchtitan_fp8_recipes(TorchtitanVersion tv) {
  if (tv == TorchtitanVersion::current)
    return {Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp, Fp8Recipe::mxfp8, Fp8Recipe::nvfp4};
  return {Fp8Recipe::tensorwise, Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp, Fp8Recipe::mxfp8};
}

const char* torchtitan_generation(TorchtitanVersion tv) {
  return tv == TorchtitanVersion::current ? "torchtitan" : "torchtitan-2025-10";
}

std::string torchtitan_version_refusal(const TrainConfig& c, TorchtitanVersion tv) {
  // The current generation has no rotate-method setting (no rotate_method in pytorch/torchtitan
  // @b5bcd76c6): a plan for the alltoall rotation cannot be told to it.
  if (tv == TorchtitanVersion::current && c.parallelism.cp > 1 && c.parallelism.cp_rotate != CpRotate::allgather)
    return fmt::format("torchtitan's current generation cannot be told parallelism.cp_rotate = \"{}\": it has no "
                       "rotate-method setting (none at @b5bcd76c6); plan cp_rotate = \"allgather\", or "
                       "--torchtitan-version 0.2 (experimental.context_parallel_rotate_method)",
                       to_string(c.parallelism.cp_rotate));
  if (c.precision.fp8 == Fp8Recipe::none) return "";
  const std::vector<Fp8Recipe> ok = torchtitan_fp8_recipes(tv);
  if (std::find(ok.begin(), ok.end(), c.precision.fp8) != ok.end()) return "";
  std::vector<std::string> names;
  for (Fp8Recipe r : ok) names.push_back(to_string(r));
  if (tv == TorchtitanVersion::v0_2)
    return fmt::format("torchtitan v0.2's files as emitted here cannot run precision.fp8 = \"{}\": their float8 "
                       "recipes are {} (NVFP4 is written for --torchtitan-version current only: torchtitan added it in "
                       "bcc09297a, after v0.2)",
                       to_string(c.precision.fp8), fmt::join(names, " | "));
  return fmt::format("torchtitan's current generation cannot run precision.fp8 = \"{}\": its float8 recipes are "
                     "{} (tensorwise scaling and float8 all-gather removed in pytorch/torchtitan#3127, 6348d93d1); "
                     "choose one of those or --torchtitan-version 0.2",
                     to_string(c.precision.fp8), fmt::join(names, " | "));
}

namespace {
// The converters argument of model_registry for the plan's precision.fp8 (current generation,
// @b5bcd76c6): Float8LinearConverter with its recipe; MXFP8LinearConverter on the blocks'
// Linears only (fqns ["layers."]: with fqns empty it converts every Linear, the LM head too,
// which the plan keeps in bf16); NVFP4LinearConverter on the leading blocks as torchtitan's
// llama3_8b_first_85_pct_layers_nvfp4 (nvfp4_bf16_tail_fqns(n_layers, 0.15)). "" = none.
std::string torchtitan_converters(const TrainConfig& c) {
  const std::string compile = c.precision.compile ? "True" : "False";
  switch (c.precision.fp8) {
    case Fp8Recipe::none: return "";
    case Fp8Recipe::mxfp8:
      return fmt::format("MXFP8LinearConverter.Config(fqns=[\"layers.\"], model_compile_enabled={})", compile);
    case Fp8Recipe::nvfp4:
      return fmt::format("NVFP4LinearConverter.Config(fqns=nvfp4_bf16_tail_fqns({}, 0.15), model_compile_enabled={})",
                         c.model.n_layers, compile);
    default:  // filter_fqns defaults to [] (float8.py @b5bcd76c6): the LM head (lm_head) kept bf16, as planned
      return fmt::format("Float8LinearConverter.Config(recipe_name={}, filter_fqns=[\"lm_head\"], "
                         "model_compile_enabled={})",
                         python_str(to_string(c.precision.fp8)), compile);
  }
}
}  // namespace

// The recipe's parallelism: the 1-D strategies' data-parallel degrees and resharding, or the mesh
// (configs.py Parallelism at b5bcd76c6; tests/planner/data/torchtitan_keys_current.txt). `set`
// writes one attribute.
template <class Set>
void recipe_parallelism(const TrainConfig& c, const Mesh& mesh, Set& set) {
  const int W = c.world_size();
  const int Ns = shard_size(c);
  const auto s = c.parallelism.sharding_strategy;
  if (!mesh.one_d()) {
    set("parallelism.data_parallel_replicate_degree", std::to_string(mesh.dp_replicate), "the mesh (shared/train_config.h)");
    set("parallelism.data_parallel_shard_degree", std::to_string(mesh.dp_shard));
  } else if (s == ShardingStrategy::no_shard) {
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
    set("parallelism.fsdp_reshard_after_forward", python_str("never"), "shard_grad_op: keep parameters gathered");
  else if (s != ShardingStrategy::no_shard)
    set("parallelism.fsdp_reshard_after_forward", python_str("default"));
  // Data parallel only: the base config's tensor parallelism (8 for 70B and 405B) and any
  // other dimension off, so the degrees multiply to the world size (parallel_dims.py).
  if (mesh.one_d()) {
    set("parallelism.tensor_parallel_degree", "1", "FSDP only");
    set("parallelism.pipeline_parallel_degree", "1");
    set("parallelism.context_parallel_degree", "1");
  } else {
    // The mesh (configs.py Parallelism at b5bcd76c6; tests/planner/data/torchtitan_keys_current.txt).
    const ParallelismConfig& par = c.parallelism;
    set("parallelism.tensor_parallel_degree", std::to_string(mesh.tp), "with sequence parallel and loss parallel");
    set("parallelism.pipeline_parallel_degree", std::to_string(mesh.pp));
    set("parallelism.context_parallel_degree", std::to_string(mesh.cp));
    // Async TP is a CompileConfig field: written with the compile config below.
    if (mesh.pp > 1) {
      set("parallelism.pipeline_parallel_schedule", python_str(to_string(par.pp_schedule)));
      set("parallelism.num_pp_microbatches", std::to_string(pp_microbatches(par, c.training.micro_batch)),
          fmt::format("micro_batch {} in micro-batches of {}", c.training.micro_batch, par.pp_microbatch));
      if (const int lps = torchtitan_pp_layers_per_stage(c, mesh))
        set("parallelism.pipeline_parallel_layers_per_stage", std::to_string(lps));
    }
  }
}

namespace {

// Where torchtitan's current Trainer captures CUDA graphs, as runtime torchtitan plans it
// (planner/model/runtime.cpp host_units_graphed): not with pipeline parallelism, which it refuses
// them with (trainer.py _validate_cuda_graphs), and not under ROCm, where wrap_with_cuda_graph
// runs eagerly (cudagraph.py: torch.version.hip): a preset without a CUDA compute capability.
enum class Graphs { captured, off_with_pp, eager_on_rocm };
Graphs torchtitan_graphs(const TrainConfig& c) {
  if (c.parallelism.pp > 1) return Graphs::off_with_pp;
  return load_hardware(c.cluster.hardware).gpu.compute_capability.empty() ? Graphs::eager_on_rocm : Graphs::captured;
}
// The header's clause on CUDA graphs, the gradients and the graphs' memory pool.
std::string graphs_clause(const TrainConfig& c) {
  switch (torchtitan_graphs(c)) {
    case Graphs::off_with_pp:
      return "CUDA graphs off\n# (torchtitan refuses them with pipeline parallelism) and the gradients freed between steps.\n";
    case Graphs::eager_on_rocm:
      return "CUDA graphs asked\n# for, but under ROCm torchtitan's wrapper runs the step eagerly (no graph pool), the gradients kept between\n"
             "# steps (zero_grad(set_to_none=False)).\n";
    case Graphs::captured:
      break;
  }
  return "CUDA graphs on\n# (f84224af0: no host time per unit) with the gradients kept between steps (zero_grad(set_to_none=False));\n"
         "# the graphs' private memory pool, whole cudaMalloc segments beside the eager optimizer's, in the reserved memory.\n";
}

// The recipe's head: the file header, how to run it, what the plan charged that a recipe cannot
// set, and the imports the settings below use, down to the function's first line.
std::string recipe_preamble(const TrainConfig& c, const std::string& base) {
  const auto& ac = c.activation_checkpointing;
  std::string o = header(c, "torchtitan");  // refuses strings that cannot be written first
  o += "# torchtitan's current configuration (a Trainer.Config function, --module/--config; read at\n"
       "# pytorch/torchtitan@b5bcd76c6). Put this file where Python finds it (PYTHONPATH=/path/to/this/dir).\n";
  o += torchtitan_launch(c, "PYTHONPATH=/path/to/this/dir", "MODULE=torchtitan_recipe CONFIG=shardcast_plan",
                         "--module torchtitan_recipe --config shardcast_plan");
  // What runtime torchtitan (configs/runtimes/torchtitan.toml) plans that this recipe sets, and
  // what it plans that a recipe cannot set.
  if (c.runtime != "torchtitan")
    o += "# Planned for runtime " + c.runtime + ", not this generation (runtime torchtitan): what this file runs below\n"
         "# (FlexAttention document masks, the chunked loss, CUDA graphs) is not what that plan charged.\n";
  o += "# As runtime torchtitan plans it (docs/cost-model.md): FlexAttention with per-document masks, whose work is\n"
       "# that of the documents the data loader packs (the plan's data.mean_doc_len: " +
       (c.data.mean_doc_len > 0 ? fmt::format("{:g} tokens", c.data.mean_doc_len)
                                : std::string("0, dense causal work over the whole sequence")) +
       "; not a setting:\n# your data decides it); the loss as ChunkedLossWrapper in 8 chunks (9530a874d); " + graphs_clause(c);
  o += "from torchtitan.components.optimizer.optimizer import ParamGroupConfig\n";
  if (c.precision.fp8 == Fp8Recipe::mxfp8) o += "from torchtitan.components.quantization import MXFP8LinearConverter\n";
  else if (c.precision.fp8 == Fp8Recipe::nvfp4)
    o += "from torchtitan.components.quantization import NVFP4LinearConverter\n"
         "from torchtitan.components.quantization.nvfp4 import nvfp4_bf16_tail_fqns\n";
  else if (c.precision.fp8_on()) o += "from torchtitan.components.quantization import Float8LinearConverter\n";
  o += "from torchtitan.config import CompileConfig\n";
  if (ac.mode != AcMode::none) o += "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n";
  o += "from torchtitan.models.llama3 import model_registry\n";
  o += fmt::format("from torchtitan.models.llama3.config_registry import {}\n", base);
  o += "from torchtitan.trainer import Trainer\n\n\n";
  o += "def shardcast_plan() -> Trainer.Config:\n";
  o += fmt::format("    config = {}()\n", base);
  return o;
}

// The model: the flavor with the plan's converters and no others (a comment asks for a flavor
// where none has these dimensions).
template <class Set>
void recipe_model(const TrainConfig& c, const std::string& flavor, std::string& o, Set& set) {
  const std::string model_name = flavor.empty() ? c.model_label() : flavor;
  if (flavor.empty())
    o += fmt::format("    # no torchtitan llama3 flavor has these dimensions (L={} d={} heads={} kv={} ffn={} tied={}):\n"
                     "    # register one named {} in torchtitan/models/llama3/__init__.py llama3_configs\n",
                     c.model.n_layers, c.model.d_model, c.model.n_heads, c.model.n_kv_heads, c.model.ffn_dim,
                     c.model.tied_embeddings ? "yes" : "no", python_str(model_name));
  // Always the model the plan has, with the converters the plan has and no others.
  if (c.precision.fp8_on())
    set("model_spec", fmt::format("model_registry({}, converters=[{}])", python_str(model_name), torchtitan_converters(c)),
        c.precision.fp8 == Fp8Recipe::mxfp8   ? "MXFP8 matmuls in the blocks, the LM head bf16; collectives in bf16"
        : c.precision.fp8 == Fp8Recipe::nvfp4 ? "NVFP4 matmuls in the leading 85% of blocks; collectives in bf16"
                                              : "fp8 matmuls (float8 linear; collectives in bf16)");
  else
    set("model_spec", fmt::format("model_registry({})", python_str(model_name)), "bf16 matmuls: no converters");
  // torchtitan's NVFP4 config runs the spmd_types backend (config_registry.py @b5bcd76c6
  // llama3_8b_first_85_pct_layers_nvfp4: config.parallelism.spmd_backend = "spmd_types").
  if (c.precision.fp8 == Fp8Recipe::nvfp4)
    set("parallelism.spmd_backend", python_str("spmd_types"), "as torchtitan's NVFP4 config");
}

// Tokens per micro-batch and step, context length, clipping, steps and the mixed precision.
template <class Set>
void recipe_training(const TrainConfig& c, const Mesh& mesh, Set& set) {
  const int64_t micro_tokens = int64_t(c.training.micro_batch) * c.training.seq_len;
  const int dp = int(mesh.dp());  // data-parallel ranks (replicate x shard), <= W
  // With pp the data loader's micro-batch is one pipeline micro-batch, num_pp_microbatches of
  // which make the rank's micro-step (trainer.py @b5bcd76c6: tokens per dp rank =
  // num_tokens_per_microbatch_per_dp_rank x num_pp_microbatches; configs.py).
  if (mesh.pp > 1)
    set("training.num_tokens_per_microbatch_per_dp_rank",
        std::to_string(int64_t(c.parallelism.pp_microbatch) * c.training.seq_len),
        fmt::format("one pipeline micro-batch: pp_microbatch {} x seq_len {}", c.parallelism.pp_microbatch,
                    c.training.seq_len));
  else
    set("training.num_tokens_per_microbatch_per_dp_rank", std::to_string(micro_tokens),
        fmt::format("micro_batch {} x seq_len {}", c.training.micro_batch, c.training.seq_len));
  set("training.num_tokens_per_train_step", std::to_string(micro_tokens * c.training.grad_accum * dp),
      fmt::format("micro_batch {} x seq_len {} x grad_accum {} x {} ranks", c.training.micro_batch,
                  c.training.seq_len, c.training.grad_accum, dp));
  set("training.max_context_length", std::to_string(c.training.seq_len));
  set("training.max_norm", real(c.training.max_grad_norm));
  set("training.steps", std::to_string(c.training.steps));
  if (c.precision.master_dtype == "bf16")
    set("training.dtype", python_str("bfloat16"),
        "full bf16: parameters, gradients and AdamW states in bf16 (precision.master_dtype)");
  set("training.mixed_precision_param", python_str(torch_dtype(c.precision.param_dtype)));
  set("training.mixed_precision_reduce", python_str("float32"));
}

// The activation-checkpointing policy (a subcommand on the command line).
template <class Set>
void recipe_activation_checkpoint(const ActivationCheckpointingConfig& ac, Set& set) {
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
}

// compile (with async TP beside a TP mesh), the AdamW parameter group and the lr schedule.
template <class Set>
void recipe_optimizer(const TrainConfig& c, const Mesh& mesh, Set& set) {
  // A new CompileConfig: the base's async tensor parallelism (405B) goes with its TP; the plan's
  // (a CompileConfig field, configs.py @b5bcd76c6) is written into it.
  set("compile", fmt::format("CompileConfig(enable={}, components=[\"model\", \"loss\"]{})",
                             c.precision.compile ? "True" : "False",
                             mesh.tp > 1 ? fmt::format(", enable_async_tensor_parallel={}",
                                                       c.parallelism.tp_async ? "True" : "False")
                                         : std::string()));
  set("optimizer.param_groups",
      fmt::format("[\n        ParamGroupConfig(\n            pattern=r\".*\",\n            optimizer_name=\"AdamW\",\n"
                  "            optimizer_kwargs={{\"lr\": {}, \"betas\": ({}, {}), \"eps\": {}, \"weight_decay\": {}}},\n"
                  "        )\n    ]",
                  real(c.optimizer.lr), real(c.optimizer.beta1), real(c.optimizer.beta2), real(c.optimizer.eps),
                  real(c.optimizer.weight_decay)));
  // bf16 moments beside the fp32 shards (optimizer.py @b5bcd76c6 Config.implementation, since
  // 0610235bb): the fused kernel's mixed-precision path, as the plan charged it.
  if (c.optimizer.state_dtype == "bf16")
    set("optimizer.implementation", python_str("fused_opt_states_bf16"),
        "AdamW's moments in bf16 (optimizer.state_dtype), updated by the fused kernel");
  set("lr_scheduler.warmup_steps", std::to_string(c.lr_schedule.warmup_steps));
  if (c.lr_schedule.decay == "constant") {
    set("lr_scheduler.decay_ratio", "0.0", "constant lr: no decay phase");
  } else {
    set("lr_scheduler.decay_type", python_str(c.lr_schedule.decay));
    set("lr_scheduler.min_lr_factor", real(c.lr_schedule.min_lr_factor));
  }
}

// Checkpointing, where the plan saves or loads.
template <class Set>
void recipe_checkpoint(const TrainConfig& c, Set& set) {
  const CheckpointConfig& ck = c.checkpoint;
  if (!ck.dir.empty() || !ck.initial_load_path.empty()) {
    set("checkpoint.enable", "True");
    if (!ck.dir.empty()) set("checkpoint.folder", python_str(ck.dir));
    set("checkpoint.interval", std::to_string(ck.interval > 0 ? ck.interval : c.training.steps));  // 0: at the end
    set("checkpoint.keep_latest_k", std::to_string(ck.keep));
    set("checkpoint.async_mode", python_str(ck.async_mode));  // CheckpointManager.Config (dcp.py)
    if (!ck.initial_load_path.empty()) {
      set("checkpoint.initial_load_path", python_str(ck.initial_load_path),
          ck.dir.empty() ? "Hugging Face weights; enabled for them, torchtitan also saves to its default folder"
                         : "Hugging Face weights");
      set("checkpoint.initial_load_in_hf", "True");
    }
  }
}

// The loss chunks, CUDA graphs (off with pp), profiling off, logging, timeout and seed.
template <class Set>
void recipe_runtime(const TrainConfig& c, Set& set) {
  set("loss.num_chunks", "8", "ChunkedLossWrapper, as the registered config and the plan");
  // torchtitan refuses CUDA graphs with pipeline parallelism (trainer.py _validate_cuda_graphs),
  // and the plan is then its run without them (planner/model/runtime.cpp).
  switch (torchtitan_graphs(c)) {
    case Graphs::off_with_pp:
      set("training.disable_cuda_graphs", "True", "torchtitan runs no CUDA graphs with pipeline parallelism; planned so");
      break;
    case Graphs::eager_on_rocm:
      set("training.disable_cuda_graphs", "False", "the default; eager under ROCm, as planned");
      break;
    case Graphs::captured:
      set("training.disable_cuda_graphs", "False", "CUDA graphs, as planned");
      break;
  }
  // The base config profiles every 100 steps (a trace the plan does not time).
  set("profiler.enable_profiling", "False");
  set("metrics.log_freq", std::to_string(c.metrics.log_freq));
  set("comm.train_timeout_seconds", std::to_string(std::llround(c.comm.timeout_seconds)),
      "collective timeout after the first step (comm.timeout_seconds)");
  set("debug.seed", std::to_string(c.training.seed));
}

}  // namespace

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
  const std::string flavor = torchtitan_flavor(c.model, TorchtitanVersion::current);
  // The registered config the recipe starts from (its data loader, tokenizer and loss); every
  // setting of it the plan does not share is set below (config_registry.py @b5bcd76c6:
  // llama3_70b and llama3_405b set tensor_parallel_degree 8, llama3_405b adds a rowwise
  // Float8LinearConverter and compile with async TP, each profiles every 100 steps).
  std::string base = "llama3_8b";
  if (flavor == "70B") base = "llama3_70b";
  if (flavor == "405B") base = "llama3_405b";
  std::string o = recipe_preamble(c, base);
  auto set = [&](const std::string& key, const std::string& value, const std::string& note = "") {
    o += fmt::format("    config.{} = {}{}\n", key, value, note.empty() ? "" : "  # " + note);
  };
  const Mesh mesh = resolve_mesh(c.parallelism, c.world_size(), c.cluster.gpus_per_node);
  recipe_model(c, flavor, o, set);
  recipe_training(c, mesh, set);
  recipe_parallelism(c, mesh, set);
  set("parallelism.expert_parallel_degree", "1");
  recipe_activation_checkpoint(c.activation_checkpointing, set);
  recipe_optimizer(c, mesh, set);
  recipe_checkpoint(c, set);
  recipe_runtime(c, set);
  o += "    return config\n";
  return o;
}

}  // namespace shardcast::planner
