// The Slurm batch script that runs shardcast-train: one task per GPU, torchrun's environment.
//
// What it is: render_slurm_script() turns a TrainConfig into an sbatch script — #SBATCH lines
// for nodes, tasks and GPUs per node and a --time limit, rendezvous on the allocation's first
// node (MASTER_ADDR / MASTER_PORT), WORLD_SIZE and LOCAL_WORLD_SIZE exported, a check that
// Slurm gave the planned number of ranks and, where the config's bytes are given, that RUN_TOML
// in the submit directory is that file (POSIX cksum), then `srun` starting `shardcast-train run RUN_TOML`
// with RANK = SLURM_PROCID and LOCAL_RANK = SLURM_LOCALID in each task. One writer for both
// `shardcast emit` (launch.sbatch beside run.toml, with the plan as header) and
// `shardcast-train slurm RUN.toml` (the time limit from run.toml's [prediction] or given).
// What it is not: a submitter (nothing calls sbatch) or a planner (the predicted step time
// comes in). Pure functions, reentrant.
#pragma once

#include <string>

#include "shared/train_config.h"

namespace shardcast {

struct SlurmScriptOptions {
  std::string generator;        // who wrote it, e.g. "`shardcast emit`"
  std::string header;           // comment lines ("# ...\n") after the first ones; may be empty
  std::string run_toml = "run.toml";  // the config each task runs, relative to the submit dir
  std::string script_name = "launch.sbatch";   // as the user submits it
  std::string submit_dir = "this directory";   // where to run sbatch from (run_toml is relative to it)
  double predicted_step_s = 0;  // > 0: the --time limit is derived from it  // s
  std::string time_limit;       // "HH:MM:SS", used as given when non-empty
  // The bytes of run_toml as written (emit) or read (shardcast-train slurm): the script refuses
  // to start when the submit directory's run_toml has another cksum (a run.toml edited after,
  // or the script submitted from a folder holding another one). Empty: no such check.
  std::string run_toml_text;
};

// POSIX cksum of `bytes` as `cksum < FILE` prints it: "CRC SIZE" (the CRC-32 of polynomial
// 0x04C11DB7 over the bytes and then their count, complemented; POSIX.1-2017 cksum).
std::string posix_cksum(const std::string& bytes);

// Slurm --time for `steps` steps of `step_s` seconds: +50% and 15 minutes of start-up,
// rounded up to whole minutes, as "HH:MM:SS" (hours may exceed 24).
std::string slurm_time_limit(int steps, double step_s);

// Slurm --job-name for a model: "shardcast-" and the label with each character outside
// A-Z a-z 0-9 . _ + - replaced by '_' (Slurm parses #SBATCH values with its own quoting rules,
// and the name becomes part of the output file name, %x).
std::string slurm_job_name(const std::string& model_label);

// Throws ConfigError when a string of `c` that the script carries is not one line of UTF-8
// (shared/emitted_text.h require_emittable_strings), UsageError when an option's text is not
// (the header must be "# ..." lines), when neither a time limit nor a predicted step time is
// given, or
// when run_toml has characters that would need shell quoting (letters, digits, . _ / - + only).
std::string render_slurm_script(const TrainConfig& c, const SlurmScriptOptions& o);

}  // namespace shardcast
