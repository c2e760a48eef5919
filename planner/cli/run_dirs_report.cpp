// `shardcast validate RUN_DIR...`: see run_dirs_report.h.
#include "planner/cli/run_dirs_report.h"

#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/evidence/error_band.h"
#include "planner/evidence/reference_run.h"
#include "planner/evidence/run_dir.h"
#include "planner/evidence/run_validation.h"
#include "shared/config_io.h"

namespace shardcast::cli {

using namespace shardcast::planner;

namespace {

// Each run's tokens/s error against the band the planner states for it (error_band.h), and
// what a reference run carries: tokens/s, not memory.
void print_verdicts(const std::vector<RunComparison>& rows) {
  for (const auto& c : rows)
    fmt::print("  {}: tokens/s/rank predicted {:.0f}, measured {:.0f} ({:+.1f}%): {}{}\n", c.name, c.predicted_tps,
               c.measured_tps, 100 * c.err_tps_rel(), band_verdict(c.err_tps_rel(), c.band_rel),
               c.band_note.empty() ? "" : "; band " + c.band_note);
  if (!rows.empty() && rows.front().from_reference)
    fmt::print("  the reference run corrects tokens/s and step time only: peak memory is the planner's own prediction, "
               "not carried from the reference\n");
}

// `--json`: each run's predicted and measured step, memory and tokens/s, and the summary.
void print_runs_json(const std::vector<RunDir>& runs, const std::vector<RunComparison>& rows, const RunSummary& s,
                     const std::string& reference) {
  nlohmann::json j = {{"schema", 1}, {"runs", nlohmann::json::array()}};
  if (!reference.empty()) j["reference_run"] = reference;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& c = rows[i];
    nlohmann::json jr = {{"run_dir", runs[i].dir},
                         {"model", c.model},
                         {"sharding_strategy", c.strategy},
                         {"world_size", c.world_size},
                         {"step_time_s", {{"predicted", c.predicted_step_s}, {"measured", c.measured_step_s}, {"error_pct", c.err_step_pct()}}},
                         // RunReport's names: mem_peak_bytes (allocated) or mem_reserved_peak_bytes.
                         {c.mem_metric == "reserved" ? "mem_reserved_peak_bytes" : "mem_peak_bytes",
                          {{"predicted", c.predicted_mem_bytes}, {"measured", c.measured_mem_bytes}, {"error_pct", c.err_mem_pct()}}},
                         {"tokens_per_s_per_gpu", {{"predicted", c.predicted_tps}, {"measured", c.measured_tps},
                                                   {"error_pct", 100 * c.err_tps_rel()}, {"band_rel_1sigma", c.band_rel},
                                                   {"within_1sigma", std::fabs(c.err_tps_rel()) <= c.band_rel}}}};
    if (c.measured_reserved_bytes > 0)
      jr["mem_reserved_peak_bytes"] = {{"predicted", c.predicted_reserved_bytes},
                                       {"measured", c.measured_reserved_bytes},
                                       {"error_pct", c.err_reserved_pct()}};
    if (runs[i].has_validation) jr["validation"] = runs[i].validation;
    j["runs"].push_back(jr);
  }
  j["summary"] = {{"n", s.n}, {"mape_step_time_pct", s.mape_step}, {"max_abs_step_time_pct", s.max_abs_step},
                  {"mape_mem_pct", s.mape_mem}, {"max_abs_mem_pct", s.max_abs_mem}};
  fmt::print("{}\n", j.dump(2));
}

// `--markdown`: one table row per run and the summary.
void print_runs_markdown(const std::vector<RunComparison>& rows, const RunSummary& s) {
  fmt::print("| run | model | strategy | ranks | predicted step ms | measured | error % | tokens/s against the "
             "stated 1σ band | peak | predicted MiB | measured | error % |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& c : rows)
    fmt::print("| {} | {} | {} | {} | {:.1f} | {:.1f} | {:+.1f} | {} | {} | {:.2f} | {:.2f} | {:+.1f} |\n", c.name,
               c.model, c.strategy, c.world_size, c.predicted_step_s * 1e3, c.measured_step_s * 1e3, c.err_step_pct(),
               band_verdict(c.err_tps_rel(), c.band_rel), c.mem_metric, c.predicted_mem_bytes / 1048576.0,
               c.measured_mem_bytes / 1048576.0, c.err_mem_pct());
  fmt::print("\nn = {}; step time MAPE {:.1f}% (max {:.1f}%); peak memory MAPE {:.1f}% (max {:.1f}%)\n", s.n,
             s.mape_step, s.max_abs_step, s.mape_mem, s.max_abs_mem);
}

// One run's own validation.json table, as the trainer printed it at its end.
void print_own_validation(const RunDir& run) {
  const auto& v = run.validation;
  fmt::print("validation.json ({} vs [prediction], profile {}):\n", run.dir, v.hardware);
  auto human = [](const std::string& q, double x) {
    if (q.rfind("mem", 0) == 0) return fmt::format("{:.2f} MiB", x / 1048576.0);
    if (q == "step_time_s") return fmt::format("{:.2f} ms", x * 1e3);
    if (q == "mfu" || q == "hfu") return fmt::format("{:.3f}%", x * 100);
    return fmt::format("{:.1f}", x);
  };
  if (v.entries.empty()) {
    // A run of a hand-written run.toml: the trainer had no prediction to compare with.
    fmt::print("  no [prediction] table in {}/run.toml (`shardcast emit` writes one): the trainer compared "
               "nothing; the planner's prediction of the run follows\n\n",
               run.dir);
  } else {
    fmt::print("  {:<28} {:>14} {:>14} {:>9}\n", "quantity", "predicted", "measured", "error");
    for (const auto& e : v.entries)
      fmt::print("  {:<28} {:>14} {:>14} {:>+8.1f}%\n", e.quantity, human(e.quantity, e.predicted),
                 human(e.quantity, e.measured), e.error_pct());
    fmt::print("\n");
  }
}

}  // namespace

void print_run_dirs(const std::vector<std::string>& dirs, bool json, bool markdown, const std::string& hardware,
                    const std::string& reference) {
  std::vector<RunDir> runs;
  for (const auto& d : dirs) runs.push_back(read_run_dir(d));
  auto hardware_of = [&](const RunDir& r) { return load_hardware(hardware.empty() ? r.cfg.cluster.hardware : hardware); };
  // The reference read and predicted once; each run checks its GPU and runtime against it.
  std::optional<ReferenceRun> ref;
  if (!reference.empty() && !runs.empty()) ref = read_reference_run(reference, hardware_of(runs.front()));
  std::vector<RunComparison> rows;
  for (const auto& r : runs) rows.push_back(compare_run(r, hardware_of(r), ref ? &*ref : nullptr));
  const RunSummary s = summarize_runs(rows);
  if (json) return print_runs_json(runs, rows, s, reference);
  if (markdown) return print_runs_markdown(rows, s);
  if (runs.size() == 1 && runs[0].has_validation) print_own_validation(runs[0]);  // the run's own table
  fmt::print("planner now vs measured ({}{}):\n", hardware.empty() ? "each run's hardware profile" : "profile " + hardware,
             reference.empty() ? "" : "; throughput from reference run " + reference);
  fmt::print("  {:<30} {:>5} {:>10} {:>10} {:>8} {:>9} {:>10} {:>10} {:>8}\n", "run", "ranks", "pred ms", "meas ms",
             "err%", "peak", "pred MiB", "meas MiB", "err%");
  for (const auto& c : rows) {
    fmt::print("  {:<30} {:>5} {:>10.1f} {:>10.1f} {:>+8.1f} {:>9} {:>10.2f} {:>10.2f} {:>+8.1f}\n", c.name, c.world_size,
               c.predicted_step_s * 1e3, c.measured_step_s * 1e3, c.err_step_pct(), c.mem_metric,
               c.predicted_mem_bytes / 1048576.0, c.measured_mem_bytes / 1048576.0, c.err_mem_pct());
    if (c.measured_reserved_bytes > 0)
      fmt::print("  {:<30} {:>5} {:>10} {:>10} {:>8} {:>9} {:>10.2f} {:>10.2f} {:>+8.1f}\n", "", "", "", "", "", "reserved",
                 c.predicted_reserved_bytes / 1048576.0, c.measured_reserved_bytes / 1048576.0, c.err_reserved_pct());
  }
  if (rows.size() > 1)
    fmt::print("  n = {}; step time MAPE {:.1f}% (max {:.1f}%); peak memory MAPE {:.1f}% (max {:.1f}%)\n", s.n,
               s.mape_step, s.max_abs_step, s.mape_mem, s.max_abs_mem);
  print_verdicts(rows);
}

}  // namespace shardcast::cli
