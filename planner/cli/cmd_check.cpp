// `shardcast check FILE.toml [--data FILE]`: what shardcast-train would refuse (the trainer's own
// list, shared/trainer_checks.h) and the runtime's refusals; prints a summary, or every error and
// exits 2 (main maps ConfigError/ConfigErrors to kExitUsage).
#include <fmt/core.h>

#include "planner/cli/commands.h"
#include "planner/cli/format.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/trainer_checks.h"

namespace shardcast::cli {

void register_check(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  auto data = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("check", "Validate a run config (run.toml) as shardcast-train would: a summary or every error");
  cmd->add_option("config", *file, "TrainConfig TOML file")->required();
  cmd->add_option("--data", *data, "token file, as shardcast-train's --data (replaces data.path)");
  cmd->callback([file, data] {
    TrainConfig c = read_train_config(*file);
    if (!data->empty()) c.data.path = *data;
    // The hardware preset must exist too; its errors name the preset file.
    const HardwareSpec hw = load_hardware(c.cluster.hardware);
    // A config for shardcast-train: the trainer's own refusals, with the build a run on this
    // hardware uses (NCCL on GPUs). A config for another runtime: what that runtime cannot run.
    std::string errs;
    if (c.runtime == "shardcast-train")
      for (const TrainerRefusal& r : trainer_refusals(c, planner::is_gpu(hw)))
        errs += (errs.empty() ? "" : "\n") + (r.key.empty() ? r.detail : ConfigError(*file, r.key, r.detail).what());
    const std::string why = planner::runtime_refusal(planner::runtime_preset(c.runtime), c, hw);
    if (!why.empty()) errs += (errs.empty() ? "" : "\n") + std::string(ConfigError(*file, "runtime", why).what());
    if (!errs.empty()) throw ConfigErrors(errs);
    const ModelSpec& m = c.model;
    const int world = c.world_size();
    fmt::print("{}: OK\n", *file);
    fmt::print("  model        {} ({} parameters, {} layers, d_model {})\n",
               c.model_label(), human_count(double(m.total_params())),
               m.n_layers, m.d_model);
    fmt::print("  cluster      {} x {} {} = {} ranks\n", c.cluster.nodes, c.cluster.gpus_per_node, hw.name, world);
    fmt::print("  strategy     {}{}\n", to_string(c.parallelism.sharding_strategy), hsdp_groups(c));
    const Mesh mesh = resolve_mesh(c.parallelism, world, c.cluster.gpus_per_node);
    if (!mesh.one_d()) fmt::print("  mesh         {}\n", mesh_label(mesh));
    fmt::print("  runtime      {}\n", c.runtime);
    fmt::print("  batch        micro_batch {} x seq_len {} x grad_accum {} x {} data-parallel rank{} = {} tokens/step\n",
               c.training.micro_batch, c.training.seq_len, c.training.grad_accum, c.dp_size(),
               c.dp_size() == 1 ? "" : "s", c.tokens_per_step());
    if (c.training.grad_accum > 1) {
      const bool sync = planner::sync_every_micro_step(
          planner::runtime_preset(c.runtime).terms_for(planner::is_gpu(hw)), c);
      fmt::print("  grad sync    {} (parallelism.sync_every_micro_step = {}{})\n",
                 sync ? "every micro-step reduce-scatters into the gradient shard"
                      : "non-final micro-steps keep an unsharded gradient sum",
                 sync ? "true" : "false", c.parallelism.sync_every_micro_step ? "" : ", the runtime's");
    }
    // The ratio is selective's: under another mode it is written (run.toml keeps every key) but unused.
    const auto& ac = c.activation_checkpointing;
    const std::string ratio =
        ac.mode == AcMode::selective ? fmt::format(" (ratio {})", ac.ratio)
        : ac.ratio != 1.0            ? fmt::format(" (ratio {} unused: it applies to selective only)", ac.ratio)
                                     : std::string();
    fmt::print("  act. ckpt    {}{}, precision {}/{}{}{}{}{}\n", to_string(ac.mode), ratio,
               c.precision.param_dtype, c.precision.reduce_dtype,
               c.precision.master_dtype == "fp32" ? "" : ", master " + c.precision.master_dtype,
               c.optimizer.state_dtype == "master" ? "" : ", moments " + c.optimizer.state_dtype,
               c.precision.compile ? ", compile" : "",
               c.precision.fp8_on() ? std::string(", fp8 ") + to_string(c.precision.fp8) : std::string());
    fmt::print("  steps        {} (seed {}), lr {} ({} warmup, {} decay)\n", c.training.steps, c.training.seed,
               c.optimizer.lr, c.lr_schedule.warmup_steps, c.lr_schedule.decay);
    if (c.prediction.present)
      fmt::print("  prediction   {:.4g} s/step, {:.0f} tokens/s/GPU, MFU {:.1f}%\n", c.prediction.step_time_s,
                 c.prediction.tokens_per_s_per_gpu, 100 * c.prediction.mfu);
  });
}

}  // namespace shardcast::cli
