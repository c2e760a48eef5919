// Flags for failures and checkpoints (planner/decide/goodput.h), shared by `shardcast scale` (and
// ready for `plan` and `emit`): --reliability picks a profile in configs/reliability/ (default
// "default"), and one flag per key of that file overrides it (--failures-per-gpu-hour,
// --restart-s, --storage-write-gbytes-per-s, --node-write-gbytes-per-s; the same names as the
// TOML keys). What it is not: the goodput model. Header-only; CLI setup is single-threaded.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "planner/decide/goodput.h"

namespace shardcast::cli {

struct ReliabilityFlags {
  std::string profile = "default";
  double failures_per_gpu_hour = -1, restart_s = -1;  // -1 = the profile's
  double storage_write_gbytes_per_s = -1, node_write_gbytes_per_s = -1;
};

inline void add_reliability_flags(CLI::App* cmd, ReliabilityFlags& f) {
  cmd->add_option("--reliability", f.profile,
                  "reliability profile (configs/reliability/NAME.toml or a .toml): failure rate, restart time, "
                  "storage bandwidth")
      ->capture_default_str();
  cmd->add_option("--failures-per-gpu-hour", f.failures_per_gpu_hour,
                  "unexpected job interruptions per GPU per hour (default: the profile's; Llama 3: 1.97e-5)");
  cmd->add_option("--restart-s", f.restart_s,
                  "seconds from an interruption to training again (default: the profile's)");
  cmd->add_option("--storage-write-gbytes-per-s", f.storage_write_gbytes_per_s,
                  "aggregate storage write bandwidth of the whole cluster in GB/s, not per rank (default: the "
                  "profile's; Llama 3: 2000)");
  cmd->add_option("--node-write-gbytes-per-s", f.node_write_gbytes_per_s,
                  "storage write bandwidth of one node in GB/s (default: the profile's)");
}

// The profile with the flags' overrides applied.
inline planner::ReliabilitySpec to_reliability(const ReliabilityFlags& f) {
  planner::ReliabilitySpec r = planner::load_reliability(f.profile);
  if (f.failures_per_gpu_hour >= 0) r.failures_per_gpu_hour = f.failures_per_gpu_hour;
  if (f.restart_s >= 0) r.restart_s = f.restart_s;
  if (f.storage_write_gbytes_per_s >= 0) r.storage_write_gbytes_per_s = f.storage_write_gbytes_per_s;
  if (f.node_write_gbytes_per_s >= 0) r.node_write_gbytes_per_s = f.node_write_gbytes_per_s;
  planner::check_reliability(r, "flags");
  return r;
}

}  // namespace shardcast::cli
