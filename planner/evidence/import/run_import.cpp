// Logged steps + configuration -> RunReport, run.toml, import.json. See run_import.h.
#include "planner/evidence/predict.h"
#include "planner/evidence/import/run_import.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "planner/evidence/published_csv.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace fs = std::filesystem;

namespace {

// A logged step whose numbers are not a measurement (non-finite, or above the plausible bounds of
// published_csv.h on this GPU and model) refuses the import, naming the line and the quantity:
// written on, they would become JSON nulls or an MFU of thousands.
void check_logged(const TrainLog& log, const LoggedStep& l, double tps, double max_tps, const HardwareSpec& hw) {
  auto refuse = [&](const std::string& what) {
    return InputError(fmt::format("{}:{}: step {}: {} (planner/published_csv.h states the plausible ranges)", log.file,
                                  l.line, l.step, what));
  };
  const std::pair<const char*, std::optional<double>> numbers[] = {
      {"loss", l.loss}, {"grad_norm", l.grad_norm}, {"LR", l.lr}, {"tflops", l.tflops}, {"mfu", l.mfu_pct}};
  for (const auto& [name, v] : numbers)
    if (v && !std::isfinite(*v)) throw refuse(fmt::format("{} {} is not a finite number (a diverged or broken step)", name, *v));
  if (!std::isfinite(tps) || tps > max_tps)
    throw refuse(fmt::format("tokens/s per GPU {:g} is not plausible for this model on {}: above {:.4g} = {:g} x the "
                             "GPU's densest peak / the FLOPs each token executes",
                             tps, hw.name, max_tps, kPlausibleMfu));
  const double max_mem = max_plausible_memory_bytes(hw);
  const std::pair<const char*, std::optional<double>> memory[] = {{"reserved memory", l.mem_reserved_bytes},
                                                                   {"allocated memory", l.mem_allocated_bytes}};
  for (const auto& [name, v] : memory)
    if (v && *v > max_mem)
      throw refuse(fmt::format("{} {:.4g} GiB is not plausible on {}: above {:g} x its {:.4g} GiB of HBM", name,
                               *v / double(1ull << 30), hw.name, kPlausibleHbm, hw.gpu.hbm_bytes / double(1ull << 30)));
}

// Every number the step logged is finite (check_logged's first test).
bool all_finite(const LoggedStep& l) {
  for (const std::optional<double>& v : {std::optional<double>(l.loss), l.grad_norm, l.lr, l.tflops, l.mfu_pct,
                                         std::optional<double>(l.tps), l.samples_per_s, l.step_time_s})
    if (v && !std::isfinite(*v)) return false;
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// The configuration of the logged run: the given one, with the log's runtime (or the generation
// of it the configuration names), checked as the runtime would run it.
static TrainConfig imported_config(const TrainLog& log, const TrainConfig& cfg_in, const HardwareSpec& hw) {
  TrainConfig cfg = cfg_in;
  // The log's software ("torchtitan" | "fms-fsdp": runtime preset names, their newest
  // generation), or the generation of it the configuration names (import --runtime; the CLI
  // refuses a runtime of other software).
  const bool generation = runtime_preset(cfg_in.runtime).framework == runtime_preset(log.format).framework;
  cfg.runtime = generation ? cfg_in.runtime : log.format;
  cfg.prediction = PredictionTable{};
  validate_or_throw(cfg);
  const std::string refusal = runtime_refusal(runtime_preset(cfg.runtime), cfg, hw);
  if (!refusal.empty())
    throw ConfigError(cfg.source_file.empty() ? "import" : cfg.source_file, "runtime",
                      fmt::format("{} cannot have run this configuration: {}", cfg.runtime, refusal));

  if (log.format == "fms-fsdp" && cfg.training.grad_accum != 1)
    throw ConfigError(cfg.source_file.empty() ? "import" : cfg.source_file, "training.grad_accum",
                      fmt::format("{}: fms-fsdp has no gradient accumulation (each logged step is one batch); use 1",
                                  cfg.training.grad_accum));
  return cfg;
}

// import.json: what was read, what was summarised and by which conventions.
static nlohmann::json import_info(const TrainLog& log, const TrainConfig& c, const ImportedRun& r, int warmup, int used,
                           double peak, double fpt, double fpt_titan, double fpt_log,
                           const std::vector<double>& logged_mfu_steady, const nlohmann::json& steps_info) {
  const RunReport& rep = r.report;
  nlohmann::json info;
  info = {{"schema", 1},
          {"runtime", c.runtime},
          {"log_file", log.file},
          {"warmup", warmup},
          {"steps_logged", log.steps.size()},
          {"steps_summarised", used},
          {"hardware", c.cluster.hardware},
          {"peak_flops", peak},
          {"flops_per_token",
           {{"planner", fpt}, {"torchtitan", fpt_titan}, {"logged", fpt_log > 0 ? nlohmann::json(fpt_log) : nlohmann::json()}}},
          {"summary",
           {{"tokens_per_s_per_gpu", rep.tokens_per_s_per_gpu},
            {"median_step_time_s", rep.median_step_time_s},
            {"mfu_planner", rep.mfu},
            {"mfu_torchtitan_convention", rep.tokens_per_s_per_gpu * fpt_titan / peak},
            {"mfu_logged_pct", logged_mfu_steady.empty() ? nlohmann::json() : nlohmann::json(median(logged_mfu_steady))},
            {"mem_reserved_peak_bytes", rep.mem_reserved_peak_bytes ? nlohmann::json(*rep.mem_reserved_peak_bytes) : nlohmann::json()},
            {"mem_peak_bytes", rep.mem_peak_bytes}}},
          {"conventions",
           {{"mfu_planner", "6·N + 12·L·d·s FLOPs per token (N: all parameters), over the profile's dense peak for "
                            "precision.param_dtype; run_report.json's mfu"},
            {"mfu_torchtitan_convention", "6·(N − embedding) + 12·L·d·s FLOPs per token over the same peak"},
            {"mfu_logged_pct", "as torchtitan logged it: its FLOP count over its own peak table (torchtitan/tools/utils.py "
                               "get_peak_flops), in %; median over the summarised steps"}}},
          {"steps", steps_info},
          {"notes", r.notes}};
  return info;
}

// A log with steps, and a warm-up that leaves some of them; else the import is refused.
static void require_steps(const TrainLog& log, int warmup) {
  if (warmup < 0) throw UsageError(fmt::format("import: --warmup {} (allowed: 0 or more logged steps)", warmup));
  if (log.steps.empty())
    throw InputError(fmt::format(
        "{}: no {} step found (expected {}); is this the training log of rank 0?", log.file, log.format,
        log.format == "torchtitan" ? "metric lines like 'step: 10  loss:  7.8234  memory: 61.37GiB(77.58%)  tps: 5,200 ...'"
        : log.format == "deepspeed"
            ? "DeepSpeed lines like 'epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=...' or the HF "
              "Trainer's '{'train_runtime': ..., 'train_samples_per_second': ...}'"
            : "report blocks starting with a line 'step: 100'"));
  const int last = log.steps.back().step;
  if (last <= warmup)
    throw UsageError(fmt::format("import: --warmup {} leaves no step: the last step logged in {} is {} (use a warm-up "
                                 "below {})",
                                 warmup, log.file, last, last));
}

namespace {

// What a logged step's numbers are converted with: the run's tokens per GPU, the peak and the
// FLOPs per token of each convention.
struct StepScale {
  int seq_len = 0;
  int world = 1;
  double step_tokens = 0;   // per GPU per step
  double micro_tokens = 0;  // per GPU per micro-step
  double peak = 0;          // FLOP/s
  double fpt = 0, fpt_titan = 0;
  double hfpt = 0;     // hardware FLOPs per token as the planner counts them for HFU
  double max_tps = 0;  // the plausible bound (published_csv.h)
};

StepScale step_scale(const TrainConfig& c, const HardwareSpec& hw) {
  StepScale k;
  k.seq_len = c.training.seq_len;
  k.world = c.world_size();
  // Per GPU: a mesh's tp x cp x pp ranks share each data-parallel rank's sequences.
  k.step_tokens = double(c.tokens_per_step()) / c.world_size();
  k.micro_tokens = k.step_tokens / c.training.grad_accum;
  k.peak = hw.peak_flops(c.precision.param_dtype);
  k.fpt = c.model.flops_per_token(k.seq_len);
  k.fpt_titan = c.model.flops_per_token_torchtitan(k.seq_len);
  // Hardware FLOPs per token as the planner counts them for HFU (recomputed blocks, and the
  // GEMMs op-level selective checkpointing recomputes): its prediction's HFU over its rate.
  const Prediction pred = predict(c, hw, resolve_plan_options(c, hw));
  k.hfpt = pred.hfu * k.peak / pred.tokens_per_s_per_gpu;
  k.max_tps = max_plausible_tokens_per_s(c.model, k.seq_len, hw);
  return k;
}

// One logged step as the trainer's StepMetrics: its throughput (tokens/s logged, or derived
// from the step time or the samples per second), checked, and its rates.
StepMetrics step_metrics(const TrainLog& log, const LoggedStep& l, const StepScale& k, const HardwareSpec& hw) {
  StepMetrics m;
  m.step = l.step;
  m.loss = l.loss;
  m.lr = l.lr.value_or(0.0);
  m.grad_norm = l.grad_norm.value_or(0.0);
  m.tokens_per_s_per_gpu = l.tps;
  if (!(m.tokens_per_s_per_gpu > 0) && l.step_time_s && *l.step_time_s > 0) m.tokens_per_s_per_gpu = k.micro_tokens / *l.step_time_s;  // fms-fsdp < ffbe07a
  // DeepSpeed / the HF Trainer: sequences of all ranks per second.
  if (!(m.tokens_per_s_per_gpu > 0) && l.samples_per_s) m.tokens_per_s_per_gpu = *l.samples_per_s * k.seq_len / k.world;
  if (!(m.tokens_per_s_per_gpu > 0))
    throw InputError(fmt::format("{}:{}: step {} logged no throughput (tokens/s 0)", log.file, l.line, l.step));
  check_logged(log, l, m.tokens_per_s_per_gpu, k.max_tps, hw);
  m.step_time_s = l.step_time_s && *l.step_time_s > 0 ? *l.step_time_s : k.step_tokens / m.tokens_per_s_per_gpu;
  m.mfu = m.tokens_per_s_per_gpu * k.fpt / k.peak;
  m.hfu = m.tokens_per_s_per_gpu * k.hfpt / k.peak;
  m.mem_reserved_peak_bytes = l.mem_reserved_bytes;  // absent when not logged
  m.mem_peak_bytes = l.mem_allocated_bytes.value_or(0.0);
  return m;
}

// The steps read: every one written (with where it came from), the ones after the warm-up
// summarised.
struct ReadSteps {
  nlohmann::json info = nlohmann::json::array();  // per step written: step, line, ranks, logged MFU / TFLOPS
  std::vector<double> tps, time, logged_mfu, fpt_logged;  // of the summarised steps
  double mem_reserved = 0, mem_allocated = 0;             // their largest  // bytes
  bool any_reserved = false, any_allocated = false;
  int used = 0;             // steps summarised
  int broken_warmup = 0;    // warm-up steps left out (a non-finite number)
  bool from_pct = false;    // a reserved peak converted from % of the device's memory
};

ReadSteps read_steps(const TrainLog& log, const StepScale& k, const HardwareSpec& hw, int warmup, RunReport* rep) {
  ReadSteps r;
  for (LoggedStep l : log.steps) {
    // A warm-up step with a non-finite number (an inf grad_norm at step 1) is not summarised
    // anyway: left out of the steps written, said; a counted one refuses the import (check_logged).
    if (l.step <= warmup && !all_finite(l)) {
      ++r.broken_warmup;
      continue;
    }
    // torchtitan of 2024-03 logs the reserved peak in % of the device's memory only.
    if (!l.mem_reserved_bytes && l.mem_reserved_pct) {
      l.mem_reserved_bytes = *l.mem_reserved_pct / 100.0 * hw.gpu.hbm_bytes;
      r.from_pct = true;
    }
    const StepMetrics m = step_metrics(log, l, k, hw);
    rep->steps.push_back(m);
    nlohmann::json si = {{"step", l.step}, {"line", l.line}, {"ranks", l.ranks}};
    if (l.mfu_pct) si["mfu_logged_pct"] = *l.mfu_pct;
    if (l.tflops) si["tflops_logged"] = *l.tflops;
    r.info.push_back(si);
    if (l.step <= warmup) continue;
    ++r.used;
    r.tps.push_back(m.tokens_per_s_per_gpu);
    r.time.push_back(m.step_time_s);
    if (l.mfu_pct) r.logged_mfu.push_back(*l.mfu_pct);
    if (l.tflops && l.tps > 0) r.fpt_logged.push_back(*l.tflops * 1e12 / l.tps);
    if (l.mem_reserved_bytes) {
      r.any_reserved = true;
      r.mem_reserved = std::max(r.mem_reserved, *l.mem_reserved_bytes);
    }
    if (l.mem_allocated_bytes) {
      r.any_allocated = true;
      r.mem_allocated = std::max(r.mem_allocated, *l.mem_allocated_bytes);
    }
  }
  return r;
}

// The notes import.json carries: the log's own, what was left out and summarised, and how
// each derived number was derived. Returns torchtitan's logged FLOPs per token (0 = none logged).
double import_notes(const TrainLog& log, const TrainConfig& c, const HardwareSpec& hw, const StepScale& k,
                    const ReadSteps& rs, int warmup, std::vector<std::string>* notes_out) {
  std::vector<std::string>& notes = *notes_out;
  notes = log.notes;
  if (rs.broken_warmup > 0)
    notes.push_back(fmt::format("{} warm-up steps (step <= {}) with a non-finite number left out of the steps written",
                                rs.broken_warmup, warmup));
  notes.push_back(fmt::format("{} steps logged, {} after the warm-up (step > {}) summarised", log.steps.size(), rs.used,
                              warmup));
  if (rs.from_pct)
    notes.push_back(fmt::format("the log gives the reserved peak in % of the device's memory only (torchtitan of "
                                "2024-03): bytes = % x {}'s {:.4g} GiB",
                                hw.name, hw.gpu.hbm_bytes / double(1ull << 30)));
  if (!rs.any_allocated)
    notes.push_back("the log has no allocated peak: mem_peak_bytes = 0 (not measured); validate compares the "
                    "reserved peak (mem_reserved_peak_bytes) with the planner's reserved estimate");
  if (log.format == "torchtitan")
    notes.push_back(fmt::format("step time derived: micro_batch {} x seq_len {} x grad_accum {}{} tokens / tps",
                                c.training.micro_batch, k.seq_len, c.training.grad_accum,
                                c.dp_size() == c.world_size()
                                    ? std::string()
                                    : fmt::format(" x {} data-parallel ranks / {} GPUs", c.dp_size(), c.world_size())));
  // torchtitan's tflops / tps is its FLOPs per token: a check of --model and --seq-len.
  if (rs.fpt_logged.empty()) return 0;
  const double fpt_log = median(rs.fpt_logged);
  const double rel = fpt_log / k.fpt_titan - 1;
  if (std::abs(rel) > 0.03)
    notes.push_back(fmt::format(
        "warning: the log's FLOPs per token (tflops / tps = {:.4g}) differ by {:+.1f}% from torchtitan's count for "
        "this configuration ({:.4g} for {} at seq_len {}): is --model or --seq-len right?",
        fpt_log, 100 * rel, k.fpt_titan, c.model_label(), k.seq_len));
  return fpt_log;
}

}  // namespace

ImportedRun import_run(const TrainLog& log, const TrainConfig& cfg_in, const HardwareSpec& hw, int warmup) {
  require_steps(log, warmup);
  ImportedRun r;
  r.cfg = imported_config(log, cfg_in, hw);
  const TrainConfig& c = r.cfg;
  const StepScale k = step_scale(c, hw);

  RunReport& rep = r.report;
  rep.config_file = "run.toml";
  rep.hardware = c.cluster.hardware;
  rep.world_size = c.world_size();
  rep.sharding_strategy = to_string(c.parallelism.sharding_strategy);
  const ReadSteps rs = read_steps(log, k, hw, warmup, &rep);
  rep.tokens_per_s_per_gpu = median(rs.tps);
  rep.median_step_time_s = median(rs.time);
  rep.mfu = rep.tokens_per_s_per_gpu * k.fpt / k.peak;
  rep.hfu = rep.tokens_per_s_per_gpu * k.hfpt / k.peak;
  if (rs.any_reserved) rep.mem_reserved_peak_bytes = rs.mem_reserved;
  rep.mem_peak_bytes = rs.any_allocated ? rs.mem_allocated : 0.0;

  const double fpt_log = import_notes(log, c, hw, k, rs, warmup, &r.notes);
  r.info = import_info(log, c, r, warmup, rs.used, k.peak, k.fpt, k.fpt_titan, fpt_log, rs.logged_mfu, rs.info);
  return r;
}

std::vector<std::string> write_run_dir(const ImportedRun& run, const std::string& dir) {
  if (dir.empty()) throw UsageError("import: --out RUN_DIR is required");
  // An output that cannot be written is a path the user gave: exit 2 naming it, as emit's
  // (planner/emit/emit.cpp), before anything is written.
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(fmt::format("import: --out {}: cannot create the directory: {}", dir, ec.message()));
  for (const char* name : {"run.toml", "run_report.json", "import.json"})
    if (fs::is_directory(fs::path(dir) / name))
      throw UsageError(fmt::format("import: --out {}: {} is a directory; give a run directory whose files can be "
                                   "written",
                                   dir, (fs::path(dir) / name).string()));
  const std::string toml = fmt::format("# Imported by `shardcast import {}` from {}.\n", run.cfg.runtime,
                                       run.info.value("log_file", std::string())) +
                           write_train_config(run.cfg);
  parse_train_config(toml, (fs::path(dir) / "run.toml").string());  // must read back
  nlohmann::json rep = run.report;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"run.toml", toml}, {"run_report.json", rep.dump(2) + "\n"}, {"import.json", run.info.dump(2) + "\n"}};
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    const fs::path p = fs::path(dir) / name;
    write_file_atomic(p, text);
    written.push_back(p.string());
  }
  return written;
}

}  // namespace shardcast::planner
