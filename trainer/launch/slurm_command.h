// `shardcast-train slurm RUN.toml [--out launch.sbatch] [--time HH:MM:SS]`: writes the Slurm
// batch script that runs RUN.toml with one task per GPU (shared/slurm_script.h, the same
// writer `shardcast emit` uses for its launch.sbatch).
//
// What it is: option parsing, the time limit (from --time, else RUN.toml's [prediction]
// step_time_s; neither is a usage error naming both), and an atomic write of an executable
// file. What it is not: a submitter (run `sbatch` yourself) or a planner. No LibTorch.
// Call from main(); single-threaded.
#pragma once

#include <functional>
#include <optional>

namespace CLI {
class App;
}

namespace shardcast::trainer {

// Adds the subcommand to `app`; the returned function, called after app.parse(), runs it if it
// was selected and returns its exit code (std::nullopt otherwise).
std::function<std::optional<int>()> register_slurm_command(CLI::App& app);

}  // namespace shardcast::trainer
