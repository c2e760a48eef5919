// bench_outside: the planner's error on published runs it was never fitted on (prints a table;
// not a test). Usage: bench_outside [FILE.csv]   (default configs/published/outside.csv)
//
// What it prints, per source, per hardware and overall: tokens/s/GPU MAPE, mean signed error
// (bias; + = predicted faster than measured), worst under- and over-prediction, the share of
// rows inside their stated 1σ / 2σ band, and for rows with a memory figure the memory MAPE, mean
// signed error and the worst under-prediction (an out-of-memory the user did not see coming);
// then each source's level against the spread around it (planner/evidence/pairs.h source_level_split),
// and the within-source pairs (planner/evidence/pairs.h): the measured against the predicted throughput
// ratio of two runs one setting apart, per setting, beside the absolute error of the same rows;
// last, each row predicted from every other row of its source, GPU and runtime as its reference
// run (planner/evidence/reference_run.h), beside the planner alone.
// tests/planner/outside_runs_test.cpp holds these numbers as regression bounds; docs/validation.md
// "Outside runs" shows them. What it is not: a fitter — nothing here changes a preset.
// Single-threaded; owns nothing beyond its locals.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "planner/evidence/error_band.h"
#include "planner/evidence/pairs.h"
#include "planner/evidence/published_csv.h"
#include "planner/evidence/validate.h"

using namespace shardcast;
using Clock = std::chrono::steady_clock;

namespace {

// What the validation summary leaves out: signed extremes and the memory bias.  // all in %
struct Extremes {
  double worst_under_tps = 0, worst_over_tps = 0;
  std::string worst_under_tps_row, worst_over_tps_row;
  double bias_mem = 0, worst_under_mem = 0;
  std::string worst_under_mem_row;
};

Extremes extremes(const std::vector<const planner::ValidationRowResult*>& rows) {
  Extremes e;
  int n_mem = 0;
  for (const auto* r : rows) {
    if (r->has_tps) {
      if (r->err_tps_pct < e.worst_under_tps) e.worst_under_tps = r->err_tps_pct, e.worst_under_tps_row = r->row_id;
      if (r->err_tps_pct > e.worst_over_tps) e.worst_over_tps = r->err_tps_pct, e.worst_over_tps_row = r->row_id;
    }
    if (r->has_mem) {
      e.bias_mem += r->err_mem_pct;
      ++n_mem;
      if (r->err_mem_pct < e.worst_under_mem) e.worst_under_mem = r->err_mem_pct, e.worst_under_mem_row = r->row_id;
    }
  }
  if (n_mem > 0) e.bias_mem /= n_mem;
  return e;
}

std::string pct_of(int k, int n) { return n > 0 ? fmt::format("{} / {} ({:.1f}%)", k, n, 100.0 * k / n) : "-"; }

void print_line(const planner::ValidationSummary& s, const Extremes& e) {
  const std::string under = e.worst_under_tps_row.empty() ? "-" : fmt::format("{:+.1f} {}", e.worst_under_tps, e.worst_under_tps_row);
  const std::string over = e.worst_over_tps_row.empty() ? "-" : fmt::format("{:+.1f} {}", e.worst_over_tps, e.worst_over_tps_row);
  const std::string mem = s.n_mem > 0 ? fmt::format("{} / {:.1f} / {:+.1f}", s.n_mem, s.mape_mem, e.bias_mem) : "-";
  const std::string mem_under =
      e.worst_under_mem_row.empty() ? (s.n_mem > 0 ? "none under" : "-") : fmt::format("{:+.1f} {}", e.worst_under_mem, e.worst_under_mem_row);
  fmt::print("| {} | {} | {:.1f} | {:+.1f} | {} | {} | {} | {} | {} | {} |\n", s.name, s.n, s.mape_tps, s.bias_tps, under,
             over, pct_of(s.within_1sigma, s.n), pct_of(s.within_2sigma, s.n), mem, mem_under);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string csv = argc > 1 ? argv[1] : "configs/published/outside.csv";
  const auto t0 = Clock::now();
  auto rows = planner::read_published_csv(csv);
  planner::HardwareSet hw;
  const auto cases = planner::resolve_cases(rows, hw);
  const planner::ValidationResult v = planner::validate_cases(rows, cases, hw);
  const double ms = 1e3 * std::chrono::duration<double>(Clock::now() - t0).count();

  // Group the row results as validate's summaries do (by source, by hardware), for the extremes.
  auto rows_where = [&](auto pred) {
    std::vector<const planner::ValidationRowResult*> out;
    for (const auto& r : v.rows)
      if (r.skip_reason.empty() && pred(r)) out.push_back(&r);
    return out;
  };
  fmt::print("{}: {} rows, {} predicted, {} skipped; validate took {:.1f} ms\n", csv, v.rows.size(), v.overall.n,
             v.n_skipped, ms);
  // Every published run ran: a row predicted not to fit is a wrong memory verdict.
  std::string not_fitting;
  for (const auto& r : v.rows)
    if (r.skip_reason.empty() && !r.fits) not_fitting += " " + r.row_id;
  fmt::print("predicted not to fit although the run ran:{}\n\n", not_fitting.empty() ? " none" : not_fitting);
  fmt::print("| summary | n | MAPE % | bias % | worst under % | worst over % | within 1σ | within 2σ | "
             "memory n / MAPE % / bias % | worst memory under % |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& s : v.per_source) print_line(s, extremes(rows_where([&](const auto& r) { return r.source == s.name; })));
  for (const auto& s : v.per_hardware) print_line(s, extremes(rows_where([&](const auto& r) { return r.hardware == s.name; })));
  print_line(v.overall, extremes(rows_where([](const auto&) { return true; })));

  fmt::print("\nskipped rows:\n");
  for (const auto& r : v.rows)
    if (!r.skip_reason.empty()) fmt::print("  {}: {}\n", r.row_id, r.skip_reason);

  // Each source's level against the spread around it (planner/evidence/pairs.h source_level_split).
  const planner::SourceLevelSplit split = planner::source_level_split(rows, v);
  fmt::print("\nsource level and within source ({} sources with two or more predicted rows, {} rows):\n\n"
             "| rows | MAPE % | mean abs source level % | within source MAPE % |\n|---|---|---|---|\n"
             "| {} | {:.2f} | {:.2f} | {:.2f} |\n",
             split.sources, split.rows, split.rows, split.mape, split.level, split.within);

  const auto pairs = planner::find_pairs(rows, cases, v);
  fmt::print("\nwithin-source pairs ({} pairs of runs one setting apart; ratio error = predicted b/a over measured "
             "b/a; absolute tokens/s MAPE of the same {} rows: {:.1f} %):\n\n",
             pairs.size(), v.overall.n, v.overall.mape_tps);
  fmt::print("| setting that differs | pairs | ratio MAPE % | ratio bias % | max % | no difference predicted: MAPE % | "
             "order right / decided |\n|---|---|---|---|---|---|---|\n");
  for (const auto& s : planner::summarize_pairs(pairs))
    fmt::print("| {} | {} | {:.1f} | {:+.1f} | {:.1f} | {:.1f} | {} / {} |\n", s.setting, s.n, s.mape, s.bias, s.max_abs,
               s.mape_no_difference, s.order_right, s.decided);

  // With a reference run (planner/evidence/reference_run.h): each row from another of its source, GPU and runtime.
  const planner::ReferencePairs ref = planner::reference_pairs(planner::reference_rows(rows, v));
  const double band = planner::shipped_bands().reference.rel_1sigma;
  const int64_t within1 = ref.within(band), within2 = ref.within(2 * band);
  fmt::print("\nwith a reference run ({} ordered pairs of {} groups of one source, GPU and runtime; band ±{:.2f} %):\n\n"
             "| predicted | MAPE % | bias % | within 1σ | within 2σ |\n|---|---|---|---|---|\n"
             "| the planner alone ({} rows) | {:.2f} | {:+.2f} | {} / {} | {} / {} |\n"
             "| from a reference run | {:.2f} | {:+.2f} | {} / {} | {} / {} |\n",
             ref.n_pairs, ref.n_groups, 100 * band, v.overall.n, v.overall.mape_tps, v.overall.bias_tps,
             v.overall.within_1sigma, v.overall.n, v.overall.within_2sigma, v.overall.n, ref.mape, ref.bias, within1,
             ref.n_pairs, within2, ref.n_pairs);
  return 0;
}
