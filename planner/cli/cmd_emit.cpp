// `shardcast emit`: write run.toml (with [prediction]), launch.sbatch, launch_torchrun.sh and
// the same plan for torchtitan, accelerate and fms-fsdp into --out DIR (planner/emit/emit.h), each
// file predicted for the runtime that executes it. The configuration comes from `shardcast
// plan`'s flags (optionally on top of a run.toml), or with --from-search RANK from the RANK-th
// (1-based) result of the same search `shardcast search` runs with these flags. Exit code 3 if
// the configuration does not fit for --runtime (the plan's runtime), 2 if it cannot run it or
// if no emitted file's runtime runs it (nothing is written then).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/core.h>
#include <toml++/toml.h>

#include "planner/cli/commands.h"
#include "planner/cli/config_flags.h"
#include "planner/cli/reliability_flags.h"
#include "planner/cli/search_flags.h"
#include "planner/emit/emit.h"
#include "planner/emit/emit_ecosystem.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "planner/decide/search.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::cli {

namespace {

struct EmitFlags {
  SpaceFlags space;     // --model --hardware --gpus ... (and the search-only flags)
  ConfigFlags choice;   // config, --strategy --micro-batch ... (add_choice_flags)
  std::string out, data, torchtitan_version = "0.2";
  std::optional<int> steps, from_search;  // absent = not given (ranges: planner/cli/validators.cpp)
  bool force = false;
  bool overwrite = false;
  ReliabilityFlags reliability;  // --reliability ...: the recommended checkpoint.interval
};

// Whether the run.toml at `path` ("" = none) writes [checkpoint] interval itself (read and
// validated before, so it parses).
bool config_gives_interval(const std::string& path) {
  if (path.empty()) return false;
  try {
    const toml::table t = toml::parse(read_config_text(path), path);
    return bool(t.at_path("checkpoint.interval"));
  } catch (const toml::parse_error&) {
    return false;  // a GUI session (.json), read by config_from_flags: its interval is recommended as before
  }
}

// The configuration the plan flags describe (the same rules as `shardcast plan`).
TrainConfig from_plan_flags(const EmitFlags& a, HardwareSpec& hw) {
  ConfigFlags f = a.choice;
  f.model = a.space.model;
  f.gpu = a.space.gpu;
  f.gpus = a.space.gpus;
  f.gpus_per_node = a.space.gpus_per_node;
  if (a.space.inter_node_gbps > 0) f.inter_node_gbps = a.space.inter_node_gbps;
  if (a.space.power_limit_w > 0) f.power_limit_w = a.space.power_limit_w;
  f.seq_len = a.space.seq_len;
  f.runtime = a.space.runtime;
  return config_from_flags("emit", f, hw);
}

// The configuration to emit: the RANK-th result of the search the flags describe
// (--from-search), or the plan flags on top of an optional run.toml; then --steps and --data.
TrainConfig emit_config(const EmitFlags& a, planner::TorchtitanVersion tv, HardwareSpec& hw) {
  TrainConfig cfg;
  if (a.from_search) {
    const ConfigFlags& c = a.choice;
    if (!c.config.empty() || !c.strategy.empty() || c.hsdp_shard_size >= 0 || c.micro_batch > 0 ||
        c.grad_accum > 0 || !c.ac.empty() || c.ac_ratio >= 0 || c.compile || !c.fp8.empty())
      throw UsageError(
          "emit: --from-search chooses the configuration; drop run.toml, --strategy, --hsdp-shard-size, "
          "--micro-batch, --grad-accum, --ac, --ac-ratio, --compile, --fp8 (use --allow-compile/--allow-fp8)");
    // The search ranks by the model alone (a reference run's level would scale every candidate
    // alike); the reference run is applied to the emitted targets below.
    SpaceFlags sf = a.space;
    sf.reference_run.clear();
    planner::SearchSpace space = to_space(sf, "emit", hw, "0");
    if (space.gpus <= 0) throw UsageError("emit: --gpus is required");
    if (!c.param_dtype.empty()) space.base.precision.param_dtype = c.param_dtype;
    if (!c.reduce_dtype.empty()) space.reduce_dtypes = {c.reduce_dtype};
    if (c.sync_every_micro_step) space.base.parallelism.sync_every_micro_step = c.sync_every_micro_step;
    if (c.mean_doc_len) space.base.data.mean_doc_len = *c.mean_doc_len;
    if (!c.state_dtype.empty()) space.base.optimizer.state_dtype = c.state_dtype;
    // A torchtitan plan is searched among the float8 recipes the generation written can express.
    if (planner::runtime_preset(space.base.runtime).framework == "torchtitan")
      space.fp8_recipes = planner::torchtitan_fp8_recipes(tv);
    const planner::SearchResult r = planner::search(space, hw, progress_bar("search"));
    require_reachable_batch(space, hw, r, "emit --from-search");
    const int rank = *a.from_search;
    if (int64_t(rank) > int64_t(r.ranked.size()))
      throw UsageError(fmt::format("emit: --from-search {} but only {} configurations fit", rank,
                                   r.ranked.size()));
    cfg = r.ranked[size_t(rank - 1)].config;
  } else {
    if (!a.space.global_batch_tokens.empty() || a.space.allow_fp8 || a.space.allow_compile)
      throw UsageError("emit: --global-batch-tokens, --allow-fp8 and --allow-compile only apply with --from-search");
    cfg = from_plan_flags(a, hw);
  }
  if (a.steps) cfg.training.steps = *a.steps;
  if (!a.data.empty()) cfg.data.path = a.data;
  validate_or_throw(cfg);
  planner::require_inter_node_network(cfg, hw);
  return cfg;
}

// --reference-run: the target of the run's runtime carries its level; no target of that runtime
// is an error, not a flag quietly unused.
void require_reference_target(const planner::ReferenceRun& ref, const std::vector<planner::EmitTarget>& targets) {
  std::string runtimes;
  bool found = false;
  for (const auto& t : targets) {
    runtimes += (runtimes.empty() ? "" : ", ") + t.runtime;
    found |= t.runtime == ref.runtime && t.refusal.empty();
  }
  if (!found)
    throw UsageError(fmt::format("--reference-run {}: runtime {} made it, and emit predicts no target of that "
                                 "runtime for this configuration (targets: {})",
                                 ref.dir, ref.runtime, runtimes));
}

// The plan must fit for its runtime (exit 3 otherwise, unless --force); a plan given by flags that
// fits above the --max-mem-frac margin gets a warning.
void require_fit(const EmitFlags& a, const planner::EmitTarget& main) {
  const Prediction& pred = main.prediction;
  const double gib = double(1ull << 30);
  if (!pred.fits && !a.force) {
    fmt::print(stderr,
               "emit: the plan does not fit for runtime {}: {:.1f} GiB needed of {:.1f} GiB, {} overflows; nothing "
               "written (--force writes anyway)\n",
               main.runtime, planner::memory_needed_bytes(pred) / gib, pred.mem_capacity_bytes / gib,
               pred.overflow_component);
    throw ExitCode{kExitNoFit};
  }
  const double need = planner::memory_needed_bytes(pred), margin = a.space.max_mem_frac * pred.mem_capacity_bytes;
  if (!a.from_search && pred.fits && need > margin)
    fmt::print(stderr, "emit: warning: {:.1f} GiB per GPU is above {:.0f}% of {:.1f} GiB (--max-mem-frac); expect "
                       "allocator retries\n",
               need / gib, 100 * a.space.max_mem_frac, pred.mem_capacity_bytes / gib);
}

// checkpoint.interval: the one that maximizes goodput under failures (planner/decide/goodput.h),
// unless the config gives one: a run.toml's interval = 0 ("only at the end") is a given value,
// kept (0 is also the default, so the file itself says whether it was written).
void recommend_checkpoint_interval(const EmitFlags& a, const Prediction& pred, TrainConfig& cfg) {
  if (cfg.checkpoint.interval == 0 && !config_gives_interval(a.choice.config) && pred.fits && pred.step_time_s > 0) {
    cfg.checkpoint.interval = int(std::min<int64_t>(
        planner::recommended_checkpoint_interval_steps(cfg, pred, to_reliability(a.reliability)), INT32_MAX));
    if (cfg.checkpoint.interval > 0)
      fmt::print("emit: checkpoint.interval = {} steps (most useful work under failures; --reliability){}\n",
                 cfg.checkpoint.interval, cfg.checkpoint.dir.empty() ? "; set checkpoint.dir to save" : "");
  }
}

// What was planned and written: the main runtime's prediction, the other targets', the files.
void print_emitted(const TrainConfig& cfg, const planner::EmitTarget& main, const planner::EmitResult& res,
                   const planner::ReferenceRun* ref) {
  const Prediction& pred = main.prediction;
  const double gib = double(1ull << 30), need = planner::memory_needed_bytes(pred);
  fmt::print("emit: {} ({}), runtime {}: predicted {:.0f} tokens/s/GPU, MFU {:.1f}%, device total {:.1f} GiB{}\n",
             planner::describe_config(cfg), cfg.model_label(), main.runtime, pred.tokens_per_s_per_gpu,
             100 * pred.mfu, need / gib, pred.fits ? "" : " (DOES NOT FIT; --force)");
  for (const auto& t : res.targets)
    if (t.runtime != main.runtime && t.refusal.empty())
      fmt::print("  runtime {}: {:.0f} tokens/s/GPU, device total {:.1f} GiB{}\n", t.runtime,
                 t.prediction.tokens_per_s_per_gpu, planner::memory_needed_bytes(t.prediction) / gib,
                 t.prediction.fits ? "" : " (does not fit)");
  if (ref)
    fmt::print("  runtime {}'s tokens/s carry reference run {}: x{:.3f} (its measured / predicted), band ±{:.0f}%\n",
               ref->runtime, ref->dir, ref->level(), 100 * planner::shipped_bands().reference.rel_1sigma);
  for (const auto& p : res.written) fmt::print("  wrote {}\n", p);
  for (const auto& p : res.removed) fmt::print("  removed {} (an earlier emit's; not part of this plan)\n", p);
  for (const auto& s : res.skipped) fmt::print(stderr, "emit: not written: {}\n", s);
  for (const auto& n : res.notes) fmt::print(stderr, "emit: note: {}\n", n);
}

// Nothing written is an error; a run.toml without a token file, or with a relative one, is said.
void check_written(const EmitFlags& a, const TrainConfig& cfg, const planner::EmitResult& res,
                   const planner::EmitTarget& main) {
  // Every emitter's runtime refusing the configuration (e.g. kempnerforge's pure bf16, which no
  // emitted file's software runs) leaves nothing to run it with: an error, not a quiet success.
  if (res.written.empty())
    throw UsageError(fmt::format("emit: nothing written to {}: no emitted file's runtime runs this configuration "
                                 "(each reason above); runtime {} has no file of its own here",
                                 a.out, main.runtime));
  const bool run_toml = std::any_of(res.written.begin(), res.written.end(), [](const std::string& p) {
    return std::filesystem::path(p).filename() == "run.toml";
  });
  if (run_toml && cfg.data.path.empty())
    fmt::print(stderr, "emit: run.toml has no data.path: set SHARDCAST_DATA=FILE for launch.sbatch and "
                       "launch_torchrun.sh, or pass --data FILE to shardcast-train (or emit again with --data)\n");
  // The launchers run in --out (launch.sbatch when submitted from it): a relative token file
  // there names a file under --out, whatever folder emit ran in. (Relative checkpoint and
  // metrics folders land under --out too, as the launchers' headers say.)
  if (run_toml && !cfg.data.path.empty() && std::filesystem::path(cfg.data.path).is_relative())
    fmt::print(stderr, "emit: note: run.toml's data.path \"{}\" is relative: the launchers run in {}, so it names a "
                       "file under that folder (give --data an absolute path to name another)\n",
               cfg.data.path, a.out);
}

void run_emit(const EmitFlags& a) {
  HardwareSpec hw;
  const planner::TorchtitanVersion tv = *planner::parse_torchtitan_version(a.torchtitan_version);
  TrainConfig cfg = emit_config(a, tv, hw);
  // The plan is made for cfg.runtime (--runtime; default shardcast-train): it must be able to
  // run it and it must fit. Every other runtime's files are predicted for that runtime.
  std::optional<planner::ReferenceRun> ref;
  if (!a.space.reference_run.empty()) ref = planner::read_reference_run(a.space.reference_run, hw);
  const std::vector<planner::EmitTarget> targets = planner::emit_targets(cfg, hw, tv, ref ? &*ref : nullptr);
  if (ref) require_reference_target(*ref, targets);
  const planner::EmitTarget& main = targets.front();
  // Runtime "torchtitan" (--runtime, run.toml or SHARDCAST_RUNTIME) names the framework: the plan
  // is made for the generation whose files --torchtitan-version writes (`shardcast plan --runtime torchtitan` plans the current one).
  const bool generation_of_framework = cfg.runtime == "torchtitan" && main.runtime != cfg.runtime;
  const std::string which_generation =
      generation_of_framework
          ? fmt::format("runtime torchtitan (the framework) is planned as {}, the generation --torchtitan-version {} "
                        "writes (0.2: torchtitan.toml of v0.2.1 and v0.2.2; current: torchtitan_recipe.py, runtime torchtitan, "
                        "which `shardcast plan --runtime torchtitan` plans)",
                        main.runtime, a.torchtitan_version)
          : std::string();
  if (!main.refusal.empty())
    throw ConfigError(cfg.source_file, "runtime",
                      generation_of_framework ? main.refusal + "; " + which_generation : main.refusal);
  if (generation_of_framework) fmt::print(stderr, "emit: note: {}\n", which_generation);
  require_fit(a, main);
  recommend_checkpoint_interval(a, main.prediction, cfg);
  const planner::EmitResult res = planner::emit_files(cfg, hw, a.out, a.force, tv, ref ? &*ref : nullptr, a.overwrite);
  print_emitted(cfg, main, res, ref ? &*ref : nullptr);
  check_written(a, cfg, res, main);
}

}  // namespace

void register_emit(CLI::App& app) {
  auto a = std::make_shared<EmitFlags>();
  auto* cmd = app.add_subcommand(
      "emit", "Write run.toml, Slurm/torchrun launchers and torchtitan/accelerate/fms-fsdp configs for a plan");
  cmd->add_option("config", a->choice.config, "run.toml to start from; flags override its values");
  add_space_flags(cmd, a->space, true, "0", false);  // --mean-doc-len, --state-dtype: plan flags (add_choice_flags)
  add_choice_flags(cmd, a->choice);
  cmd->add_option("--steps", a->steps, "optimizer steps (training.steps)");
  cmd->add_option("--from-search", a->from_search,
                  "emit the RANK-th (1 = best) result of `shardcast search` with the same flags");
  cmd->add_option("--out", a->out, "directory to write into")->required();
  cmd->add_option("--data", a->data, "token file (llm.c .bin) for run.toml's data.path; without it the launchers "
                                      "read SHARDCAST_DATA");
  cmd->add_flag("--force", a->force, "write even if the plan does not fit in memory");
  cmd->add_flag("--overwrite", a->overwrite,
                "replace the files this plan writes in --out and remove an earlier emit's other files there "
                "(without it an --out holding any emitted file is refused; the input config is never replaced)");
  add_reliability_flags(cmd, a->reliability);
  cmd->add_option("--torchtitan-version", a->torchtitan_version,
                  std::string("torchtitan configuration generation to write: ") + planner::kTorchtitanVersionNames +
                      " (0.2 = v0.2.1 and v0.2.2's TOML; current = the Python config registry from 9810191bb)")
      ->check(CLI::IsMember({"0.2", "current"}))
      ->capture_default_str();
  cmd->callback([a] { run_emit(*a); });
}

}  // namespace shardcast::cli
