// emit: turn one planned configuration into files a cluster can run.
//
// What it is: the single writer behind `shardcast emit` and the GUI's Export. emit_files()
// writes into a directory:
//   run.toml               TrainConfig for shardcast-train, with the [prediction] table
//   launch.sbatch          Slurm, one task per GPU via srun (RANK, LOCAL_RANK, WORLD_SIZE,
//                          LOCAL_WORLD_SIZE exported; MASTER_ADDR = the first node)
//   launch_torchrun.sh     torchrun --nproc-per-node … --no-python shardcast-train run run.toml
//   torchtitan.toml, torchtitan_overrides.txt, fsdp_config.yaml (accelerate),
//   fms_fsdp_args.txt      the same plan for trainers users already have (emit_ecosystem.h)
//   ds_config.json, launch_deepspeed.sh   DeepSpeed ZeRO under the HF Trainer, only when the
//                          plan is for runtime deepspeed (emit_deepspeed.h)
// Every file is rendered by a pure function below, so tests can parse what is written.
// What it is not: the planner (the Prediction comes in) or the trainer's config validation
// (shared/train_config.h validate(), which emit_files runs before writing anything).
// Threading: the render functions are pure and thread-safe; emit_files writes files (as one set,
// shared/config_io.h StagedFiles) and must not race another emit to `dir`.
#pragma once

#include <string>
#include <vector>

#include "planner/emit/emit_ecosystem.h"
#include "planner/evidence/reference_run.h"
#include "shared/hardware_spec.h"
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

// One runtime's files and what the planner predicts for it. emit predicts each file for the
// runtime that will execute it: run.toml and the launchers for shardcast-train, torchtitan.toml
// and its overrides for torchtitan, fsdp_config.yaml for accelerate, fms_fsdp_args.txt for
// fms-fsdp.
struct EmitTarget {
  std::string runtime;             // configs/runtimes/ preset
  std::vector<std::string> files;  // file names in the output directory
  TrainConfig ran;                 // what its files run: as_emitted(cfg) for this runtime
  Prediction prediction;           // `ran` predicted for this runtime (valid when refusal is "")
  std::string refusal;             // why the runtime cannot express cfg ("" = it can)
};

// The targets for cfg on hw: cfg.runtime's first (the runtime the plan was made for; its fit
// decides emit's exit code), then the others that have files. A runtime without files of its
// own (llm-foundry) is only predicted. A generation of a framework (RuntimeSpec::framework,
// e.g. torchtitan-2024-04) writes that framework's files, predicted for the generation, in
// place of the framework's newest profile.
// torchtitan's files follow its configuration generation `tv` (emit_ecosystem.h): v0.2 writes
// torchtitan.toml and torchtitan_overrides.txt, current writes torchtitan_recipe.py.
// `reference` (may be null): a measured run whose level the target of its runtime carries
// (reference_run.h); the other targets are the model's.
std::vector<EmitTarget> emit_targets(const TrainConfig& cfg, const HardwareSpec& hw,
                                     TorchtitanVersion tv = TorchtitanVersion::v0_2,
                                     const ReferenceRun* reference = nullptr);

struct EmitResult {
  std::vector<EmitTarget> targets;
  std::vector<std::string> written;  // paths, run.toml first when written
  std::vector<std::string> skipped;  // "file(s): reason" for targets not written
  std::vector<std::string> notes;    // "file: what it leaves to the tool's defaults" (emit prints them on stderr)
  std::vector<std::string> removed;  // paths of an earlier emit's files this plan does not write (overwrite)
};

// Validates cfg (ConfigErrors listing every problem; ConfigError for a string no emitted file
// can hold, shared/emitted_text.h require_emittable_strings), creates dir and writes each target's
// files when its runtime can express cfg and the plan fits (force: also when it does not fit;
// the header then says so). run.toml is read back before anything is written (ConfigError if
// it does not parse to a valid config). Does not check the first target's fit: the caller
// decides (`shardcast emit` exits 3 without --force).
// The files are written as one set (shared/config_io.h StagedFiles): a failure leaves `dir` as it
// was. An existing file of an emitted name in `dir` is refused (ConfigError naming `dir` and the
// files) unless `overwrite`, which replaces this plan's files and removes the other emitted names
// (an earlier plan's: EmitResult::removed); the input config (cfg.source_file) is never replaced.
EmitResult emit_files(const TrainConfig& cfg, const HardwareSpec& hw, const std::string& dir, bool force,
                      TorchtitanVersion tv = TorchtitanVersion::v0_2, const ReferenceRun* reference = nullptr,
                      bool overwrite = false);

}  // namespace shardcast::planner
