// The flags that describe one configuration, shared by `shardcast plan` and `shardcast emit`.
//
// What it is: the values of --model, --gpu, --gpus, --strategy, --micro-batch, ... (each named
// after its run.toml key, docs/configuration.md) and the one function that turns them, on top
// of an optional run.toml or shardcast-gui session (.json), into a validated TrainConfig.
// What it is not: flag registration (each command owns its CLI11 options) or planning.
// Plain data and a reentrant function.
#pragma once

#include <string>

#include "shared/hardware_spec.h"
#include "shared/train_config.h"

namespace shardcast::cli {

struct ConfigFlags {
  std::string config;  // run.toml or session .json; "" = flags only
  std::string model, gpu, strategy, ac, param_dtype, reduce_dtype;
  int gpus = 0, gpus_per_node = 0, hsdp_shard_size = -1, micro_batch = 0, seq_len = 0, grad_accum = 0;
  double inter_node_gbps = -1, ac_ratio = -1;  // -1 = not given
  bool compile = false, fp8 = false;
};

// The TrainConfig the flags describe, on top of the config file when one is given; `hw` gets
// the hardware it runs on (a session's custom profile, or the preset). Throws UsageError
// (messages start with `cmd`) for missing or inconsistent flags, ConfigError(s) for bad values.
TrainConfig config_from_flags(const std::string& cmd, const ConfigFlags& flags, HardwareSpec& hw);

}  // namespace shardcast::cli
