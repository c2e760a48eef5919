// One rank of a training run from a run.toml: the entry point of `shardcast-train run`.
//
// What it is: reads the torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; absent = a single process), rendezvous over a
// TCPStore, builds the process groups, trains, prints progress, writes metrics.jsonl and
// run_report.json (rank 0) in the run directory (metrics.dir).
// What it is not: the multi-process launcher (launch/launcher.h). No LibTorch in this header.
// Threading: call once per process from the main thread.
#pragma once

#include <optional>
#include <string>

namespace shardcast::trainer {

// `shardcast-train profile`: `warmup` steps, then `steps` steps timed op by op
// (profile/op_recorder.h); rank 0 writes op_profile.json into `out_dir` and prints the table.
// A profile run writes no checkpoints, metrics.jsonl, run_report.json or validation.json.
struct ProfileRequest {
  int warmup = 1;         // steps run before the profiled ones (allocator and caches warm up)
  int steps = 3;          // profiled steps (median over them)
  std::string out_dir;    // "" = metrics.dir
  std::string plan_file;  // "" = none; else `shardcast plan RUN.toml --json` output (time.ops_s)
};

struct RunOverrides {
  std::string data_path;     // replaces data.path
  std::string metrics_dir;   // replaces metrics.dir
  // replaces cluster.hardware: a preset name or a profile file (`shardcast calibrate
  // --hardware-out`); the peak MFU is measured against, and what run.toml records for
  // `shardcast validate RUN_DIR`. A value that does not load is refused (exit 2).
  std::string hardware;
  std::optional<int> steps;  // given: replaces training.steps
  std::string initial_load;  // replaces checkpoint.initial_load_path (a directory of HF safetensors)
  bool reference = false;    // plain single-process path (world must be 1)
  std::optional<ProfileRequest> profile;  // given: a profile run instead of training
  // "" = none; else the CUDA caching allocator's trace of the whole run (memory.h
  // write_allocator_trace), written here after the last step; ranks > 0 of a larger world
  // write PATH.rank<R>. GPU builds against torch 2.11 only.
  std::string allocator_trace;
};

// Returns a process exit code; user errors are thrown (ConfigError, InputError, ...).
int run_rank(const std::string& config_path, const RunOverrides& overrides);

}  // namespace shardcast::trainer
