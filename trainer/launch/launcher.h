// Local multi-process launcher: `shardcast-train launch --nproc-per-node N run.toml`.
//
// What it is: starts N copies of `shardcast-train run ...` with the torchrun environment
// (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and, when unset,
// OMP_NUM_THREADS = cores / N; SHARDCAST_LAUNCHER_PID = its own pid, so that each rank dies
// with it: launch/parent_death.h), prefixes every output line with `[rank r]`, and stops all
// ranks (SIGTERM, then SIGKILL after a grace period) as soon as one fails or on Ctrl-C.
// What it is not: multi-node (use torchrun --no-python or Slurm srun, which set the same
// variables) and no LibTorch. Threading: single-threaded, uses fork/exec/poll; call once.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace shardcast::trainer {

// Most local ranks one launcher starts (the reason is at --nproc-per-node in main.cpp).
inline constexpr int kMaxProcPerNode = 1024;

struct LaunchOptions {
  int nproc_per_node = 1;
  std::string master_addr = "127.0.0.1";
  std::optional<int> master_port;       // absent = pick a free port
  std::string exe;                      // the binary to run ("" = this executable)
  std::vector<std::string> rank_args;   // argv[1..] of each rank, e.g. {"run", "cfg.toml"}
};

// Returns 0 when every rank exits 0, else the first failing rank's exit code (128+signal
// for a signal).
int launch_local(const LaunchOptions& opts);

// A TCP port that was free a moment ago on 127.0.0.1.
int pick_free_port();

}  // namespace shardcast::trainer
