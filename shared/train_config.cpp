#include "shared/train_config.h"

#include "shared/cluster_bounds.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "shared/enum_names.h"
#include "shared/errors.h"

namespace shardcast {

namespace {
// One table per enum (shared/enum_names.h); kShardingStrategyNames, kAcModeNames and
// kFp8RecipeNames (train_config.h) list the same names in the same order (enum_names_test.cpp
// holds it).
constexpr EnumName<ShardingStrategy> kShardingStrategies[] = {{ShardingStrategy::full_shard, "full_shard"},
                                                              {ShardingStrategy::shard_grad_op, "shard_grad_op"},
                                                              {ShardingStrategy::hybrid_shard, "hybrid_shard"},
                                                              {ShardingStrategy::no_shard, "no_shard"},
                                                              {ShardingStrategy::shard_optimizer, "shard_optimizer"}};
constexpr EnumName<AcMode> kAcModes[] = {
    {AcMode::none, "none"}, {AcMode::selective, "selective"}, {AcMode::full, "full"}, {AcMode::selective_op, "selective_op"}};
constexpr EnumName<Fp8Recipe> kFp8Recipes[] = {{Fp8Recipe::none, "none"},
                                               {Fp8Recipe::tensorwise, "tensorwise"},
                                               {Fp8Recipe::rowwise, "rowwise"},
                                               {Fp8Recipe::rowwise_with_gw_hp, "rowwise_with_gw_hp"},
                                               {Fp8Recipe::mxfp8, "mxfp8"},
                                               {Fp8Recipe::nvfp4, "nvfp4"}};
// torchtitan's names (torchtitan/distributed/pipeline_parallel.py get_schedule_class).
constexpr EnumName<PpSchedule> kPpSchedules[] = {{PpSchedule::one_f_one_b, "1F1B"},
                                                 {PpSchedule::interleaved_1f1b, "Interleaved1F1B"},
                                                 {PpSchedule::gpipe, "GPipe"},
                                                 {PpSchedule::zbv_zero_bubble, "ZBVZeroBubble"},
                                                 {PpSchedule::interleaved_zero_bubble, "InterleavedZeroBubble"}};
constexpr EnumName<CpRotate> kCpRotates[] = {{CpRotate::allgather, "allgather"}, {CpRotate::alltoall, "alltoall"}};
}  // namespace

const char* to_string(ShardingStrategy s) { return enum_name(kShardingStrategies, s); }
const char* to_string(AcMode m) { return enum_name(kAcModes, m); }
const char* to_string(Fp8Recipe r) { return enum_name(kFp8Recipes, r); }
const char* to_string(PpSchedule s) { return enum_name(kPpSchedules, s); }
const char* to_string(CpRotate r) { return enum_name(kCpRotates, r); }
std::optional<PpSchedule> parse_pp_schedule(const std::string& s) { return enum_parse(kPpSchedules, s); }
std::optional<CpRotate> parse_cp_rotate(const std::string& s) { return enum_parse(kCpRotates, s); }
std::vector<PpSchedule> all_pp_schedules() { return enum_values(kPpSchedules); }
std::vector<CpRotate> all_cp_rotates() { return enum_values(kCpRotates); }

std::optional<ShardingStrategy> parse_sharding_strategy(const std::string& s) {
  return enum_parse(kShardingStrategies, s);
}
std::optional<AcMode> parse_ac_mode(const std::string& s) { return enum_parse(kAcModes, s); }
std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& s) { return enum_parse(kFp8Recipes, s); }

std::vector<ShardingStrategy> all_sharding_strategies() { return enum_values(kShardingStrategies); }
std::vector<AcMode> all_ac_modes() { return enum_values(kAcModes); }
std::vector<Fp8Recipe> all_fp8_recipes() { return enum_values(kFp8Recipes); }

const std::vector<std::string>& float_dtype_names() {
  static const std::vector<std::string> names{"fp32", "bf16", "fp16"};
  return names;
}
const std::vector<std::string>& master_dtype_names() {
  static const std::vector<std::string> names{"fp32", "bf16"};
  return names;
}
const std::vector<std::string>& optimizer_state_dtype_names() {
  static const std::vector<std::string> names{"master", "bf16"};
  return names;
}

int TrainConfig::dp_size() const {
  return int(resolve_mesh(parallelism, world_size(), cluster.gpus_per_node).dp());  // <= world_size
}

int ParallelismConfig::shard_group_size(int world_size, int gpus_per_node) const {
  return resolve_mesh(*this, world_size, gpus_per_node).dp_shard;
}

bool ActivationCheckpointingConfig::block_checkpointed(int block) const {
  switch (mode) {
    case AcMode::none:
    case AcMode::selective_op: return false;
    case AcMode::full: return true;
    case AcMode::selective:
      return std::floor((block + 1) * ratio + 1e-9) > std::floor(block * ratio + 1e-9);
  }
  return false;
}

double ActivationCheckpointingConfig::recompute_fraction(int n_layers) const {
  if (n_layers <= 0) return 0;
  int n = 0;
  for (int i = 0; i < n_layers; ++i) n += block_checkpointed(i) ? 1 : 0;
  return double(n) / n_layers;
}

namespace {

void require(std::vector<std::string>& errs, bool ok, const std::string& file,
             const std::string& key, const std::string& detail) {
  if (!ok) errs.push_back(ConfigError(file, key, detail).what());
}

bool is_one_of(const std::vector<std::string>& names, const std::string& s) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

// "fp32 | bf16 | fp16": a list as the error messages write it.
std::string choices(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : " | ") + n;
  return out;
}

}  // namespace

std::vector<std::string> validate_model(const ModelSpec& m, const std::string& file,
                                        const std::string& p) {
  std::vector<std::string> e;
  require(e, m.n_layers >= 1, file, p + "n_layers", fmt::format("{} is not allowed: must be >= 1", m.n_layers));
  require(e, m.d_model >= 1, file, p + "d_model", fmt::format("{} is not allowed: must be >= 1", m.d_model));
  require(e, m.n_heads >= 1, file, p + "n_heads", fmt::format("{} is not allowed: must be >= 1", m.n_heads));
  require(e, m.n_kv_heads >= 1, file, p + "n_kv_heads",
          fmt::format("{} is not allowed: must be >= 1", m.n_kv_heads));
  require(e, m.ffn_dim >= 1, file, p + "ffn_dim", fmt::format("{} is not allowed: must be >= 1", m.ffn_dim));
  require(e, m.vocab >= 2, file, p + "vocab", fmt::format("{} is not allowed: must be >= 2", m.vocab));
  require(e, m.max_seq_len >= 1, file, p + "max_seq_len",
          fmt::format("{} is not allowed: must be >= 1", m.max_seq_len));
  require(e, m.norm_eps > 0 && m.norm_eps < 1, file, p + "norm_eps",
          fmt::format("{} is not allowed: must be in (0, 1)", m.norm_eps));
  require(e, std::isfinite(m.rope_theta) && m.rope_theta > 0, file, p + "rope_theta",
          fmt::format("{} is not allowed: must be finite and > 0", m.rope_theta));
  require(e, m.explicit_head_dim == 0 || head_dim_allowed(m.explicit_head_dim), file,
          p + "head_dim",
          fmt::format("{} is not allowed: must be even (RoPE rotates pairs) and in [2, {}], or 0 for d_model / n_heads",
                      m.explicit_head_dim, kMaxHeadDim));
  if (m.n_heads >= 1 && m.d_model >= 1 && m.explicit_head_dim == 0)
    require(e, m.d_model % m.n_heads == 0, file, p + "n_heads",
            fmt::format("{} does not divide d_model = {} (or set model.head_dim)", m.n_heads, m.d_model));
  if (m.n_heads >= 1 && m.n_kv_heads >= 1)
    require(e, m.n_heads % m.n_kv_heads == 0, file, p + "n_kv_heads",
            fmt::format("{} does not divide n_heads = {} (grouped-query attention needs whole groups)",
                        m.n_kv_heads, m.n_heads));
  if (m.n_heads >= 1 && m.d_model >= 1 && m.d_model % m.n_heads == 0 && m.explicit_head_dim == 0)
    require(e, m.head_dim() % 2 == 0, file, p + "d_model",
            fmt::format("head_dim = d_model / n_heads = {} must be even for RoPE", m.head_dim()));
  if (e.empty()) {
    // The parameter count in floating point first: the int64 counts of model_spec.cpp (and the
    // bytes and FLOPs derived from them) are only computed for models below the bound.
    const double d = m.d_model, kv = double(m.kv_dim()), q = double(m.q_dim());
    const double mats = m.mlp_type == MlpType::swiglu ? 3 : 2;
    const double embedding = double(m.vocab) * d * (m.tied_embeddings ? 1 : 2);
    const double mlp = double(m.n_layers) * mats * d * double(m.ffn_dim);
    const double attention = double(m.n_layers) * (2 * d * q + 2 * d * kv + 2 * d);
    const double params = embedding + mlp + attention + d;
    const char* largest = embedding >= mlp && embedding >= attention ? "vocab" : mlp >= attention ? "ffn_dim" : "d_model";
    require(e, params <= kMaxModelParams, file, p + largest,
            fmt::format("the model would have {:.3g} parameters: at most {:.0e} are allowed (n_layers {}, d_model {}, "
                        "ffn_dim {}, vocab {})",
                        params, kMaxModelParams, m.n_layers, m.d_model, m.ffn_dim, m.vocab));
  }
  return e;
}

namespace {

// [cluster]: node and GPU counts, the network and the power limit.
void check_cluster(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const auto& cl = c.cluster;
  require(e, cl.nodes >= 1, f, "cluster.nodes", fmt::format("{} is not allowed: must be >= 1", cl.nodes));
  require(e, cl.gpus_per_node >= 1, f, "cluster.gpus_per_node",
          fmt::format("{} is not allowed: must be >= 1", cl.gpus_per_node));
  require(e, cl.node_gpus == 0 || cl.node_gpus == cl.gpus_per_node || (cl.node_gpus > cl.gpus_per_node && cl.nodes == 1),
          f, "cluster.node_gpus",
          fmt::format("{} is not allowed: 0 (= gpus_per_node), or the GPUs of the one node a job of fewer GPUs runs "
                      "on (above gpus_per_node {} with nodes = 1, here {})",
                      cl.node_gpus, cl.gpus_per_node, cl.nodes));
  require(e, std::isfinite(cl.inter_node_gbps) && (cl.inter_node_gbps == 0 || cl.inter_node_gbps >= kMinInterNodeGbps),
          f, "cluster.inter_node_gbps",
          fmt::format("{} is not allowed: must be 0 (the hardware preset's value) or a finite number >= {} Gb/s "
                      "(shared/cluster_bounds.h)",
                      cl.inter_node_gbps, kMinInterNodeGbps));
  require(e, std::isfinite(cl.power_limit_w) && cl.power_limit_w >= 0, f, "cluster.power_limit_w",
          fmt::format("{} is not allowed: must be finite and >= 0 (0 = the hardware preset's power limit)",
                      cl.power_limit_w));
}

// [parallelism]: the HSDP group, the device mesh (validate_mesh) and the all-gather window.
void check_parallelism(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const auto& cl = c.cluster;
  const int world = c.world_size();
  const auto& par = c.parallelism;
  const bool one_d = par.tp == 1 && par.cp == 1 && par.pp == 1;
  if (par.sharding_strategy == ShardingStrategy::hybrid_shard && world >= 1 && one_d) {
    const int g = par.shard_group_size(world, cl.gpus_per_node);
    require(e, g >= 1 && world % g == 0, f, "parallelism.hsdp_shard_size",
            fmt::format("{} does not divide the world size {} (nodes {} x gpus_per_node {})", g, world,
                        cl.nodes, cl.gpus_per_node));
  } else if (par.sharding_strategy != ShardingStrategy::hybrid_shard) {
    require(e, par.hsdp_shard_size == 0, f, "parallelism.hsdp_shard_size",
            fmt::format("{} is only allowed with sharding_strategy = \"hybrid_shard\" (got \"{}\")",
                        par.hsdp_shard_size, to_string(par.sharding_strategy)));
  }
  require(e, par.hsdp_shard_size >= 0, f, "parallelism.hsdp_shard_size",
          fmt::format("{} is not allowed: must be >= 0", par.hsdp_shard_size));
  for (std::string& m : validate_mesh(c, f)) e.push_back(std::move(m));
  require(e, par.max_inflight_all_gathers >= 1, f, "parallelism.max_inflight_all_gathers",
          fmt::format("{} is not allowed: must be >= 1", par.max_inflight_all_gathers));
}

// [training] and [activation_checkpointing].
void check_training(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const auto& t = c.training;
  require(e, t.micro_batch >= 1, f, "training.micro_batch",
          fmt::format("{} is not allowed: must be >= 1", t.micro_batch));
  require(e, t.seq_len >= 1, f, "training.seq_len", fmt::format("{} is not allowed: must be >= 1", t.seq_len));
  if (c.model.max_seq_len >= 1)
    require(e, t.seq_len <= c.model.max_seq_len, f, "training.seq_len",
            fmt::format("{} is above the model's max_seq_len = {}", t.seq_len, c.model.max_seq_len));
  require(e, t.grad_accum >= 1, f, "training.grad_accum",
          fmt::format("{} is not allowed: must be >= 1", t.grad_accum));
  require(e, t.steps >= 1, f, "training.steps", fmt::format("{} is not allowed: must be >= 1", t.steps));
  require(e, std::isfinite(t.max_grad_norm) && t.max_grad_norm >= 0, f, "training.max_grad_norm",
          fmt::format("{} is not allowed: must be finite and >= 0 (0 disables clipping)", t.max_grad_norm));
  const auto& ac = c.activation_checkpointing;
  require(e, ac.ratio > 0 && ac.ratio <= 1, f, "activation_checkpointing.ratio",
          fmt::format("{} is not allowed: must be in (0, 1]", ac.ratio));
}

// [precision]: the dtypes each allows and what each needs of the others.
void check_precision(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const auto& pr = c.precision;
  require(e, is_one_of(float_dtype_names(), pr.param_dtype), f, "precision.param_dtype",
          fmt::format("\"{}\" is not allowed (allowed: {})", pr.param_dtype, choices(float_dtype_names())));
  require(e, is_one_of(float_dtype_names(), pr.reduce_dtype), f, "precision.reduce_dtype",
          fmt::format("\"{}\" is not allowed (allowed: {})", pr.reduce_dtype, choices(float_dtype_names())));
  require(e, is_one_of(master_dtype_names(), pr.master_dtype), f, "precision.master_dtype",
          fmt::format("\"{}\" is not allowed (allowed: {})", pr.master_dtype, choices(master_dtype_names())));
  if (pr.master_dtype == "bf16")
    require(e, pr.param_dtype == "bf16", f, "precision.master_dtype",
            fmt::format("\"bf16\" (pure bf16) needs param_dtype = \"bf16\", got \"{}\"", pr.param_dtype));
  if (pr.fp8_on())
    require(e, pr.param_dtype != "fp32", f, "precision.fp8",
            fmt::format("\"{}\" needs param_dtype = \"bf16\" or \"fp16\" (fp8 matmuls run inside a 16-bit model)", to_string(pr.fp8)));
}

// [optimizer] (AdamW and its moments' dtype beside the master dtype) and [lr_schedule].
void check_optimizer(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const auto& o = c.optimizer;
  require(e, o.name == "adamw", f, "optimizer.name",
          fmt::format("\"{}\" is not allowed (allowed: adamw)", o.name));
  require(e, is_one_of(optimizer_state_dtype_names(), o.state_dtype), f, "optimizer.state_dtype",
          fmt::format("\"{}\" is not allowed (allowed: {})", o.state_dtype, choices(optimizer_state_dtype_names())));
  if (o.state_dtype == "bf16")
    require(e, c.precision.master_dtype == "fp32", f, "optimizer.state_dtype",
            "\"bf16\" keeps the moments in bf16 beside fp32 master weights; with precision.master_dtype = \"bf16\" "
            "they are bf16 already (set \"master\")");
  require(e, o.lr > 0 && o.lr < 1, f, "optimizer.lr", fmt::format("{} is not allowed: must be in (0, 1)", o.lr));
  require(e, o.beta1 >= 0 && o.beta1 < 1, f, "optimizer.beta1",
          fmt::format("{} is not allowed: must be in [0, 1)", o.beta1));
  require(e, o.beta2 >= 0 && o.beta2 < 1, f, "optimizer.beta2",
          fmt::format("{} is not allowed: must be in [0, 1)", o.beta2));
  require(e, std::isfinite(o.eps) && o.eps > 0, f, "optimizer.eps",
          fmt::format("{} is not allowed: must be finite and > 0", o.eps));
  require(e, std::isfinite(o.weight_decay) && o.weight_decay >= 0, f, "optimizer.weight_decay",
          fmt::format("{} is not allowed: must be finite and >= 0", o.weight_decay));
  const auto& ls = c.lr_schedule;
  require(e, ls.warmup_steps >= 0, f, "lr_schedule.warmup_steps",
          fmt::format("{} is not allowed: must be >= 0", ls.warmup_steps));
  require(e, ls.decay == "cosine" || ls.decay == "linear" || ls.decay == "constant", f, "lr_schedule.decay",
          fmt::format("\"{}\" is not allowed (allowed: cosine | linear | constant)", ls.decay));
  require(e, ls.min_lr_factor >= 0 && ls.min_lr_factor <= 1, f, "lr_schedule.min_lr_factor",
          fmt::format("{} is not allowed: must be in [0, 1]", ls.min_lr_factor));
}

// [data] and [checkpoint].
void check_data_and_checkpoint(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  require(e, c.data.format == "llmc_bin", f, "data.format",
          fmt::format("\"{}\" is not allowed (allowed: llmc_bin)", c.data.format));
  require(e, std::isfinite(c.data.mean_doc_len) && c.data.mean_doc_len >= 0, f, "data.mean_doc_len",
          fmt::format("{} is not allowed: must be finite and >= 0 (tokens; 0 = dense causal attention)",
                      c.data.mean_doc_len));
  require(e, c.checkpoint.interval >= 0, f, "checkpoint.interval",
          fmt::format("{} is not allowed: must be >= 0", c.checkpoint.interval));
  require(e, c.checkpoint.keep >= 1, f, "checkpoint.keep",
          fmt::format("{} is not allowed: must be >= 1", c.checkpoint.keep));
  require(e, c.checkpoint.initial_load_path.empty() || c.checkpoint.resume_from.empty(), f,
          "checkpoint.initial_load_path",
          fmt::format("\"{}\" and checkpoint.resume_from = \"{}\" are both set: a resume restores its own "
                      "weights, initial weights are for a fresh run (set one of the two)",
                      c.checkpoint.initial_load_path, c.checkpoint.resume_from));
  require(e, c.checkpoint.async_mode == "disabled" || c.checkpoint.async_mode == "async", f,
          "checkpoint.async_mode",
          fmt::format("\"{}\" is not allowed (allowed: disabled | async)", c.checkpoint.async_mode));
}

// [prediction], written by the planner: a hand edit may break it.
void check_prediction(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  if (const auto& p = c.prediction; p.present) {  // written by the planner; a hand edit may break them
    const std::pair<const char*, double> fields[] = {{"prediction.step_time_s", p.step_time_s},
                                                     {"prediction.tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
                                                     {"prediction.mfu", p.mfu},
                                                     {"prediction.hfu", p.hfu},
                                                     {"prediction.mem_peak_bytes", p.mem_peak_bytes}};
    for (const auto& [key, v] : fields)
      require(e, std::isfinite(v) && v >= 0, f, key, fmt::format("{} is not allowed: must be finite and >= 0", v));
    for (const auto& [name, v] : p.mem_components)
      require(e, std::isfinite(v) && v >= 0, f, "prediction.mem_components." + name,
              fmt::format("{} is not allowed: must be finite and >= 0", v));
  }
}

// [metrics] and [comm].
void check_metrics_and_comm(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  require(e, c.metrics.log_freq >= 1, f, "metrics.log_freq",
          fmt::format("{} is not allowed: must be >= 1", c.metrics.log_freq));
  require(e, std::isfinite(c.comm.timeout_seconds) && c.comm.timeout_seconds > 0, f, "comm.timeout_seconds",
          fmt::format("{} is not allowed: must be finite and > 0", c.comm.timeout_seconds));
  require(e, c.comm.backend == "auto" || c.comm.backend == "gloo" || c.comm.backend == "nccl", f,
          "comm.backend", fmt::format("\"{}\" is not allowed (allowed: auto | gloo | nccl)", c.comm.backend));
}

}  // namespace

std::vector<std::string> validate(const TrainConfig& c) {
  const std::string& f = c.source_file;
  std::vector<std::string> e = validate_model(c.model, f, "model.");
  require(e, !c.runtime.empty(), f, "runtime",
          "\"\" is not allowed: name a runtime preset of configs/runtimes/ (e.g. \"shardcast-train\", \"torchtitan\")");
  check_cluster(c, f, e);
  check_parallelism(c, f, e);
  check_training(c, f, e);
  check_precision(c, f, e);
  check_optimizer(c, f, e);
  check_data_and_checkpoint(c, f, e);
  check_prediction(c, f, e);
  check_metrics_and_comm(c, f, e);
  return e;
}

void validate_or_throw(const TrainConfig& cfg) {
  auto errs = validate(cfg);
  if (errs.empty()) return;
  std::ostringstream os;
  for (size_t i = 0; i < errs.size(); ++i) os << (i ? "\n" : "") << errs[i];
  throw ConfigErrors(os.str());
}

}  // namespace shardcast
