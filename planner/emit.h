// emit: turn one planned configuration into files a cluster can run.
//
// What it is: the single writer behind `shardcast emit` and the GUI's Export. emit_files()
// writes into a directory:
//   run.toml               TrainConfig for shardcast-train, with the [prediction] table
//   launch.sbatch          Slurm, one task per GPU via srun (RANK, LOCAL_RANK, WORLD_SIZE,
//                          LOCAL_WORLD_SIZE exported; MASTER_ADDR = the first node)
//   launch_torchrun.sh     torchrun --nproc-per-node … --no-python shardcast-train run run.toml
//   torchtitan.toml + torchtitan_overrides.txt (torchtitan v0.2.x) or torchtitan_recipe.py
//   (current torchtitan), fsdp_config.yaml (accelerate), fms_fsdp_args.txt
//                          the same plan for trainers users already have (emit_ecosystem.h),
//                          each only when that trainer can run the plan
// Every file is rendered by a pure function below, so tests can parse what is written.
// What it is not: the planner (the Prediction comes in) or the trainer's config validation
// (shared/train_config.h validate(), which emit_files runs before writing anything).
// Threading: the render functions are pure and thread-safe; emit_files writes files (each
// atomically, shared/config_io.h write_file_atomic) and must not race another emit to `dir`.
#pragma once

#include <string>
#include <vector>

#include "planner/emit_ecosystem.h"
#include "shared/prediction.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// The [prediction] table of run.toml for a Prediction made with hardware preset `hardware`.
PredictionTable prediction_table(const Prediction& pred, const std::string& hardware);

// run.toml text: cfg with its [prediction] table filled from pred.
std::string render_run_toml(const TrainConfig& cfg, const Prediction& pred);
// Slurm batch script (one task per GPU). pred only feeds the comments and --time.
std::string render_sbatch(const TrainConfig& cfg, const Prediction& pred);
// torchrun launcher for one node of the job (NODE_RANK / MASTER_ADDR from the environment).
std::string render_torchrun(const TrainConfig& cfg);

struct EmitOptions {
  TorchtitanVersion torchtitan_version = TorchtitanVersion::v0_2;
  const HardwareSpec* hardware = nullptr;  // the plan's hardware; nullptr = preset cfg.cluster.hardware
  std::vector<std::string>* refused = nullptr;  // receives "trainer: why" for each file not written
};

// Validates cfg (ConfigErrors listing every problem), creates dir, writes every file above,
// reads run.toml back (ConfigError if it does not parse to a valid config) and returns the
// paths written, run.toml first.
std::vector<std::string> emit_files(const TrainConfig& cfg, const Prediction& pred,
                                    const std::string& dir, const EmitOptions& opts = {});

}  // namespace shardcast::planner
