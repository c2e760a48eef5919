// torchtitan v0.2.x job config -> the values of a plan. See torchtitan_config.h.
#include "planner/evidence/import/torchtitan_config.h"

#include <cctype>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/toml_reader.h"
#include "shared/train_config.h"

namespace shardcast::planner {

namespace {

// torchtitan model name + flavor -> shardcast model preset (same dimensions; torchtitan's
// llama3 flavors are Llama 3.1: torchtitan/models/llama3/__init__.py llama3_configs).
std::string preset_for(const std::string& name, const std::string& flavor) {
  if (name == "llama3") {
    if (flavor == "8B") return "llama3.1-8b";
    if (flavor == "70B") return "llama3-70b";
    if (flavor == "405B") return "llama3.1-405b";
  }
  if (name == "qwen3") {  // torchtitan/models/qwen3 qwen3_configs (v0.2.x)
    if (flavor == "8B") return "qwen3-8b";
    if (flavor == "32B") return "qwen3-32b";
  }
  if (name == "llama2") {
    if (flavor == "7B") return "llama2-7b";
    if (flavor == "13B") return "llama2-13b";
    if (flavor == "70B") return "llama2-70b";
  }
  return "";
}

std::string dtype(const std::string& file, const std::string& key, const std::string& v) {
  if (v == "bfloat16") return "bf16";
  if (v == "float32") return "fp32";
  if (v == "float16") return "fp16";
  throw ConfigError(file, key, fmt::format("'{}' (allowed: bfloat16 | float32)", v));
}

// [parallelism]'s mesh keys (torchtitan/config/job_config.py Parallelism at e61f2cce4).
std::optional<PpSchedule> pp_schedule_any_case(const std::string& name) {
  auto lower = [](std::string v) {
    for (char& ch : v) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return v;
  };
  for (PpSchedule s : {PpSchedule::one_f_one_b, PpSchedule::interleaved_1f1b, PpSchedule::gpipe,
                       PpSchedule::zbv_zero_bubble, PpSchedule::interleaved_zero_bubble})
    if (lower(to_string(s)) == lower(name)) return s;
  return std::nullopt;
}

template <class GetInt, class GetStr, class GetBool, class Present>
void read_mesh_keys(TorchtitanJob& j, GetInt& get_int, GetStr& get_str, GetBool& get_bool, Present& present) {
  get_int("parallelism", "tensor_parallel_degree", j.tp, 1);
  get_int("parallelism", "context_parallel_degree", j.cp, 1);
  get_int("parallelism", "pipeline_parallel_degree", j.pp, 1);
  get_bool("parallelism", "enable_async_tensor_parallel", j.tp_async);
  get_bool("parallelism", "disable_loss_parallel", j.disable_loss_parallel);
  get_str("parallelism", "pipeline_parallel_schedule", j.pp_schedule);
  get_str("parallelism", "context_parallel_rotate_method", j.cp_rotate);
  get_int("parallelism", "pipeline_parallel_microbatch_size", j.pp_microbatch_size, 1);
  get_int("parallelism", "pipeline_parallel_layers_per_stage", j.pp_layers_per_stage, 1);
  if (j.pp_schedule) {
    // torch's get_schedule_class (torch/distributed/pipelining/schedules.py) matches the name
    // ignoring case, so torchtitan runs "interleaved1f1b": taken as run.toml's spelling.
    const std::optional<PpSchedule> s = pp_schedule_any_case(*j.pp_schedule);
    if (!s)
      throw ConfigError(j.file, "parallelism.pipeline_parallel_schedule",
                        fmt::format("'{}' is not modelled (allowed, in any case: {})", *j.pp_schedule, kPpScheduleNames));
    j.pp_schedule = to_string(*s);
  }
  // The pipeline split's weights (generate_llm_fqn_per_model_part's input_weight / output_weight,
  // torchtitan/distributed/pipeline_parallel.py @e61f2cce4, default 1 each) and hand-given
  // stages: the planner splits as the runtime's pp_split term says, with the defaults.
  for (const char* k : {"pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers"}) {
    std::optional<int> w;
    get_int("parallelism", k, w, 0);
    if (w && *w != 1)
      throw ConfigError(j.file, std::string("parallelism.") + k,
                        fmt::format("{} is not modelled: the planner splits the pipeline as torchtitan does with its "
                                    "default 1 (the embedding and the output count one layer each)",
                                    *w));
  }
  for (const char* k : {"module_fqns_per_model_part", "pipeline_parallel_split_points"}) {
    if (present("parallelism", k))
      throw ConfigError(j.file, std::string("parallelism.") + k,
                        "hand-given pipeline stages are not modelled: the planner splits the pipeline as torchtitan "
                        "does by default (pipeline_parallel_layers_per_stage, or one stage per rank)");
  }
  if (j.cp_rotate && !parse_cp_rotate(*j.cp_rotate))
    throw ConfigError(j.file, "parallelism.context_parallel_rotate_method",
                      fmt::format("'{}' (allowed: {})", *j.cp_rotate, kCpRotateNames));
  for (const char* k : {"expert_parallel_degree", "expert_tensor_parallel_degree"}) {
    std::optional<int> d;
    get_int("parallelism", k, d, 1);
    if (d && *d > 1)
      throw ConfigError(j.file, std::string("parallelism.") + k,
                        fmt::format("{}: the planner models dense Llama models (no experts)", *d));
  }
}

}  // namespace

namespace {

// The quantization converters of model.converters and their recipes ([quantize.linear.float8]
// or [float8] recipe_name, [quantize.linear.mx] recipe_name) as precision.fp8's name; "" = none.
// Marks the keys it read in *used.
std::string read_fp8(const toml::table& root, const std::string& file, std::set<std::string>* used) {
  std::string fp8;
  if (const toml::node_view<const toml::node> n = root.at_path("model.converters")) {
    used->insert("model.converters");
    const auto* a = n.as_array();
    if (!a) throw ConfigError(file, "model.converters", "expected a list of converter names");
    for (const auto& e : *a) {
      if (!e.is_string()) throw ConfigError(file, "model.converters", "expected a list of converter names");
      const std::string c = **e.as_string();
      if (c == "quantize.linear.float8" || c == "float8")  // "float8": its name before v0.2
        fp8 = "tensorwise";  // torchao's Float8LinearConfig() default; recipe_name below
      else if (c == "quantize.linear.mx")  // components/quantization/mx.py @e61f2cce4: MXLinearConverter
        fp8 = "mxfp8";
      else
        throw ConfigError(file, "model.converters",
                          fmt::format("converter '{}' is not modelled (the planner models quantize.linear.float8 and "
                                      "quantize.linear.mx)", c));
    }
  }
  // The float8 recipe (torchtitan/config/job_config.py Float8Linear.recipe_name, @e61f2cce4:
  // Literal["tensorwise", "rowwise", "rowwise_with_gw_hp"] | None; None = tensorwise).
  for (const std::string sec : {"quantize.linear.float8", "float8"}) {
    const toml::node_view<const toml::node> v = root.at_path(sec + ".recipe_name");
    if (!v) continue;
    used->insert(sec + ".recipe_name");
    const auto r = v.value<std::string>();
    if (!r || (*r != "tensorwise" && *r != "rowwise" && *r != "rowwise_with_gw_hp"))
      throw ConfigError(file, sec + ".recipe_name",
                        fmt::format("expected one of \"tensorwise\" | \"rowwise\" | \"rowwise_with_gw_hp\" (torchao's "
                                    "Float8LinearRecipeName)"));
    if (fp8 == "tensorwise") fp8 = *r;  // the float8 converter's recipe only
  }
  // The MX recipe (job_config.py MXLinear.recipe_name @e61f2cce4, default "mxfp8_cublas", a torchao
  // MXLinearConfig recipe name): the MXFP8 ones are planned as mxfp8 (the planner does not split
  // their variants); an MX recipe of another element type is refused by name.
  if (const toml::node_view<const toml::node> v = root.at_path("quantize.linear.mx.recipe_name")) {
    used->insert("quantize.linear.mx.recipe_name");
    const auto r = v.value<std::string>();
    if (!r || r->rfind("mxfp8", 0) != 0)
      throw ConfigError(file, "quantize.linear.mx.recipe_name",
                        "expected an MXFP8 recipe of torchao's MXLinearConfig (mxfp8_cublas, mxfp8_cublas_rceil, ...): "
                        "other MX element types are not modelled");
  }
  return fp8;
}

// [compile] components (job_config.py Compile.components @e61f2cce4, default ["model", "loss"]):
// torchtitan compiles the model only where "model" is listed (parallelize.py
// model_compile_enabled = compile.enable and "model" in components).
void read_compile_components(TorchtitanJob& j, const toml::node* n) {
  if (!n) return;
  const auto* a = n->as_array();
  if (!a) throw ConfigError(j.file, "compile.components", "expected a list of \"model\" and \"loss\"");
  bool model = false;
  for (const auto& e : *a) {
    const auto v = e.value<std::string>();
    if (!e.is_string() || (*v != "model" && *v != "loss"))
      throw ConfigError(j.file, "compile.components", "expected a list of \"model\" and \"loss\"");
    model = model || *v == "model";
  }
  j.compile_model_listed = model;
}

// Keys of the job configs before v0.2 (the mesh under [training] and [experimental],
// training.batch_size): read as v0.2 they would be ignored and the run planned as another one.
void refuse_older_layout(const toml::table& root, const std::string& file) {
  for (const char* k : {"training.batch_size", "training.data_parallel_degree", "training.data_parallel_shard_degree",
                        "training.data_parallel_replicate_degree", "training.tensor_parallel_degree",
                        "training.enable_async_tensor_parallel", "training.compile", "training.enable_float8_linear",
                        "experimental.pipeline_parallel_degree", "experimental.context_parallel_degree",
                        "experimental.pipeline_parallel_schedule", "experimental.pipeline_parallel_split_points"})
    if (root.at_path(k))
      throw ConfigError(file, k,
                        "is a key of torchtitan's job configs before v0.2 (the mesh under [training] and "
                        "[experimental]); import reads the v0.2.x layout ([parallelism], training.local_batch_size, "
                        "[compile]): move the key there, or give the run's values as flags without --config");
}

}  // namespace

namespace {

// The job config's keys, read by type and range; every key read is remembered (the rest are
// the import's note of ignored keys). Errors name the file and the torchtitan key.
class JobKeys {
 public:
  JobKeys(const toml::table& root, const std::string& file) : root_(root), file_(file) {}
  const toml::node* node(const std::string& sec, const std::string& key) {
    const toml::table* t = root_[sec].as_table();
    if (!t) return nullptr;
    const toml::node* n = t->get(key);
    if (n) used_.insert(sec + "." + key);
    return n;
  }
  // An integer key in [lo, 2^30], or -1 where torchtitan gives -1 a meaning (minus_one).
  void get_int(const std::string& sec, const std::string& key, std::optional<int>& out, int lo,
               const char* minus_one = nullptr) {
    if (const auto* n = node(sec, key)) {
      // value_exact: value<int64_t>() would convert a float node, out of int64's range undefined.
      const auto v = n->value_exact<int64_t>();
      const std::string allowed = fmt::format("an integer >= {} and <= 2^30{}", lo,
                                              minus_one ? fmt::format(", or -1 ({})", minus_one) : "");
      if (!v) throw ConfigError(file_, sec + "." + key, "expected " + allowed);
      if ((*v < lo && !(minus_one && *v == -1)) || *v > (1 << 30))
        throw ConfigError(file_, sec + "." + key, fmt::format("{} is not allowed: expected {}", *v, allowed));
      out = int(*v);
    }
  }
  // A finite number > 0 (positive) or >= 0.
  void get_real(const std::string& sec, const std::string& key, std::optional<double>& out, bool positive) {
    if (const auto* n = node(sec, key)) {
      const auto v = n->value<double>();
      const char* allowed = positive ? "a finite number > 0" : "a finite number >= 0";
      if (!(n->is_floating_point() || n->is_integer()) || !v)
        throw ConfigError(file_, sec + "." + key, std::string("expected ") + allowed);
      if (!std::isfinite(*v) || *v < 0 || (positive && *v == 0))
        throw ConfigError(file_, sec + "." + key, fmt::format("{} is not allowed: expected {}", *v, allowed));
      out = *v;
    }
  }
  void get_str(const std::string& sec, const std::string& key, std::optional<std::string>& out) {
    if (const auto* n = node(sec, key)) {
      if (!n->is_string()) throw ConfigError(file_, sec + "." + key, "expected a string");
      out = **n->as_string();
    }
  }
  void get_bool(const std::string& sec, const std::string& key, std::optional<bool>& out) {
    if (const auto* n = node(sec, key)) {
      if (!n->is_boolean()) throw ConfigError(file_, sec + "." + key, "expected true or false");
      out = **n->as_boolean();
    }
  }
  bool present(const std::string& sec, const std::string& key) { return node(sec, key) != nullptr; }
  std::set<std::string>& used() { return used_; }
  // Every key not read, for the note.
  std::vector<std::string> ignored() const {
    std::vector<std::string> out;
    std::function<void(const toml::table&, const std::string&)> walk = [&](const toml::table& t, const std::string& pre) {
      for (const auto& [k, v] : t) {
        const std::string key = pre + std::string(k.str());
        if (const auto* sub = v.as_table())
          walk(*sub, key + ".");
        else if (!used_.count(key))
          out.push_back(key);
      }
    };
    walk(root_, "");
    return out;
  }

 private:
  const toml::table& root_;
  const std::string& file_;
  std::set<std::string> used_;
};

// [training]: the batch, length, steps, clipping and mixed precision.
void read_training_keys(JobKeys& k, const std::string& file, TorchtitanJob& j) {
  k.get_int("training", "local_batch_size", j.local_batch_size, 1);
  k.get_int("training", "global_batch_size", j.global_batch_size, 1, "local_batch_size x data-parallel ranks");
  k.get_int("training", "seq_len", j.seq_len, 1);
  k.get_int("training", "steps", j.steps, 1);
  k.get_real("training", "max_norm", j.max_norm, true);
  std::optional<std::string> p, r, d;
  k.get_str("training", "dtype", d);
  if (d) {
    if (*d != "bfloat16" && *d != "float32")
      throw ConfigError(file, "training.dtype", fmt::format("'{}' (allowed: bfloat16 | float32)", *d));
    j.master_dtype = dtype(file, "training.dtype", *d);
  }
  k.get_str("training", "mixed_precision_param", p);
  k.get_str("training", "mixed_precision_reduce", r);
  if (p) j.param_dtype = dtype(file, "training.mixed_precision_param", *p);
  if (r) {
    if (*r != "float32")
      throw ConfigError(file, "training.mixed_precision_reduce",
                        fmt::format("'{}': torchtitan accepts only \"float32\" (job_config.py Literal[\"float32\"])", *r));
    j.reduce_dtype = "fp32";
  }
}

// [parallelism]: the data-parallel degrees, resharding and the mesh.
void read_parallelism_keys(JobKeys& k, const std::string& file, TorchtitanJob& j) {
  k.get_int("parallelism", "data_parallel_shard_degree", j.dp_shard, 1, "the ranks left over");
  k.get_int("parallelism", "data_parallel_replicate_degree", j.dp_replicate, 1);
  k.get_str("parallelism", "fsdp_reshard_after_forward", j.reshard_after_forward);
  if (j.reshard_after_forward && *j.reshard_after_forward != "default" && *j.reshard_after_forward != "always" &&
      *j.reshard_after_forward != "never")
    throw ConfigError(file, "parallelism.fsdp_reshard_after_forward",
                      fmt::format("'{}' (allowed: default | always | never)", *j.reshard_after_forward));
  auto get_int = [&](const std::string& sec, const std::string& key, std::optional<int>& out, int lo) {
    k.get_int(sec, key, out, lo);
  };
  auto get_str = [&](const std::string& sec, const std::string& key, std::optional<std::string>& out) {
    k.get_str(sec, key, out);
  };
  auto get_bool = [&](const std::string& sec, const std::string& key, std::optional<bool>& out) {
    k.get_bool(sec, key, out);
  };
  auto present = [&](const std::string& sec, const std::string& key) { return k.present(sec, key); };
  read_mesh_keys(j, get_int, get_str, get_bool, present);
}

// [activation_checkpoint] and [compile].
void read_ac_and_compile_keys(JobKeys& k, const std::string& file, TorchtitanJob& j) {
  k.get_str("activation_checkpoint", "mode", j.ac_mode);
  k.get_str("activation_checkpoint", "selective_ac_option", j.selective_ac_option);
  if (j.ac_mode && *j.ac_mode != "none" && *j.ac_mode != "full" && *j.ac_mode != "selective")
    throw ConfigError(file, "activation_checkpoint.mode",
                      fmt::format("'{}' is not modelled (allowed: none | full | selective)", *j.ac_mode));
  if (const auto* n = k.node("compile", "enable")) {
    if (!n->is_boolean()) throw ConfigError(file, "compile.enable", "expected true or false");
    j.compile = **n->as_boolean();
  }
  read_compile_components(j, k.node("compile", "components"));
}

// [optimizer] and [lr_scheduler].
void read_optimizer_keys(JobKeys& k, const std::string& file, TorchtitanJob& j) {
  k.get_real("optimizer", "lr", j.lr, true);
  k.get_real("optimizer", "eps", j.eps, true);
  k.get_real("optimizer", "weight_decay", j.weight_decay, false);
  // torchtitan/config/job_config.py Optimizer.implementation: Literal["for-loop", "foreach", "fused"].
  // "fused_opt_states_bf16" (bf16 moments, 0610235bb, 2026-04-15) came after torchtitan dropped its
  // TOML configs (9810191bb, 2026-02-23): no TOML torchtitan reads holds it.
  std::optional<std::string> impl;
  k.get_str("optimizer", "implementation", impl);
  if (impl) {
    AdamwUpdate u{};
    if (*impl == "fused_opt_states_bf16")
      throw ConfigError(file, "optimizer.implementation",
                        "'fused_opt_states_bf16' is not a value of a TOML job config (v0.2.x allows \"for-loop\" | "
                        "\"foreach\" | \"fused\"; bf16 moments came in 0610235bb, after torchtitan's TOML configs "
                        "were removed in 9810191bb): import the run without --config, with --state-dtype bf16");
    if (!parse_torchtitan_implementation(*impl, u))
      throw ConfigError(file, "optimizer.implementation",
                        fmt::format("'{}' (expected one of \"for-loop\" | \"foreach\" | \"fused\")", *impl));
    j.adamw_update = u;
  }
  k.get_int("lr_scheduler", "warmup_steps", j.warmup_steps, 0);
}

}  // namespace

TorchtitanJob parse_torchtitan_job_toml(const std::string& text, const std::string& file) {
  const toml::table root = parse_toml(text, file);
  TorchtitanJob j;
  j.file = file;
  JobKeys k(root, file);
  refuse_older_layout(root, file);
  std::optional<std::string> name, flavor;
  k.get_str("model", "name", name);
  k.get_str("model", "flavor", flavor);
  if (!name || !flavor)
    throw ConfigError(file, !name ? "model.name" : "model.flavor", "required (e.g. name = \"llama3\", flavor = \"8B\")");
  j.model_name = *name;
  j.flavor = *flavor;
  j.model_preset = preset_for(j.model_name, j.flavor);
  j.fp8 = read_fp8(root, file, &k.used());
  read_training_keys(k, file, j);
  read_parallelism_keys(k, file, j);
  read_ac_and_compile_keys(k, file, j);
  read_optimizer_keys(k, file, j);
  j.ignored = k.ignored();
  return j;
}

TorchtitanJob read_torchtitan_job_toml(const std::string& path) {
  return parse_torchtitan_job_toml(read_config_text(path), path);
}

}  // namespace shardcast::planner
