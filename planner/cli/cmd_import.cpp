// `shardcast import torchtitan|fms-fsdp|deepspeed LOG --out RUN_DIR`: a run of another trainer as a run
// directory that `shardcast validate RUN_DIR` and `shardcast calibrate --runs RUN_DIR...` read
// (planner/evidence/import/run_import.h). The log does not carry the configuration: it comes from the
// plan flags (--model --hardware --gpus --micro-batch --seq-len ...), and for torchtitan optionally
// from its v0.2.x TOML job config (--config; flags override its values).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "planner/cli/commands.h"
#include "planner/cli/config_flags.h"
#include "planner/evidence/import/run_import.h"
#include "planner/evidence/import/torchtitan_config.h"
#include "planner/evidence/import/train_log.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::cli {

namespace {

struct ImportFlags {
  ConfigFlags plan;  // --model --hardware --gpus ... (plan.config stays "": not a run.toml)
  std::string log, titan_config, out;
  int warmup = 10;
};

// The mesh of a torchtitan job config onto the flags (a flag given wins), and its data-parallel
// split: dp_replicate x dp_shard = the world over tp x cp x pp (torchtitan's ParallelDims).
struct MeshFromJob {
  int replicate = 1, shard = 1, pp = 1;
};
MeshFromJob mesh_from_job(const planner::TorchtitanJob& j, ConfigFlags& f, std::vector<std::string>& notes) {
  if (!f.tp && j.tp) f.tp = *j.tp;
  if (!f.cp && j.cp) f.cp = *j.cp;
  if (!f.pp && j.pp) f.pp = *j.pp;
  // Keys of a dimension torchtitan leaves off: it reads them only with their degree above 1
  // (parallelize.py: async TP under parallel_dims.tp_enabled; the pipeline's and CP's settings
  // only where pp / cp is enabled), so they are dropped with a note, not refused.
  auto take = [&](bool on, const char* key, bool given, auto apply) {
    if (!given) return;
    if (on) apply();
    else notes.push_back(fmt::format("{}: parallelism.{} ignored: torchtitan reads it only with its degree above 1",
                                     j.file, key));
  };
  const bool tp_on = f.tp.value_or(1) > 1, cp_on = f.cp.value_or(1) > 1, pp_on = f.pp.value_or(1) > 1;
  take(tp_on, "enable_async_tensor_parallel", !f.tp_async && j.tp_async && *j.tp_async, [&] { f.tp_async = *j.tp_async; });
  take(pp_on, "pipeline_parallel_schedule", f.pp_schedule.empty() && j.pp_schedule.has_value(),
       [&] { f.pp_schedule = *j.pp_schedule; });
  take(cp_on, "context_parallel_rotate_method", f.cp_rotate.empty() && j.cp_rotate.has_value(),
       [&] { f.cp_rotate = *j.cp_rotate; });
  take(pp_on, "pipeline_parallel_microbatch_size", !f.pp_microbatch && j.pp_microbatch_size.has_value(),
       [&] { f.pp_microbatch = *j.pp_microbatch_size; });
  // tp x cp x pp against the world, in 64 bits (each degree may be up to 2^30); the key named is
  // the first whose degree leaves the product no divisor of --gpus.
  int64_t inner = 1;
  for (const auto& [key, d] : {std::pair{"tensor_parallel_degree", f.tp}, {"context_parallel_degree", f.cp},
                               {"pipeline_parallel_degree", f.pp}}) {
    inner *= d.value_or(1);
    if (inner > *f.gpus || *f.gpus % inner != 0)
      throw ConfigError(j.file, std::string("parallelism.") + key,
                        fmt::format("tp {} x cp {} x pp {} = {:.0f} does not divide --gpus {}", f.tp.value_or(1),
                                    f.cp.value_or(1), f.pp.value_or(1),
                                    double(f.tp.value_or(1)) * f.cp.value_or(1) * f.pp.value_or(1), *f.gpus));
  }
  const int dp = int(*f.gpus / inner);
  MeshFromJob m;
  m.pp = f.pp.value_or(1);
  m.replicate = f.dp_replicate.value_or(j.dp_replicate.value_or(1));
  const int shard = f.dp_shard.value_or(j.dp_shard.value_or(-1));
  m.shard = shard == -1 ? dp / std::max(1, m.replicate) : shard;
  if (m.replicate < 1 || m.shard < 1 || int64_t(m.replicate) * m.shard != dp)
    throw ConfigError(j.file, "parallelism.data_parallel_shard_degree",
                      fmt::format("replicate {} x shard {} is not the {} data-parallel ranks (--gpus {} over tp x cp x "
                                  "pp = {})",
                                  m.replicate, shard, dp, *f.gpus, inner));
  if (inner > 1) {  // a mesh: its degrees as run.toml's keys (1-D runs keep the strategy's split)
    f.dp_replicate = m.replicate;
    f.dp_shard = m.shard;
  }
  return m;
}

// The strategy of the job's data-parallel split and fsdp_reshard_after_forward. "default":
// reshard after forward unless PP is on (torchtitan parallelize_llama.py @e61f2cce4 apply_fsdp:
// reshard_after_forward = not pp_enabled, "to avoid per-microbatch all-gathers"). Two
// combinations the planner has no strategy for are refused by the key: HSDP that keeps its
// parameters gathered ("never"), and a pipeline that reshards every micro-batch ("always";
// the runtime term pp_reshard_after_forward plans torchtitan's pipeline without it).
std::string strategy_of_job(const planner::TorchtitanJob& j, const MeshFromJob& mesh) {
  const std::string r = j.reshard_after_forward.value_or("default");
  const char* key = "parallelism.fsdp_reshard_after_forward";
  if (mesh.replicate > 1 && mesh.shard > 1) {
    if (r == "never")
      throw ConfigError(j.file, key,
                        "\"never\" with data_parallel_replicate_degree > 1 (HSDP keeping its parameters gathered) is "
                        "not modelled: the planner's hybrid_shard reshards after forward");
    return "hybrid_shard";
  }
  if (mesh.replicate > 1) return "no_shard";
  if (mesh.pp > 1 && r == "always")
    throw ConfigError(j.file, key,
                      "\"always\" with pipeline_parallel_degree > 1 is not modelled: the planner plans torchtitan's "
                      "pipeline stages with their parameters gathered once a step (runtime term "
                      "pp_reshard_after_forward)");
  return r == "never" || (r == "default" && mesh.pp > 1) ? "shard_grad_op" : "full_shard";
}

// config_from_flags's validation names run.toml's keys in "<input>": here the job config and its
// torchtitan key beside run.toml's.
TrainConfig validated_config(const ConfigFlags& f, HardwareSpec& hw, const std::string& file) {
  auto rename = [&](const std::string& what) {
    std::string out, line;
    for (size_t at = 0; at <= what.size();) {
      const size_t end = std::min(what.find('\n', at), what.size());
      line = what.substr(at, end - at);
      const std::string input = "<input>: ";
      if (line.rfind(input, 0) == 0) {
        std::string rest = line.substr(input.size());
        for (const auto& [theirs, ours] : torchtitan_parallelism_names()) {
          const std::string k = "parallelism." + ours + ": ";
          if (rest.rfind(k, 0) == 0) {
            rest = fmt::format("parallelism.{} (run.toml parallelism.{}): {}", theirs, ours, rest.substr(k.size()));
            break;
          }
        }
        line = file + ", imported as run.toml: " + rest;
      }
      out += (out.empty() ? "" : "\n") + line;
      at = end + 1;
    }
    return out;
  };
  try {
    return config_from_flags("import", f, hw);
  } catch (const ConfigErrors& e) {
    throw ConfigErrors(rename(e.what()));
  } catch (const ConfigError& e) {
    throw ConfigErrors(rename(e.what()));
  }
}

// The TrainConfig of a torchtitan TOML job config with the flags on top.
// The current torchtitan's configuration is Python (a Trainer.Config function, as emit's
// torchtitan_recipe.py): code, which import never runs; read as TOML it would be a syntax error.
void refuse_python_config(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& ch : ext) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (ext == ".py")
    throw UsageError(fmt::format(
        "import: --config {}: a Python config (the current torchtitan's Trainer.Config, as emit's "
        "torchtitan_recipe.py) is code, and import does not run it; --config reads torchtitan v0.2's TOML job config. "
        "For a run of the current torchtitan give its settings as plan flags (--model, --tp, --micro-batch, ...; "
        "docs/import.md)",
        path));
}

// torchtitan's activation checkpointing (mode, selective_ac_option) as the plan's --ac and
// --ac-ratio, where the flags do not give it; `dflt` notes a default taken for an absent key.
template <typename Default>
void ac_from_job(const planner::TorchtitanJob& j, ConfigFlags& f, const Default& dflt) {
  if (!f.ac.empty()) return;
  const std::string mode = j.ac_mode.value_or("selective");
  const std::string option = j.selective_ac_option.value_or("2");
  if (!j.ac_mode) dflt("activation_checkpoint.mode", "\"selective\"");
  if (mode == "selective") {
    if (!j.selective_ac_option) dflt("activation_checkpoint.selective_ac_option", "\"2\"");
    if (option == "op") {
      f.ac = "selective_op";
    } else {
      const int k = std::atoi(option.c_str());
      if (k < 1 || std::to_string(k) != option)
        throw ConfigError(j.file, "activation_checkpoint.selective_ac_option",
                          fmt::format("'{}' (allowed: \"op\" or a positive integer N: every N-th block)", option));
      f.ac = k == 1 ? "full" : "selective";
      if (k > 1 && f.ac_ratio < 0) f.ac_ratio = 1.0 / k;
    }
  } else {
    f.ac = mode;
  }
}

// The job's optimizer, schedule and step keys onto the validated config, and the notes of what
// run.toml has no key for (loss parallel off, another AdamW implementation than the runtime's).
void job_settings_onto(const planner::TorchtitanJob& j, const HardwareSpec& hw, TrainConfig& c,
                       std::vector<std::string>& notes) {
  if (j.disable_loss_parallel && *j.disable_loss_parallel && c.parallelism.tp > 1)
    notes.push_back(fmt::format("{}: parallelism.disable_loss_parallel = true: predicted with runtime {}'s loss (the "
                                "plan has no key for it)",
                                j.file, c.runtime));
  if (j.steps) c.training.steps = *j.steps;
  if (j.max_norm) c.training.max_grad_norm = *j.max_norm;
  if (j.lr) c.optimizer.lr = *j.lr;
  if (j.eps) c.optimizer.eps = *j.eps;
  if (j.weight_decay) c.optimizer.weight_decay = *j.weight_decay;
  if (j.warmup_steps) c.lr_schedule.warmup_steps = *j.warmup_steps;
  // The AdamW implementation is a runtime term (adamw_update), not a run.toml key: a run on
  // another one than its runtime's is predicted with the runtime's, and says so.
  if (j.adamw_update) {
    const planner::PlanOptions o = planner::resolve_plan_options(c, hw);
    const planner::AdamwUpdate u = *j.adamw_update;
    if (u != o.adamw_update)
      notes.push_back(fmt::format(
          "{}: optimizer.implementation is {}, runtime {} runs {}: predicted with {} ({} accesses an element of "
          "the shard where {} makes {}, planner/model/optimizer_step.h); run.toml has no key for it",
          j.file, planner::to_string(u), c.runtime, planner::to_string(o.adamw_update),
          planner::to_string(o.adamw_update), planner::optimizer_accesses(o.adamw_update, o.grad_clip),
          planner::to_string(u), planner::optimizer_accesses(u, o.grad_clip)));
  }
  if (!j.ignored.empty()) {
    std::string keys;
    for (const auto& k : j.ignored) keys += (keys.empty() ? "" : ", ") + k;
    notes.push_back(fmt::format("{}: keys that do not change the plan, ignored: {}", j.file, keys));
  }
}

TrainConfig config_from_torchtitan(const ImportFlags& a, HardwareSpec& hw, std::vector<std::string>& notes) {
  refuse_python_config(a.titan_config);
  const planner::TorchtitanJob j = planner::read_torchtitan_job_toml(a.titan_config);
  ConfigFlags f = a.plan;
  // A TOML job config is torchtitan's until 9810191bb (2026-02-23) made configs Python: the
  // generation of those files (emit's v0.2), unless --runtime names another.
  if (f.runtime.empty()) {
    f.runtime = "torchtitan-2025-10";
    notes.push_back(fmt::format("{}: a TOML job config (torchtitan until 9810191bb, 2026-02-23): predicted with "
                                "runtime torchtitan-2025-10, the generation of those files (--runtime to name another)",
                                j.file));
  }
  if (f.model.empty()) {
    if (j.model_preset.empty())
      throw ConfigError(j.file, "model.flavor",
                        fmt::format("torchtitan model {} flavor '{}' has no shardcast preset; pass --model", j.model_name,
                                    j.flavor));
    f.model = j.model_preset;
  }
  if (f.gpu.empty()) throw UsageError("import: --hardware is required (the torchtitan TOML does not name the hardware)");
  if (f.gpus <= 0) throw UsageError("import: --gpus is required (the torchtitan TOML does not hold the world size)");
  // torchtitan's defaults for absent keys (torchtitan/config/job_config.py, v0.2.x).
  auto dflt = [&](const char* key, const std::string& v) {
    notes.push_back(fmt::format("{}: {} absent: torchtitan's default {}", j.file, key, v));
  };
  const int local = j.local_batch_size.value_or(8);
  if (!j.local_batch_size && f.micro_batch <= 0) dflt("training.local_batch_size", "8");
  if (f.micro_batch <= 0) f.micro_batch = local;
  if (f.seq_len <= 0) {
    if (!j.seq_len) dflt("training.seq_len", "2048");
    f.seq_len = j.seq_len.value_or(2048);
  }
  const MeshFromJob mesh = mesh_from_job(j, f, notes);
  const int replicate = mesh.replicate, shard = mesh.shard;
  if (f.strategy.empty()) {
    f.strategy = strategy_of_job(j, mesh);
    // A 1-D HSDP run names its group by hsdp_shard_size; a mesh by dp_shard (mesh_from_job), not both.
    if (f.strategy == "hybrid_shard" && !f.hsdp_shard_size && !f.dp_shard) f.hsdp_shard_size = shard;
  }
  if (f.grad_accum <= 0 && j.global_batch_size && *j.global_batch_size > 0) {
    const int64_t per_step = int64_t(*f.micro_batch) * replicate * shard;
    if (*j.global_batch_size % per_step != 0)
      throw ConfigError(j.file, "training.global_batch_size",
                        fmt::format("{} is not a multiple of local_batch_size {} x {} data-parallel ranks",
                                    *j.global_batch_size, *f.micro_batch, replicate * shard));
    f.grad_accum = int(*j.global_batch_size / per_step);
  }
  ac_from_job(j, f, dflt);
  if (j.compile && j.compile_model_listed) f.compile = true;
  if (j.compile && !j.compile_model_listed)
    notes.push_back(fmt::format("{}: compile.components has no \"model\": torchtitan compiles the loss only; planned "
                                "with the model eager (the planner's compile is the model's)",
                                j.file));
  if (!j.fp8.empty()) f.fp8 = j.fp8;
  if (f.param_dtype.empty()) f.param_dtype = j.param_dtype.value_or("bf16");
  if (f.master_dtype.empty() && j.master_dtype) f.master_dtype = *j.master_dtype;  // training.dtype
  if (f.reduce_dtype.empty()) f.reduce_dtype = j.reduce_dtype.value_or("fp32");
  TrainConfig c = validated_config(f, hw, j.file);
  c.source_file = j.file;
  if (j.pp_layers_per_stage && mesh.pp > 1 && !a.plan.pp_virtual_stages) {
    // torchtitan pipeline_parallel.py @e61f2cce4: ceil((layers + 1 + 1) / layers_per_stage)
    // stages (the embedding and the output count one layer each), divided over the pp ranks.
    const int stages = (c.model.n_layers + 2 + *j.pp_layers_per_stage - 1) / *j.pp_layers_per_stage;
    if (stages % mesh.pp != 0)
      throw ConfigError(j.file, "parallelism.pipeline_parallel_layers_per_stage",
                        fmt::format("{} stages ({} layers + 2 over {} per stage) do not divide over pp {}", stages,
                                    c.model.n_layers, *j.pp_layers_per_stage, mesh.pp));
    c.parallelism.pp_virtual_stages = stages / mesh.pp;
  }
  job_settings_onto(j, hw, c, notes);
  return c;
}

// The ZeRO stage a DeepSpeed log states (train_log.h) against the config's sharding strategy:
// taken where --strategy was not given, refused by name where it disagrees (exit 2).
void take_logged_zero_stage(const planner::TrainLog& log, bool strategy_given, TrainConfig& cfg,
                            std::vector<std::string>& notes) {
  const int z = *log.zero_stage;
  const std::string where = fmt::format("{}:{}", log.file, log.zero_stage_line);
  std::optional<ShardingStrategy> s;
  if (z == 1) s = ShardingStrategy::shard_optimizer;
  else if (z == 2) s = ShardingStrategy::shard_grad_op;
  else if (z == 3) s = ShardingStrategy::full_shard;
  if (!s)
    throw UsageError(fmt::format("import: {} states ZeRO stage {}, which the planner does not plan (ZeRO stages 1, "
                                 "2, 3 are --strategy shard_optimizer | shard_grad_op | full_shard)",
                                 where, z));
  if (strategy_given && cfg.parallelism.sharding_strategy != *s)
    throw UsageError(fmt::format("import: --strategy {} disagrees with {}, which states ZeRO stage {} (--strategy {})",
                                 to_string(cfg.parallelism.sharding_strategy), where, z, to_string(*s)));
  if (strategy_given) return;
  cfg.parallelism.sharding_strategy = *s;
  for (std::string& n : notes)
    if (n.rfind("--strategy not given", 0) == 0)
      n = fmt::format("--strategy not given: {} (ZeRO stage {}, stated at {})", to_string(*s), z, where);
}

// The run's config from the plan flags (no --config): --micro-batch and --seq-len required, the
// runtime's own reduction, and a note for each choice the log cannot confirm.
TrainConfig config_from_import_flags(const std::string& trainer, const ImportFlags& a, HardwareSpec& hw,
                                     std::vector<std::string>& notes) {
  ConfigFlags f = a.plan;
  if (f.runtime.empty()) f.runtime = trainer;  // the runtime preset of the same name, unless --runtime
  if (f.micro_batch <= 0) throw UsageError("import: --micro-batch is required (the log does not hold it)");
  if (f.seq_len <= 0) throw UsageError("import: --seq-len is required (the log does not hold it)");
  // torchtitan checkpoints by default, in a way that changed: the log cannot say which ran.
  if (trainer == "torchtitan" && f.ac.empty())
    throw UsageError("import: --ac is required for a torchtitan log without --config (the log does not hold it; "
                     "torchtitan's default is op-level selective from 114151ad4, 2026-03-23: trainer.py @b5bcd76c6 "
                     "lines 108-110, and every second block before: job_config.py @81af8833d, mode \"selective\", "
                     "selective_ac_option \"2\")");
  if (f.reduce_dtype.empty() && f.param_dtype != "fp32")
    // torchtitan reduces in fp32 only; fms-fsdp's bfSixteen policy reduces in bf16
    // (fms_fsdp/policies/mixed_precision.py).
    f.reduce_dtype = trainer == "torchtitan" ? "fp32" : "bf16";
  const TrainConfig cfg = config_from_flags("import", f, hw);
  // What the flags leave out is the plan's default: said, since the log cannot confirm it.
  auto unstated = [&](bool given, const char* flag, const std::string& taken, const std::string& why = "") {
    if (!given) notes.push_back(fmt::format("{} not given: {}{}", flag, taken, why));
  };
  unstated(!f.strategy.empty(), "--strategy", to_string(cfg.parallelism.sharding_strategy),
           trainer == "fms-fsdp" ? " (fms-fsdp's own default --sharding_strategy is hsdp)" : "");
  unstated(!f.ac.empty(), "--ac", to_string(cfg.activation_checkpointing.mode));
  unstated(f.grad_accum.has_value(), "--grad-accum", std::to_string(cfg.training.grad_accum));
  unstated(f.compile, "--compile", "eager");
  unstated(!f.fp8.empty(), "--fp8", "none (bf16 matmuls)");
  return cfg;
}

// The log's text and its steps, as the trainer's format prints them: a byte-order mark dropped,
// a last line cut off while written left out (said).
planner::TrainLog read_train_log(const std::string& trainer, const std::string& path, std::vector<std::string>& notes) {
  std::string text = read_text(path);
  // A UTF-8 byte-order mark (an editor's) is not part of the first line.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  // A last line without its line end was cut off while written (a log copied from a running job):
  // its numbers may be cut too ("tps: 5" of "tps: 5,790"), so it is left out, said.
  if (!text.empty() && text.back() != '\n') {
    const size_t end = text.rfind('\n');
    notes.push_back(fmt::format("the log's last line has no line end (cut off while written): left out ({} bytes)",
                                text.size() - (end == std::string::npos ? 0 : end + 1)));
    text.erase(end == std::string::npos ? 0 : end + 1);
  }
  return trainer == "torchtitan" ? planner::parse_torchtitan_log(text, path)
         : trainer == "deepspeed"  ? planner::parse_deepspeed_log(text, path)
                                   : planner::parse_fms_fsdp_log(text, path);
}

// What import prints: the run's numbers as measured, the notes, the files written.
void print_imported_run(const std::string& trainer, const ImportFlags& a, const planner::ImportedRun& run,
                        const std::vector<std::string>& notes, const std::vector<std::string>& paths) {
  const RunReport& r = run.report;
  const auto& sum = run.info["summary"];
  fmt::print("import: {} run of {} on {} x {} from {}\n", trainer, run.cfg.model_label(), run.cfg.world_size(),
             run.cfg.cluster.hardware, a.log);
  fmt::print("  tokens/s/GPU        {:.0f} (median over {} steps after warm-up {})\n", r.tokens_per_s_per_gpu,
             run.info["steps_summarised"].get<int>(), a.warmup);
  fmt::print("  step time           {:.4g} s (median)\n", r.median_step_time_s);
  fmt::print("  MFU                 {:.2f}% planner convention (6·N + 12·L·d·s over {}'s peak)\n", 100 * r.mfu,
             run.cfg.cluster.hardware);
  fmt::print("                      {:.2f}% torchtitan convention (6·(N − embedding) + 12·L·d·s, same peak)\n",
             100 * sum["mfu_torchtitan_convention"].get<double>());
  if (!sum["mfu_logged_pct"].is_null())
    fmt::print("                      {:.2f}% as logged (torchtitan's count over its own peak table)\n",
               sum["mfu_logged_pct"].get<double>());
  if (r.mem_reserved_peak_bytes)
    fmt::print("  max reserved        {:.2f} GiB\n", *r.mem_reserved_peak_bytes / double(1ull << 30));
  if (r.mem_peak_bytes > 0) fmt::print("  max allocated       {:.2f} GiB\n", r.mem_peak_bytes / double(1ull << 30));
  for (const auto& n : notes) {
    if (n.rfind("warning:", 0) == 0)
      fmt::print(stderr, "import: {}\n", n);
    else
      fmt::print("  note: {}\n", n);
  }
  for (const auto& p : paths) fmt::print("  wrote {}\n", p);
}

void run_import(const std::string& trainer, const ImportFlags& a) {
  // --runtime names a generation of the log's software, nothing else.
  if (!a.plan.runtime.empty()) {
    const std::string fw = planner::runtime_preset(trainer).framework;
    if (planner::runtime_preset(a.plan.runtime).framework != fw)
      throw UsageError(fmt::format("import: --runtime {} is not a generation of {} (its generations: {})",
                                   a.plan.runtime, trainer, fmt::join(planner::runtime_generations(fw), ", ")));
  }
  std::vector<std::string> notes;
  HardwareSpec hw;
  TrainConfig cfg;
  if (!a.titan_config.empty()) cfg = config_from_torchtitan(a, hw, notes);
  else cfg = config_from_import_flags(trainer, a, hw, notes);
  const planner::TrainLog log = read_train_log(trainer, a.log, notes);
  if (trainer == "deepspeed" && log.zero_stage) take_logged_zero_stage(log, !a.plan.strategy.empty(), cfg, notes);
  // torchtitan prints `mfu: N/A` under float8 (f113706c4, 2026-02): a log of only those lines
  // for a config without float8 is probably not what ran.
  if (trainer == "torchtitan" && !cfg.precision.fp8_on() && !log.steps.empty() &&
      std::none_of(log.steps.begin(), log.steps.end(), [](const planner::LoggedStep& s) { return s.mfu_pct.has_value(); }))
    notes.push_back("every step logs `mfu: N/A`, which torchtitan prints under float8 (f113706c4): the config has no "
                    "float8; give --fp8 RECIPE (or the TOML's converter) if the run used it");
  planner::ImportedRun run = planner::import_run(log, cfg, hw, a.warmup);
  notes.insert(notes.end(), run.notes.begin(), run.notes.end());
  run.info["notes"] = notes;
  const auto paths = planner::write_run_dir(run, a.out);
  print_imported_run(trainer, a, run, notes, paths);
}

void add_trainer(CLI::App* import, const std::string& trainer, const std::string& what) {
  auto a = std::make_shared<ImportFlags>();
  auto* cmd = import->add_subcommand(trainer, what);
  cmd->add_option("log", a->log, "the training log (stdout of rank 0, or torchrun --tee output)")->required();
  // Ranges of the numeric flags: planner/cli/validators.cpp (one range per flag name).
  cmd->add_option("--model", a->plan.model, "model preset name or .toml");
  add_hardware_flag(cmd, a->plan.gpu, "hardware preset the run used (e.g. H100-80GB-SXM)");
  cmd->add_option("--gpus", a->plan.gpus, "total GPUs (ranks) of the run");
  cmd->add_option("--gpus-per-node", a->plan.gpus_per_node, "GPUs per node (default: the preset's)");
  cmd->add_option("--inter-node-gbps", a->plan.inter_node_gbps, "NIC bandwidth per node in Gb/s (default: the preset's per GPU times --gpus-per-node)");
  add_power_limit_flag(cmd, a->plan.power_limit_w);
  cmd->add_option("--seq-len", a->plan.seq_len, "tokens per sequence");
  add_choice_flags(cmd, a->plan);
  cmd->add_option("--runtime", a->plan.runtime,
                  "runtime profile to predict the run with (default: " + trainer +
                      ", its newest generation; e.g. torchtitan-2025-07 for a torchtitan run from 2025-07-24 to 2025-10-08)");
  if (trainer == "torchtitan")
    cmd->add_option("--config", a->titan_config,
                    "torchtitan v0.2.x TOML job config of the run: supplies what the flags would; flags override it");
  cmd->add_option("--warmup", a->warmup, "steps (step number <= N) left out of the summary")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "run directory to write (run.toml, run_report.json, import.json)")->required();
  cmd->callback([a, trainer] { run_import(trainer, *a); });
}

}  // namespace

void register_import(CLI::App& app) {
  auto* cmd = app.add_subcommand("import", "Turn another trainer's run (its log) into a run directory for validate and calibrate");
  cmd->require_subcommand(1);
  add_trainer(cmd, "torchtitan", "torchtitan's training log (metric lines 'step: … loss: … memory: … tps: …')");
  add_trainer(cmd, "fms-fsdp", "fms-fsdp's training log (report blocks 'step:', 'loss:', 'reserved memory:', …)");
  add_trainer(cmd, "deepspeed",
              "DeepSpeed ZeRO under the HF Trainer: its log (DeepSpeed's 'epoch=…/global_step=…, "
              "CurrSamplesPerSec=…, MaxMemAllocated=…GB' lines, see_memory_usage, the Trainer's {'loss': …} dicts)");
}

}  // namespace shardcast::cli
