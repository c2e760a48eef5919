#include "shared/config_schema.h"

#include "shared/toml_text.h"

namespace shardcast {

namespace {

// One accessor per plain key: a non-capturing lambda returning a reference to the field.
#define SC_KEY(path, field) \
  TrainConfigKey { path, +[](TrainConfig& c) -> auto& { return c.field; } }
#define SC_SPECIAL(path) \
  TrainConfigKey { path, std::monostate{} }

bool set_strategy(TrainConfig& c, const std::string& s) {
  auto v = parse_sharding_strategy(s);
  if (v) c.parallelism.sharding_strategy = *v;
  return bool(v);
}
bool set_ac_mode(TrainConfig& c, const std::string& s) {
  auto v = parse_ac_mode(s);
  if (v) c.activation_checkpointing.mode = *v;
  return bool(v);
}

bool set_pp_schedule(TrainConfig& c, const std::string& s) {
  auto v = parse_pp_schedule(s);
  if (v) c.parallelism.pp_schedule = *v;
  return bool(v);
}

bool set_cp_rotate(TrainConfig& c, const std::string& s) {
  auto v = parse_cp_rotate(s);
  if (v) c.parallelism.cp_rotate = *v;
  return bool(v);
}

bool set_fp8_recipe(TrainConfig& c, const std::string& s) {
  auto v = parse_fp8_recipe(s);
  if (v) c.precision.fp8 = *v;
  return bool(v);
}

}  // namespace

std::string TrainConfigKey::table() const {
  const std::string p(path);
  const size_t dot = p.rfind('.');
  return dot == std::string::npos ? "" : p.substr(0, dot);
}

std::string TrainConfigKey::key() const {
  const std::string p(path);
  const size_t dot = p.rfind('.');
  return dot == std::string::npos ? p : p.substr(dot + 1);
}

const std::vector<TrainConfigKey>& train_config_schema() {
  static const std::vector<TrainConfigKey> keys = {
      SC_KEY("runtime", runtime),
      // [model]: a preset and/or every field (config_io.cpp read_model_fields, shared with
      // the model presets of configs/models/).
      SC_SPECIAL("model.preset"),
      SC_SPECIAL("model.name"),
      SC_SPECIAL("model.n_layers"),
      SC_SPECIAL("model.d_model"),
      SC_SPECIAL("model.n_heads"),
      SC_SPECIAL("model.n_kv_heads"),
      SC_SPECIAL("model.ffn_dim"),
      SC_SPECIAL("model.vocab"),
      SC_SPECIAL("model.max_seq_len"),
      SC_SPECIAL("model.norm_eps"),
      SC_SPECIAL("model.rope_theta"),
      SC_SPECIAL("model.tied_embeddings"),
      SC_SPECIAL("model.mlp_type"),
      SC_SPECIAL("model.head_dim"),
      SC_SPECIAL("model.qk_norm"),
      SC_KEY("cluster.hardware", cluster.hardware),
      SC_KEY("cluster.nodes", cluster.nodes),
      SC_KEY("cluster.gpus_per_node", cluster.gpus_per_node),
      SC_KEY("cluster.inter_node_gbps", cluster.inter_node_gbps),
      SC_KEY("cluster.power_limit_w", cluster.power_limit_w),
      SC_KEY("cluster.node_gpus", cluster.node_gpus),
      TrainConfigKey{"parallelism.sharding_strategy",
                     TrainEnumAccess{[](const TrainConfig& c) -> std::string {
                                       return to_string(c.parallelism.sharding_strategy);
                                     },
                                     set_strategy, kShardingStrategyNames}},
      SC_KEY("parallelism.hsdp_shard_size", parallelism.hsdp_shard_size),
      SC_KEY("parallelism.max_inflight_all_gathers", parallelism.max_inflight_all_gathers),
      SC_KEY("parallelism.sync_every_micro_step", parallelism.sync_every_micro_step),
      // The device mesh (shared/train_config.h): torchtitan's degrees and schedule names.
      SC_KEY("parallelism.dp_replicate", parallelism.dp_replicate),
      SC_KEY("parallelism.dp_shard", parallelism.dp_shard),
      SC_KEY("parallelism.tp", parallelism.tp),
      SC_KEY("parallelism.cp", parallelism.cp),
      SC_KEY("parallelism.pp", parallelism.pp),
      SC_KEY("parallelism.tp_async", parallelism.tp_async),
      TrainConfigKey{"parallelism.pp_schedule",
                     TrainEnumAccess{[](const TrainConfig& c) -> std::string { return to_string(c.parallelism.pp_schedule); },
                                     set_pp_schedule, kPpScheduleNames}},
      SC_KEY("parallelism.pp_microbatch", parallelism.pp_microbatch),
      SC_KEY("parallelism.pp_virtual_stages", parallelism.pp_virtual_stages),
      TrainConfigKey{"parallelism.cp_rotate",
                     TrainEnumAccess{[](const TrainConfig& c) -> std::string { return to_string(c.parallelism.cp_rotate); },
                                     set_cp_rotate, kCpRotateNames}},
      SC_KEY("training.micro_batch", training.micro_batch),
      SC_KEY("training.seq_len", training.seq_len),
      SC_KEY("training.grad_accum", training.grad_accum),
      SC_KEY("training.steps", training.steps),
      SC_KEY("training.seed", training.seed),
      SC_KEY("training.max_grad_norm", training.max_grad_norm),
      TrainConfigKey{"activation_checkpointing.mode",
                     TrainEnumAccess{[](const TrainConfig& c) -> std::string {
                                       return to_string(c.activation_checkpointing.mode);
                                     },
                                     set_ac_mode, kAcModeNames}},
      SC_KEY("activation_checkpointing.ratio", activation_checkpointing.ratio),
      SC_KEY("precision.param_dtype", precision.param_dtype),
      SC_KEY("precision.reduce_dtype", precision.reduce_dtype),
      SC_KEY("precision.master_dtype", precision.master_dtype),
      SC_KEY("precision.compile", precision.compile),
      // A recipe name; a TOML boolean here is an error that names the recipes (config_io.cpp).
      TrainConfigKey{"precision.fp8",
                     TrainEnumAccess{[](const TrainConfig& c) -> std::string { return to_string(c.precision.fp8); },
                                     set_fp8_recipe, kFp8RecipeNames}},
      SC_KEY("optimizer.name", optimizer.name),
      SC_KEY("optimizer.state_dtype", optimizer.state_dtype),
      SC_KEY("optimizer.lr", optimizer.lr),
      SC_KEY("optimizer.beta1", optimizer.beta1),
      SC_KEY("optimizer.beta2", optimizer.beta2),
      SC_KEY("optimizer.eps", optimizer.eps),
      SC_KEY("optimizer.weight_decay", optimizer.weight_decay),
      SC_KEY("lr_schedule.warmup_steps", lr_schedule.warmup_steps),
      SC_KEY("lr_schedule.decay", lr_schedule.decay),
      SC_KEY("lr_schedule.min_lr_factor", lr_schedule.min_lr_factor),
      SC_KEY("data.path", data.path),
      SC_KEY("data.format", data.format),
      SC_KEY("data.mean_doc_len", data.mean_doc_len),
      SC_KEY("checkpoint.dir", checkpoint.dir),
      SC_KEY("checkpoint.interval", checkpoint.interval),
      SC_KEY("checkpoint.keep", checkpoint.keep),
      SC_KEY("checkpoint.resume_from", checkpoint.resume_from),
      SC_KEY("checkpoint.initial_load_path", checkpoint.initial_load_path),
      SC_KEY("checkpoint.fallback", checkpoint.fallback),
      SC_KEY("checkpoint.async_mode", checkpoint.async_mode),
      SC_KEY("metrics.dir", metrics.dir),
      SC_KEY("metrics.log_freq", metrics.log_freq),
      SC_KEY("comm.timeout_seconds", comm.timeout_seconds),
      SC_KEY("comm.backend", comm.backend),
      // [prediction]: written by `shardcast emit` only when present (config_io.cpp).
      SC_SPECIAL("prediction.step_time_s"),
      SC_SPECIAL("prediction.tokens_per_s_per_gpu"),
      SC_SPECIAL("prediction.mfu"),
      SC_SPECIAL("prediction.hfu"),
      SC_SPECIAL("prediction.mem_peak_bytes"),
      SC_SPECIAL("prediction.hardware"),
      SC_SPECIAL("prediction.runtime"),
      SC_SPECIAL("prediction.mem_components"),
  };
  return keys;
}

#undef SC_KEY
#undef SC_SPECIAL

const std::vector<HardwareKey>& hardware_schema() {
#define HW_STR(path, field) \
  HardwareKey { path, +[](HardwareSpec& h) -> std::string& { return h.field; }, nullptr, nullptr, 1 }
#define HW_NUM(path, field, to_si) \
  HardwareKey { path, nullptr, +[](HardwareSpec& h) -> double& { return h.field; }, nullptr, to_si }
#define HW_INT(path, field) \
  HardwareKey { path, nullptr, nullptr, +[](HardwareSpec& h) -> int& { return h.field; }, 1 }
  static const std::vector<HardwareKey> keys = {
      HW_STR("name", name),
      HW_STR("source", source),
      HW_NUM("gpu.bf16_tflops", gpu.bf16_flops, 1e12),
      HW_NUM("gpu.fp16_tflops", gpu.fp16_flops, 1e12),
      HW_NUM("gpu.fp32_tflops", gpu.fp32_flops, 1e12),
      HW_NUM("gpu.fp8_tflops", gpu.fp8_flops, 1e12),
      HW_NUM("gpu.hbm_gib", gpu.hbm_bytes, 1024.0 * 1024.0 * 1024.0),
      HW_NUM("gpu.hbm_tbps", gpu.hbm_bandwidth, 1e12),
      HW_INT("gpu.sm_count", gpu.sm_count),
      HW_NUM("gpu.gemm_tile_m", gpu.gemm_tile_m, 1),
      HW_NUM("gpu.gemm_tile_n", gpu.gemm_tile_n, 1),
      HW_NUM("gpu.gemm_tile_k", gpu.gemm_tile_k, 1),
      HW_STR("gpu.attention_benchmark", gpu.attention_benchmark),
      HW_STR("gpu.compute_capability", gpu.compute_capability),
      HW_STR("gpu.kernel_table", gpu.kernel_table),
      HW_NUM("gpu.board_power_w", gpu.board_power_w, 1),
      HW_NUM("gpu.power_limit_w", gpu.power_limit_w, 1),
      HW_NUM("gpu.lower_power_rating_w", gpu.lower_power_rating_w, 1),
      HW_NUM("gpu.lower_power_bf16_tflops", gpu.lower_power_bf16_flops, 1e12),
      HW_INT("node.gpus_per_node", node.gpus_per_node),
      HW_NUM("node.intra_node_gbps", node.intra_node_bandwidth, 1e9 / 8),
      HW_NUM("node.inter_node_gbps", node.inter_node_bandwidth, 1e9 / 8),
      HW_NUM("node.intra_node_latency_us", node.intra_node_latency, 1e-6),
      HW_NUM("node.inter_node_latency_us", node.inter_node_latency, 1e-6),
      HW_INT("node.direct_link_max_gpus", node.direct_link_max_gpus),
  };
#undef HW_STR
#undef HW_NUM
#undef HW_INT
  return keys;
}

std::optional<std::string> train_config_value(const TrainConfigKey& k, const TrainConfig& c, bool* quoted) {
  if (quoted) *quoted = false;
  TrainConfig& mc = const_cast<TrainConfig&>(c);  // accessors return references; only read here
  if (auto f = std::get_if<int& (*)(TrainConfig&)>(&k.access)) return std::to_string((*f)(mc));
  if (auto f = std::get_if<uint64_t& (*)(TrainConfig&)>(&k.access)) return std::to_string((*f)(mc));
  if (auto f = std::get_if<double& (*)(TrainConfig&)>(&k.access)) return toml_float((*f)(mc));
  if (auto f = std::get_if<bool& (*)(TrainConfig&)>(&k.access)) return std::string((*f)(mc) ? "true" : "false");
  if (auto f = std::get_if<std::optional<bool>& (*)(TrainConfig&)>(&k.access)) {
    if (!(*f)(mc)) return std::nullopt;
    return std::string(*(*f)(mc) ? "true" : "false");
  }
  if (quoted) *quoted = true;
  if (auto f = std::get_if<std::string& (*)(TrainConfig&)>(&k.access)) return (*f)(mc);
  if (auto e = std::get_if<TrainEnumAccess>(&k.access)) return e->get(c);
  if (quoted) *quoted = false;
  return std::nullopt;  // special: read and written by hand
}

}  // namespace shardcast
