// `shardcast-train slurm`. See slurm_command.h.
#include "trainer/launch/slurm_command.h"

#include <filesystem>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "shared/config_io.h"
#include "shared/emitted_text.h"
#include "shared/errors.h"
#include "shared/slurm_script.h"

namespace shardcast::trainer {

namespace fs = std::filesystem;

namespace {

struct SlurmArgs {
  std::string config;
  std::string out = "launch.sbatch";
  std::string time;   // "HH:MM:SS"; "" = from [prediction]
  bool overwrite = false;  // replace an existing --out (never the config itself)
};

// The script's path as a shell word for the printed `sbatch` line: quoted, and a leading '-'
// behind "./" so sbatch does not read it as an option.
std::string submit_word(const std::string& path) {
  return shell_quote(!path.empty() && path[0] == '-' ? "./" + path : path);
}

int write_slurm_script(const SlurmArgs& a) {
  const TrainConfig cfg = read_train_config(a.config);
  SlurmScriptOptions o;
  o.generator = "`shardcast-train slurm " + a.config + "`";
  o.run_toml = a.config;
  o.run_toml_text = read_config_text(a.config);  // the bytes just parsed: the script checks them
  o.script_name = a.out;
  o.submit_dir = fs::current_path().string();
  if (!a.time.empty()) {
    if (!std::regex_match(a.time, std::regex("[0-9]+:[0-5][0-9]:[0-5][0-9]")))
      throw UsageError(fmt::format("--time '{}': expected HH:MM:SS (e.g. 02:30:00)", a.time));
    o.time_limit = a.time;
    o.header = "# Time limit given with --time.\n";
  } else if (cfg.prediction.present && cfg.prediction.step_time_s > 0) {
    o.predicted_step_s = cfg.prediction.step_time_s;
    o.header = fmt::format("# Predicted step {:.3g} s on {} ([prediction] of {}).\n", cfg.prediction.step_time_s,
                           cfg.prediction.hardware.empty() ? cfg.cluster.hardware : cfg.prediction.hardware, a.config);
  } else {
    throw UsageError(fmt::format(
        "{}: no [prediction] table to derive the Slurm time limit from; pass --time HH:MM:SS, or write the "
        "config with `shardcast emit`, which adds [prediction]",
        a.config));
  }
  const std::string script = render_slurm_script(cfg, o);  // UsageError for a bad limit or path
  // Never the config itself; an existing file only with --overwrite (files created exclusively).
  std::error_code ec;
  if (fs::equivalent(a.out, a.config, ec))
    throw UsageError(fmt::format("--out {} is the config itself: give another path for the script", a.out));
  if (fs::exists(fs::symlink_status(a.out, ec)) && !a.overwrite)
    throw UsageError(fmt::format("--out {} exists: give a new path, or --overwrite to replace it", a.out));
  StagedFiles staged;  // written beside it, mode 0755 set on the file itself, then renamed
  staged.add(a.out, script, /*executable=*/true);
  staged.commit();
  fmt::print("wrote {}: {} ranks ({} node(s) x {}); submit from {} with: sbatch {}\n", a.out, cfg.world_size(),
             cfg.cluster.nodes, cfg.cluster.gpus_per_node, shell_quote(o.submit_dir), submit_word(a.out));
  return kExitOk;
}

}  // namespace

std::function<std::optional<int>()> register_slurm_command(CLI::App& app) {
  auto args = std::make_shared<SlurmArgs>();
  auto* cmd = app.add_subcommand("slurm", "write a Slurm batch script that runs a config with one task per GPU");
  cmd->add_option("config", args->config, "run.toml (TrainConfig); its path is used as given inside the script")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "script to write")->capture_default_str();
  cmd->add_option("--time", args->time, "Slurm time limit HH:MM:SS (default: from the config's [prediction])");
  cmd->add_flag("--overwrite", args->overwrite, "replace an existing --out (never the config itself)");
  return [cmd, args]() -> std::optional<int> {
    if (!*cmd) return std::nullopt;
    return write_slurm_script(*args);
  };
}

}  // namespace shardcast::trainer
