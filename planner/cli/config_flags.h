// The flags that describe one configuration, shared by `shardcast plan` and `shardcast emit`.
//
// What it is: the values of --model, --hardware, --gpus, --strategy, --micro-batch, ... (each named
// after its run.toml key, docs/configuration.md) and the one function that turns them, on top
// of an optional run.toml or shardcast-gui session (.json), into a validated TrainConfig.
// add_choice_flags() registers the flags that choose the configuration on a given cluster
// (strategy, batch, checkpointing, precision) once for both commands; each command registers
// the cluster flags (--model, --hardware, --gpus, ...) itself, because emit shares them with search.
// What it is not: planning. Plain data and reentrant functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "shared/hardware_spec.h"
#include "shared/runtime_default.h"  // env_runtime, runtime_origin, default_runtime
#include "shared/train_config.h"

namespace CLI {
class App;
class Option;
}

namespace shardcast::cli {

struct ConfigFlags {
  std::string config;  // run.toml or session .json; "" = flags only
  std::string model, gpu, strategy, ac, param_dtype, reduce_dtype, master_dtype, runtime;
  std::string state_dtype;  // optimizer.state_dtype; "" = not given
  // Absent = not given on the command line: the config file's value (or, without one, the
  // documented default) stands. Ranges are checked by CLI11 (planner/cli/validators.cpp).
  std::optional<int> gpus, gpus_per_node, hsdp_shard_size, micro_batch, seq_len, grad_accum;
  std::optional<double> inter_node_gbps, power_limit_w, ac_ratio;
  std::optional<double> mean_doc_len;  // data.mean_doc_len (tokens)
  bool compile = false;
  std::string fp8;  // --fp8 [RECIPE]: "" = not given; bare --fp8 = "tensorwise"
  std::optional<bool> sync_every_micro_step;  // parallelism.sync_every_micro_step
  // The device mesh (shared/train_config.h): parallelism.tp, cp, pp, dp_replicate, dp_shard, ...
  std::optional<int> tp, cp, pp, dp_replicate, dp_shard, pp_microbatch, pp_virtual_stages;
  std::optional<bool> tp_async;
  std::string pp_schedule, cp_rotate;  // "" = not given
  std::string reference_run;  // --reference-run DIR: "" = none (plan)
};

// The TrainConfig the flags describe, on top of the config file when one is given; `hw` gets
// the hardware it runs on (a session's custom profile, or the preset). Throws UsageError
// (messages start with `cmd`) for missing or inconsistent flags, ConfigError(s) for bad values.
// `from_runtime`, when given, receives "key value" for each precision key neither the flags nor
// the file gave whose runtime value is not the trainer's fp32 (planner/model/runtime.h
// take_runtime_precision), for the header to say where it came from.
// `runtime_from`, when given, receives runtime_origin() of the runtime chosen.
TrainConfig config_from_flags(const std::string& cmd, const ConfigFlags& flags, HardwareSpec& hw,
                              std::vector<std::string>* from_runtime = nullptr, std::string* runtime_from = nullptr);

// --strategy --hsdp-shard-size --tp --cp --pp --dp-replicate --dp-shard --tp-async --pp-schedule
// --pp-microbatch --pp-virtual-stages --cp-rotate --micro-batch --grad-accum --sync-every-micro-step --ac
// --ac-ratio --compile --fp8 --param-dtype --reduce-dtype --master-dtype --state-dtype, bound to f's
// fields (f must outlive the parse).
void add_choice_flags(CLI::App* cmd, ConfigFlags& f);
// "data.mean_doc_len 512 not used: runtime R's attention is causal over the whole packed
// sequence": what plan, search and scale say of a document length a runtime does not read.
std::string mean_doc_len_unused(double mean_doc_len, const std::string& runtime);
// --state-dtype (optimizer.state_dtype), with its one description: plan, emit, import (through
// the choice flags), search and scale (through the space flags).
void add_state_dtype_flag(CLI::App* cmd, std::string& state_dtype);
// --runtime (TrainConfig::runtime), registered once per command: plan, search, scale, emit.
void add_runtime_flag(CLI::App* cmd, std::string& runtime);
// --power-limit-w (cluster.power_limit_w), with the one description of what a limit does
// (planner/model/power_limit.h kPowerLimitEffect): plan, search, scale, emit, import.
void add_power_limit_flag(CLI::App* cmd, std::optional<double>& power_limit_w);
// --reference-run DIR (planner/evidence/reference_run.h): plan, search, scale, emit (through the space flags).
void add_reference_run_flag(CLI::App* cmd, std::string& dir);
// --hardware (cluster.hardware, as shardcast-train names it too): a hardware preset's name or a
// .toml. Every command that takes a preset: plan, search, scale, emit, import, calibrate,
// validate.
CLI::Option* add_hardware_flag(CLI::App* cmd, std::string& hardware, const std::string& help);
// The command line with the flag names of before 2026-12-07 read as today's, for scripts written
// then: `--gpu X` and `--gpu=X` are `--hardware X`, with a note on stderr (one per use), up to a
// `--`. UsageError when both names are given. args[0] is the program.
std::vector<std::string> with_current_flag_names(std::vector<std::string> args);

}  // namespace shardcast::cli
