// `shardcast emit`: write run.toml (with [prediction]), launch.sbatch, launch_torchrun.sh and
// the same plan for torchtitan, accelerate and fms-fsdp into --out DIR (planner/emit.h).
// The configuration comes from `shardcast plan`'s flags (optionally on top of a run.toml), or
// with --from-search RANK from the RANK-th (1-based) result of the same search `shardcast
// search` runs with these flags. Exit code 3 if the configuration does not fit.
#include <memory>

#include <fmt/core.h>

#include "planner/cli/commands.h"
#include "planner/cli/config_flags.h"
#include "planner/cli/search_flags.h"
#include "planner/emit.h"
#include "planner/plan.h"
#include "planner/search.h"
#include "planner/run_validation.h"

namespace shardcast::cli {

namespace {

struct EmitFlags {
  SpaceFlags space;     // --model --gpu --gpus ... (and the search-only flags)
  ConfigFlags choice;   // config, --strategy --micro-batch ... (add_choice_flags)
  std::string out, torchtitan_version = "0.2";
  int steps = 0, from_search = 0;
  bool force = false;
};

// The configuration the plan flags describe (the same rules as `shardcast plan`).
TrainConfig from_plan_flags(const EmitFlags& a, HardwareSpec& hw) {
  ConfigFlags f = a.choice;
  f.model = a.space.model;
  f.gpu = a.space.gpu;
  f.gpus = a.space.gpus;
  f.gpus_per_node = a.space.gpus_per_node;
  if (a.space.inter_node_gbps > 0) f.inter_node_gbps = a.space.inter_node_gbps;
  f.seq_len = a.space.seq_len;
  return config_from_flags("emit", f, hw);
}

}  // namespace

void register_emit(CLI::App& app) {
  auto a = std::make_shared<EmitFlags>();
  auto* cmd = app.add_subcommand(
      "emit", "Write run.toml, Slurm/torchrun launchers and torchtitan/accelerate/fms-fsdp configs for a plan");
  cmd->add_option("config", a->choice.config, "run.toml to start from; flags override its values");
  add_space_flags(cmd, a->space, true, "0");
  add_choice_flags(cmd, a->choice);
  cmd->add_option("--steps", a->steps, "optimizer steps (training.steps)");
  cmd->add_option("--from-search", a->from_search,
                  "emit the RANK-th (1 = best) result of `shardcast search` with the same flags");
  cmd->add_option("--out", a->out, "directory to write into")->required();
  cmd->add_flag("--force", a->force, "write even if the plan does not fit in memory");
  cmd->add_option("--torchtitan-version", a->torchtitan_version,
                  std::string("torchtitan configuration generation to write: ") + planner::kTorchtitanVersionNames)
      ->check(CLI::IsMember({"0.2", "current"}))
      ->capture_default_str();
  cmd->callback([a] {
    HardwareSpec hw;
    TrainConfig cfg;
    Prediction pred;
    if (a->from_search > 0) {
      const ConfigFlags& c = a->choice;
      if (!c.config.empty() || !c.strategy.empty() || c.hsdp_shard_size >= 0 || c.micro_batch > 0 ||
          c.grad_accum > 0 || !c.ac.empty() || c.ac_ratio >= 0 || c.compile || c.fp8)
        throw UsageError(
            "emit: --from-search chooses the configuration; drop run.toml, --strategy, --hsdp-shard-size, "
            "--micro-batch, --grad-accum, --ac, --ac-ratio, --compile, --fp8 (use --allow-compile/--allow-fp8)");
      planner::SearchSpace space = to_space(a->space, "emit", hw, "0");
      if (space.gpus <= 0) throw UsageError("emit: --gpus is required");
      if (!c.param_dtype.empty()) space.base.precision.param_dtype = c.param_dtype;
      if (!c.reduce_dtype.empty()) space.reduce_dtypes = {c.reduce_dtype};
      const planner::SearchResult r = planner::search(space, hw, progress_bar("search"));
      if (int64_t(a->from_search) > int64_t(r.ranked.size()))
        throw UsageError(fmt::format("emit: --from-search {} but only {} configurations fit", a->from_search,
                                     r.ranked.size()));
      cfg = r.ranked[size_t(a->from_search - 1)].config;
      pred = r.ranked[size_t(a->from_search - 1)].prediction;
      if (a->steps > 0) cfg.training.steps = a->steps;
    } else if (a->from_search < 0) {
      throw UsageError("emit: --from-search RANK must be >= 1");
    } else {
      if (!a->space.global_batch_tokens.empty() || a->space.allow_fp8 || a->space.allow_compile)
        throw UsageError("emit: --global-batch-tokens, --allow-fp8 and --allow-compile only apply with --from-search");
      cfg = from_plan_flags(*a, hw);
      if (a->steps > 0) cfg.training.steps = a->steps;
      validate_or_throw(cfg);
      planner::require_inter_node_network(cfg, hw);
      pred = planner::plan(cfg, hw);
    }
    if (!pred.fits && !a->force) {
      fmt::print(stderr, "emit: the plan does not fit ({} overflows {:.1f} GiB); nothing written (--force writes anyway)\n",
                 pred.overflow_component, pred.mem_capacity_bytes / double(1ull << 30));
      throw ExitCode{kExitNoFit};
    }
    // A plan given by flags may fit yet sit above the retry-free margin search keeps.
    const double need = planner::memory_needed_bytes(pred), margin = a->space.max_mem_frac * pred.mem_capacity_bytes;
    if (a->from_search == 0 && pred.fits && need > margin)
      fmt::print(stderr, "emit: warning: {:.1f} GiB per GPU is above {:.0f}% of {:.1f} GiB (--max-mem-frac); expect "
                         "allocator retries\n",
                 need / double(1ull << 30), 100 * a->space.max_mem_frac, pred.mem_capacity_bytes / double(1ull << 30));
    if (cfg.activation_checkpointing.mode == AcMode::selective_op)
      fmt::print(stderr, "emit: warning: shardcast-train does not run selective_op; run.toml records the plan, "
                         "torchtitan.toml runs it\n");
    // run.toml's [prediction] is what shardcast-train checks its run against: predict with what
    // it does outside TrainConfig (eager attention, ...; planner/run_validation.h). Time and fit
    // are unchanged by these options; the memory terms are the trainer's.
    pred = planner::plan(cfg, hw, planner::trainer_plan_options());
    planner::EmitOptions eo;
    eo.torchtitan_version = *planner::parse_torchtitan_version(a->torchtitan_version);
    eo.hardware = &hw;
    std::vector<std::string> refused;
    eo.refused = &refused;
    const auto paths = planner::emit_files(cfg, pred, a->out, eo);
    for (const auto& r : refused) fmt::print(stderr, "emit: not written for {} (the plan cannot be expressed there)\n", r);
    fmt::print("emit: {} ({}), predicted {:.0f} tokens/s/GPU, MFU {:.1f}%\n", planner::describe_config(cfg),
               cfg.model_label(), pred.tokens_per_s_per_gpu,
               100 * pred.mfu);
    for (const auto& p : paths) fmt::print("  wrote {}\n", p);
  });
}

}  // namespace shardcast::cli
