// validation.json from [prediction] and the measured RunReport. See validation.h.
#include "trainer/validation/validation.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shared/config_io.h"

namespace shardcast::trainer {

namespace {


std::string human(const std::string& quantity, double v) {
  if (quantity.rfind("mem", 0) == 0) return fmt::format("{:.2f} MiB", v / 1048576.0);
  if (quantity == "step_time_s") return fmt::format("{:.2f} ms", v * 1e3);
  if (quantity == "mfu" || quantity == "hfu") return fmt::format("{:.3f}%", v * 100);
  return fmt::format("{:.1f}", v);
}

}  // namespace

ValidationReport make_validation(const PredictionTable& p, const RunReport& r, const std::string& run_dir) {
  ValidationReport v;
  v.run_dir = run_dir;
  v.hardware = p.hardware.empty() ? r.hardware : p.hardware;
  v.runtime = p.runtime;
  if (!p.present) return v;
  auto add = [&](const std::string& q, double pred, double meas) {
    if (pred > 0 && meas > 0) v.entries.push_back({q, pred, meas});
  };
  add("step_time_s", p.step_time_s, r.median_step_time_s);
  add("tokens_per_s_per_gpu", p.tokens_per_s_per_gpu, r.tokens_per_s_per_gpu);
  add("mfu", p.mfu, r.mfu);
  add("hfu", p.hfu, r.hfu);
  add("mem_peak_bytes", p.mem_peak_bytes, r.mem_peak_bytes);
  // Memory components measured under the planner's name (sharded_parameters, ...; bytes/rank).
  for (const auto& [name, bytes] : r.mem_components) {
    auto it = p.mem_components.find(name);
    if (it != p.mem_components.end()) add("mem." + name, it->second, bytes);
  }
  return v;
}

std::string format_validation(const ValidationReport& v) {
  std::string o = fmt::format("predicted vs measured ({}; hardware profile {}{})\n", v.run_dir, v.hardware,
                              v.runtime.empty() ? "" : "; runtime " + v.runtime);
  if (v.entries.empty())
    return o + fmt::format("  no [prediction] table in the config (`shardcast emit` writes one): nothing to compare here; "
                           "`shardcast validate {}` predicts this run now and compares\n",
                           v.run_dir);
  o += fmt::format("  {:<28} {:>14} {:>14} {:>9}\n", "quantity", "predicted", "measured", "error");
  for (const auto& e : v.entries)
    o += fmt::format("  {:<28} {:>14} {:>14} {:>+8.1f}%\n", e.quantity, human(e.quantity, e.predicted),
                     human(e.quantity, e.measured), e.error_pct());
  return o;
}

namespace {

// The config as this trainer runs it, whatever runtime the input planned for.
TrainConfig as_run(const TrainConfig& cfg) {
  TrainConfig ran = cfg;
  ran.runtime = "shardcast-train";
  return ran;
}

// What the run directory records: as_run, with a hardware or model preset given as a relative
// file (shared/config_io.h preset_ref_is_file, the rule of resolve_preset) made absolute, so
// `shardcast validate RUN_DIR` finds it from any directory.
TrainConfig recorded_config(const TrainConfig& cfg) {
  TrainConfig ran = as_run(cfg);
  auto absolute_file = [](std::string& ref) {
    if (preset_ref_is_file(ref) && std::filesystem::path(ref).is_relative())
      ref = std::filesystem::absolute(ref).string();
  };
  absolute_file(ran.cluster.hardware);
  absolute_file(ran.model_preset);
  return ran;
}

}  // namespace

bool run_toml_holds(const std::filesystem::path& run_toml, const TrainConfig& cfg) {
  try {
    // The config as it runs (a user's file there, relative presets and all) or as recorded.
    const std::string there = write_train_config(read_train_config(run_toml.string()));
    return there == write_train_config(as_run(cfg)) || there == write_train_config(recorded_config(cfg));
  } catch (const std::exception&) {
    return false;  // missing or not a config: it does not hold the run
  }
}

void write_validation(const std::filesystem::path& run_dir, const ValidationReport& v, const TrainConfig& cfg) {
  nlohmann::json j = v;
  write_file_atomic(run_dir / "validation.json", j.dump(2) + "\n");
  // The run directory records what ran: this trainer, whatever runtime the input planned for,
  // so `shardcast validate RUN_DIR` predicts it as shardcast-train's run. A run.toml there that
  // already holds exactly that (the config itself, written there by the GUI) is left as it is.
  if (run_toml_holds(run_dir / "run.toml", cfg)) return;
  write_file_atomic(run_dir / "run.toml", write_train_config(recorded_config(cfg)));
}

void finish_run_validation(const TrainConfig& cfg, const RunReport& measured, const std::filesystem::path& run_dir) {
  const ValidationReport v = make_validation(cfg.prediction, measured, run_dir.string());
  if (!v.runtime.empty() && v.runtime != "shardcast-train")
    fmt::print(stderr,
               "warning: run.toml's [prediction] was made for runtime {}, not shardcast-train: validation.json compares "
               "this trainer's run with another runtime's prediction (`shardcast validate {}` re-predicts it as "
               "shardcast-train's)\n",
               v.runtime, run_dir.string());
  write_validation(run_dir, v, cfg);
  fmt::print("{}wrote {}\n", format_validation(v), (run_dir / "validation.json").string());
}

}  // namespace shardcast::trainer
