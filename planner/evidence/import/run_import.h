// A run of another trainer (torchtitan, fms-fsdp, DeepSpeed under the HF Trainer) as a shardcast run directory.
//
// What it is: import_run() turns a parsed training log (train_log.h) and the configuration it
// ran (given by flags or a torchtitan TOML; the log does not carry it) into the RunReport that
// `shardcast validate RUN_DIR` and `shardcast calibrate --runs RUN_DIR...` read, with the run's
// TrainConfig (runtime = the trainer), and an import.json saying what was logged, how each
// number was derived and which MFU convention each uses. write_run_dir() writes run.toml,
// run_report.json and import.json atomically.
// What it is not: the log parsers or the predictions (validate re-predicts from run.toml).
// Pure functions except write_run_dir (files); thread-safe.
//
// Derived numbers (per logged step; units in comments of RunReport):
//   tokens/s/GPU  as logged ("tps": torchtitan; "current token per gpu per sec": fms-fsdp), or
//                 micro_batch·seq_len / step time when fms-fsdp logged only a step time, or
//                 samples/s · seq_len / world size (DeepSpeed's CurrSamplesPerSec, the HF
//                 Trainer's train_samples_per_second: sequences of all ranks per second)
//   step time     fms-fsdp: as logged; torchtitan and DeepSpeed log none: micro_batch·seq_len·grad_accum / tps
//                 (torchtitan's tps counts this rank's tokens per second; data parallel only)
//   MFU           planner convention: tps·flops_per_token(s) / peak (ModelSpec, 6·N + 12·L·d·s)
//                 and torchtitan's convention recomputed: tps·flops_per_token_torchtitan(s) / peak,
//                 peak = the hardware profile's dense peak for precision.param_dtype; the MFU
//                 torchtitan logged (its own peak table) is kept as logged, in import.json;
//                 HFU with the planner's hardware FLOPs per token for this config and runtime
//   memory        mem_reserved_peak_bytes = the logged max reserved (max over ranks);
//                 mem_peak_bytes = max allocated where the log has it (fms-fsdp, DeepSpeed), else 0
//                 (not measured: torchtitan prints only the reserved peak)
// Summary over the steps after warm-up (step > warmup): median tokens/s/GPU and step time,
// maximum memory.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/evidence/import/train_log.h"
#include "shared/hardware_spec.h"
#include "shared/run_report.h"
#include "shared/train_config.h"

namespace shardcast::planner {

struct ImportedRun {
  TrainConfig cfg;               // the run's configuration, runtime set
  RunReport report;
  nlohmann::json info;           // import.json
  std::vector<std::string> notes;  // for the user: what was skipped, derived, suspicious
};

// UsageError when warmup < 0 or no logged step is after the warm-up (naming --warmup and the
// last logged step); InputError when the log has no step at all.
ImportedRun import_run(const TrainLog& log, const TrainConfig& cfg, const HardwareSpec& hw, int warmup);

// run.toml, run_report.json, import.json into dir (created), each written atomically.
// UsageError (exit 2, as emit's) when dir cannot be created or one of its files is a directory.
std::vector<std::string> write_run_dir(const ImportedRun& run, const std::string& dir);

}  // namespace shardcast::planner
