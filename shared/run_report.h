// RunReport: what the trainer measured. JSON, "schema": 1; per-step metrics as JSON Lines.
//
// What it is: per-step metrics with torchtitan-like names and a summary over steady steps,
// plus validation.json (predicted against measured). What it is not: how they are measured
// (trainer/metrics). Plain value types, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardcast {

struct StepMetrics {
  int step = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double tokens_per_s_per_gpu = 0;  // tokens/s per GPU (rank)
  double mfu = 0;
  double hfu = 0;
  double step_time_s = 0;
  double mem_peak_bytes = 0;    // bytes, max over ranks
  // CUDA caching allocator only (absent on CPU, where nothing is cached): the most bytes
  // reserved from the device during the step, max over ranks (torchtitan's max_reserved),
  // and cudaMalloc retries after freeing the cache since the run started, max over ranks.
  std::optional<double> mem_reserved_peak_bytes;   // bytes
  std::optional<double> alloc_retries;             // count
};

struct RunReport {
  int schema = 1;
  std::string config_file;
  std::string hardware;
  int world_size = 0;
  std::string sharding_strategy;
  std::vector<StepMetrics> steps;
  // Summary over steady steps (the first warmup steps excluded).
  double median_step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  double mem_peak_bytes = 0;    // bytes
  std::optional<double> mem_reserved_peak_bytes;   // bytes, max over steps (GPU runs only)
  std::optional<double> alloc_retries;             // count at the end of the run (GPU runs only)
  std::vector<std::pair<std::string, double>> mem_components;  // bytes, where measurable
  // The code path the run took (trainer/train/run_path.h): world_size, comm_backend, device,
  // libtorch, param_dtype, optimizer_kernel, attention_backend; JSON object "path", absent in
  // reports written before it (empty).
  std::vector<std::pair<std::string, std::string>> path;
};

void to_json(nlohmann::json& j, const StepMetrics& s);
void from_json(const nlohmann::json& j, StepMetrics& s);
void to_json(nlohmann::json& j, const RunReport& r);
void from_json(const nlohmann::json& j, RunReport& r);

// One quantity predicted against measured.
struct ValidationEntry {
  std::string quantity;   // "step_time_s", "tokens_per_s_per_gpu", "mfu", "mem_peak_bytes", ...
  double predicted = 0;
  double measured = 0;
  double error_pct() const;  // 100·(predicted − measured)/measured
};

struct ValidationReport {
  int schema = 1;
  std::string run_dir;
  std::string hardware;
  std::string runtime;  // runtime profile the compared prediction was made for ("" = not said)
  std::vector<ValidationEntry> entries;
};

void to_json(nlohmann::json& j, const ValidationReport& v);
void from_json(const nlohmann::json& j, ValidationReport& v);

}  // namespace shardcast
