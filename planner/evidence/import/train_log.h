// Training logs of other trainers, parsed into the steps they logged.
//
// What it is: parse_torchtitan_log() reads the metric lines torchtitan prints
// (torchtitan/components/metrics.py, earlier train.py) in every generation since 2024;
// parse_fms_fsdp_log() reads the per-report block fms-fsdp prints
// (fms_fsdp/utils/train_utils.py train()); parse_deepspeed_log() reads DeepSpeed's throughput and
// memory lines and the HF Trainer's logged dicts. Each keeps every logged quantity as logged, in the
// log's units converted to SI (bytes, seconds), with the line it came from.
// What it is not: the run's configuration (a log does not carry it) or the run directory
// written from it (planner/evidence/import/run_import.h). Pure functions, thread-safe.
//
// Errors: a line that is recognisably a metric line but cannot be read throws InputError
// "FILE:LINE: what is wrong (the text)"; lines of other kinds are skipped. No step at all is
// not an error here (the caller decides; run_import says so).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace shardcast::planner {

struct LoggedStep {
  int step = 0;                          // optimizer step (torchtitan) / batch index (fms-fsdp)
  int line = 0;                          // 1-based line of the step's first metric line
  int ranks = 1;                         // metric lines merged into this step (one per rank logged)
  double loss = 0;
  std::optional<double> grad_norm;       // torchtitan since a85e2a536 (2025-06); fms-fsdp always
  std::optional<double> lr;              // fms-fsdp only (the first group's where it logged a list)
  double tps = 0;                        // tokens/s per GPU as logged (mean over ranks)
  std::optional<double> tflops;          // torchtitan since 4e3266374 (2025-02), its FLOP count
  std::optional<double> mfu_pct;         // torchtitan's MFU in %, its convention; none if "N/A"
  std::optional<double> mem_reserved_bytes;   // max_memory_reserved, max over ranks  // bytes
  // torchtitan 7cd272573 .. 9f5a56d67^ (2024-03) logs the reserved peak only in % of the
  // device's memory ("peak_memory: 77.58%"); run_import converts it with the GPU's.  // %
  std::optional<double> mem_reserved_pct;
  std::optional<double> mem_allocated_bytes;  // max_memory_allocated (fms-fsdp)      // bytes
  std::optional<double> step_time_s;     // fms-fsdp "current step time"                // s
  // Samples (sequences) per second of the whole job, as DeepSpeed's ThroughputTimer and the HF
  // Trainer log them; run_import turns them into tokens/s per GPU with the run's seq_len and
  // world size.  // sequences/s
  std::optional<double> samples_per_s;
};

struct TrainLog {
  std::string file;
  std::string format;                    // "torchtitan" | "fms-fsdp" | "deepspeed"
  std::vector<LoggedStep> steps;         // ascending step
  std::vector<std::string> notes;        // what was skipped or merged, one line each
  // DeepSpeed: the ZeRO stage the engine states ("Creating torch.bfloat16 ZeRO stage 1 optimizer")
  // and its line; unset when the log does not say.
  std::optional<int> zero_stage;
  int zero_stage_line = 0;
};

TrainLog parse_torchtitan_log(const std::string& text, const std::string& file);
TrainLog parse_fms_fsdp_log(const std::string& text, const std::string& file);
// DeepSpeed under the HF Trainer (planner/evidence/import/deepspeed_log.cpp states the lines).
TrainLog parse_deepspeed_log(const std::string& text, const std::string& file);

// Helpers shared by the parsers (exposed for tests).
// The line without ANSI escape sequences (ESC '[' ... final byte) and without a carriage return.
std::string strip_ansi(const std::string& line);
// A number as Python prints it: optional sign, digits with ',' thousands separators, fraction,
// exponent, "nan"/"inf". std::nullopt if `s` is not entirely such a number.
std::optional<double> parse_logged_number(const std::string& s);

}  // namespace shardcast::planner
