// `shardcast validate --published FILE.csv [--json]`: predict every row of a published-runs
// CSV (columns of configs/published/README.md) and compare with what was measured; then a
// summary per source, per hardware and overall (n, MAPE, median and max absolute error, 1σ).
// `--fit HW[,HW...] --fit-params k[,k...]` first fits those [efficiency] keys of the named
// presets (values shared) to the rows on them and prints the fitted table (docs/cost-model.md).
// `--pairs` adds the within-source pairs (planner/evidence/pairs.h), `--write-decisions FILE` their
// decision error per setting (planner/evidence/decision_error.h, configs/decisions.toml).
#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "planner/evidence/predict.h"
#include "planner/evidence/baseline.h"
#include "planner/cli/commands.h"
#include "planner/cli/run_dirs_report.h"
#include "planner/cli/config_flags.h"
#include "planner/evidence/crossval.h"
#include "planner/evidence/decision_error.h"
#include "planner/evidence/error_band.h"
#include "planner/evidence/fit.h"
#include "planner/evidence/pairs.h"
#include "planner/evidence/published_csv.h"
#include "planner/evidence/run_validation.h"
#include "planner/evidence/validate.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::cli {

namespace {

struct ValidateArgs {
  std::string published, fit_on, annotations, baseline_fit_on;
  bool baseline = false;
  bool json = false, markdown = false;
  bool pairs = false;          // within-source pairs (planner/evidence/pairs.h)
  std::string write_decisions;  // --pairs: write the decision bands here (configs/decisions.toml)
  int min_pairs = 4;
  std::vector<std::string> fit_hardware, fit_params;
  double prior = 0;
  std::vector<std::string> run_dirs;  // trainer runs (planner/evidence/run_validation.h)
  std::string hardware;
  std::string reference_run;   // run dirs: --reference-run DIR (planner/evidence/reference_run.h)
  bool crossval = false;       // leave-one-source-out (planner/evidence/crossval.h)
  std::string holdout;         // --crossval: also score the bands on this CSV (never fitted on)
  std::string write_bands;     // --crossval: write the bands here (configs/bands.toml)
  std::string out_of_sample;   // --crossval: write every row's out-of-sample prediction here (CSV)
  int min_rows = 4;
};

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }

void print_summary_line(const planner::ValidationSummary& s, size_t width) {
  fmt::print("  {:<{}} {:>4} {:>7.1f} {:>7.1f} {:>7.1f} {:>7.1f} {:>+7.1f}", clip(s.name, width), width, s.n,
             s.mape_tps, s.median_abs_err_tps, s.max_abs_err_tps, 100 * s.sigma_rel_tps, s.bias_tps);
  if (s.n_mem > 0) fmt::print("  mem n={} MAPE {:.1f}%", s.n_mem, s.mape_mem);
  fmt::print("\n");
}

// The memory rows more than 5 % under, by the estimate and against the allocator range.
void print_memory_under(const planner::ValidationSummary& s) {
  if (s.n_mem == 0) return;
  fmt::print("  memory: the plan more than 5% under the measured figure on {} of {} rows by its estimate, on {} by the "
             "reserved range over both allocator settings where the source leaves PYTORCH_CUDA_ALLOC_CONF open "
             "(err_mem_band_pct)\n",
             s.mem_under_5pct, s.n_mem, s.mem_under_5pct_band);
}

// Predicted rows whose notes say the prediction is not quite the row's: a runtime standing in
// for software without a profile, a memory figure not compared. The JSON carries every note;
// these are the ones a reader of the table must see beside it.
void print_stand_ins(const planner::ValidationResult& v) {
  std::vector<std::pair<const planner::ValidationRowResult*, std::string>> noted;
  for (const auto& r : v.rows) {
    if (!r.skip_reason.empty()) continue;
    std::string said;
    for (size_t at = 0; at < r.config_notes.size();) {
      const size_t end = std::min(r.config_notes.find("; ", at), r.config_notes.size());
      const std::string note = r.config_notes.substr(at, end - at);
      if (note.find("has no profile") != std::string::npos || note.find("memory not compared") != std::string::npos)
        said += (said.empty() ? "" : "; ") + note;
      at = end + 2;
    }
    if (!said.empty()) noted.emplace_back(&r, said);
  }
  if (noted.empty()) return;
  fmt::print("\npredicted with a stand-in or without memory ({}):\n", noted.size());
  for (const auto& [r, said] : noted) fmt::print("  line {:>4} {:<40} {}\n", r->line, clip(r->row_id, 40), said);
}

void print_human(const planner::ValidationResult& v) {
  fmt::print("{:<48} {:<14} {:>9} {:>9} {:>7} {:>5} {:>9} {:>6} {:>6} {:>7}\n", "row", "hardware", "pred tps",
             "meas tps", "err%", "1σ%", "verdict", "pMFU", "mMFU", "err%");
  for (const auto& r : v.rows) {
    if (!r.skip_reason.empty()) continue;
    fmt::print("{:<48} {:<14} {:>9.0f} ", clip(r.row_id, 48), clip(r.hardware, 14), r.predicted_tps);
    if (r.has_tps) fmt::print("{:>9.0f} {:>+7.1f} ", r.measured_tps, r.err_tps_pct);
    else fmt::print("{:>9} {:>7} ", "-", "-");
    fmt::print("{:>5} ", fmt::format("±{:.0f}", 100 * r.band_rel_1sigma));
    fmt::print("{:>9} ", r.has_tps ? planner::band_verdict_short(r.err_tps_pct / 100, r.band_rel_1sigma) : "-");
    fmt::print("{:>6.3f} ", r.predicted_mfu);
    if (r.has_mfu) fmt::print("{:>6.3f} {:>+7.1f}", r.measured_mfu, r.err_mfu_pct);
    else fmt::print("{:>6} {:>7}", "-", "-");
    if (r.has_mem) fmt::print("  mem {:.1f}/{:.1f} GiB {:+.1f}%", r.predicted_mem_gib, r.measured_mem_gib, r.err_mem_pct);
    if (!r.fits) fmt::print("  (predicted not to fit)");
    fmt::print("\n");
  }
  if (v.n_skipped > 0) {
    fmt::print("\nskipped ({}):\n", v.n_skipped);
    for (const auto& r : v.rows)
      if (!r.skip_reason.empty()) fmt::print("  line {:>4} {:<40} {}\n", r.line, clip(r.row_id, 40), r.skip_reason);
  }
  print_stand_ins(v);
  const size_t w = 60;
  fmt::print("\n  {:<{}} {:>4} {:>7} {:>7} {:>7} {:>7} {:>7}   (tokens/s/GPU, %)\n", "summary", w, "n", "MAPE",
             "median", "max", "1σ", "bias");
  for (const auto& s : v.per_source) print_summary_line(s, w);
  fmt::print("\n");
  for (const auto& s : v.per_hardware) print_summary_line(s, w);
  fmt::print("\n");
  print_summary_line(v.overall, w);
  const auto& o = v.overall;
  fmt::print("\n  verdict: \"in 1σ\" = inside the stated 1σ band of that row's prediction (1σ%); \"out +2.3σ\" = "
             "outside the stated band, the error in units of that band\n"
             "  inside the stated 1σ band: {} of {} rows; inside 2σ: {} of {}; outside 2σ: {}\n",
             o.within_1sigma, o.n, o.within_2sigma, o.n, o.n - o.within_2sigma);
  print_memory_under(o);
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? '/' : (c == '\n' ? ' ' : c);
  return out;
}

void print_markdown_summary(const planner::ValidationSummary& s) {
  fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:+.1f} | {} / {} | {} |\n", md_cell(s.name), s.n, s.mape_tps,
             s.median_abs_err_tps, s.max_abs_err_tps, 100 * s.sigma_rel_tps, s.bias_tps, s.within_1sigma, s.within_2sigma,
             s.n_mem > 0 ? fmt::format("{} / {:.1f}", s.n_mem, s.mape_mem) : "-");
}

void print_markdown(const planner::ValidationResult& v) {
  fmt::print("| summary | n | MAPE % | median % | max % | 1σ % | bias % | within stated 1σ / 2σ | memory n / MAPE % |\n"
             "|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& s : v.per_source) print_markdown_summary(s);
  for (const auto& s : v.per_hardware) print_markdown_summary(s);
  print_markdown_summary(v.overall);
  fmt::print("\n| row | hardware | predicted tok/s/GPU | measured | error % | band 1σ % | against the stated band | "
             "predicted MFU | measured MFU | predicted allocated / reserved GiB | measured GiB (metric) | memory error % |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : v.rows) {
    if (!r.skip_reason.empty()) {
      fmt::print("| {} | {} | skipped: {} | | | | | | | | | |\n", md_cell(r.row_id), r.hardware, md_cell(r.skip_reason));
      continue;
    }
    fmt::print("| {} | {} | {:.0f} | {} | {} | {:.0f} | {} | {:.3f} | {} | {:.1f} / {:.1f}{} | {} | {} |\n",
               md_cell(r.row_id), r.hardware, r.predicted_tps, r.has_tps ? fmt::format("{:.0f}", r.measured_tps) : "-",
               r.has_tps ? fmt::format("{:+.1f}", r.err_tps_pct) : "-", 100 * r.band_rel_1sigma,
               r.has_tps ? planner::band_verdict_short(r.err_tps_pct / 100, r.band_rel_1sigma) : "-", r.predicted_mfu,
               r.has_mfu ? fmt::format("{:.3f}", r.measured_mfu) : "-", r.predicted_alloc_gib,
               r.predicted_reserved_gib, r.fits ? "" : " (does not fit)",
               r.has_mem ? fmt::format("{:.1f} ({})", r.measured_mem_gib, md_cell(r.mem_metric)) : "-",
               !r.has_mem ? "-"
               : !r.allocator_setting_stated && r.predicted_reserved_hi_gib > 0
                   ? fmt::format("{:+.1f} (allocator setting not stated: reserved {:.1f}–{:.1f} GiB over "
                                 "expandable_segments off/on, {:+.1f} against that range)",
                                 r.err_mem_pct, r.predicted_reserved_lo_gib, r.predicted_reserved_hi_gib,
                                 r.err_mem_band_pct)
                   : fmt::format("{:+.1f}", r.err_mem_pct));
  }
}

std::string pct_cell(double rel) { return fmt::format("{:+.1f}", 100.0 * rel); }

// One Markdown line per fold of `cv` (its rows' MAPE, bias, rms and largest error; the fold's
// notes in the last column), then one line over every row.
void print_fold_table(const planner::CrossvalResult& cv, const char* fold_column, const char* notes_column,
                      const char* total_label) {
  struct Stats {
    int n = 0;
    double abs_sum = 0, sq = 0, signed_sum = 0, max = 0;
    void add(double e) {
      ++n;
      abs_sum += std::fabs(e);
      sq += e * e;
      signed_sum += e;
      max = std::max(max, std::fabs(e));
    }
    std::string cells() const {
      const double k = std::max(1, n);
      return fmt::format("{} | {:.1f} | {:+.1f} | {:.1f} | {:.1f}", n, 100 * abs_sum / k, 100 * signed_sum / k,
                         100 * std::sqrt(sq / k), 100 * max);
    }
  };
  fmt::print("| {} | n | MAPE % | bias % | 1σ % | max % | {} |\n|---|---|---|---|---|---|---|\n", fold_column,
             notes_column);
  Stats all;
  for (const auto& r : cv.rows) all.add(r.rel_err);
  for (const auto& f : cv.folds) {
    Stats st;
    for (const auto& r : cv.rows)
      if (r.source == f.source) st.add(r.rel_err);
    if (st.n == 0) continue;
    std::string notes;
    for (const auto& s : f.notes) notes += (notes.empty() ? "" : "; ") + s;
    fmt::print("| {} | {} | {} |\n", md_cell(f.source), st.cells(), md_cell(notes));
  }
  fmt::print("| {} | {} | |\n", total_label, all.cells());
}

// The shipped procedure: the same fit on every source (the values for configs/hardware/).
void print_shipped_fit(const std::vector<planner::PublishedRow>& rows, const std::vector<planner::ValidationCase>& cases,
                       const planner::HardwareSet& hardware, const std::vector<planner::FitGroup>& groups) {
  planner::HardwareSet all = hardware;
  const auto notes = planner::fit_groups(rows, cases, all, groups);
  fmt::print("\n## Fit on every source (prior weight {}; the presets' values)\n\n", groups.front().prior_weight);
  for (const auto& note : notes) fmt::print("- {}\n", note);  // "family: refitted on N rows: key = value ..."
  fmt::print("\n");
}

// The hold-out CSV's rows against the bands (shipped presets, never fitted on): coverage and
// each row's error.
void print_holdout_coverage(const std::string& holdout, const std::vector<planner::Annotation>& annotations,
                            planner::HardwareSet& hardware, const planner::BandTable& t) {
  std::vector<planner::PublishedRow> hrows = planner::read_published_csv(holdout, annotations);
  const auto hcases = planner::resolve_cases(hrows, hardware);
  std::vector<planner::CrossvalRow> hv;
  for (const auto& c : hcases) {
    const auto& row = hrows[c.row];
    if (!row.tokens_per_s_per_gpu || *row.tokens_per_s_per_gpu <= 0) continue;
    const Prediction p = planner::predict(c.cfg, hardware.at(c.hardware), c.options);
    planner::CrossvalRow r;
    r.row_id = row.row_id;
    r.hardware = c.hardware;
    r.regime = planner::band_regime(c.cfg, c.hardware, c.options.framework);
    r.rel_err = p.tokens_per_s_per_gpu / *row.tokens_per_s_per_gpu - 1.0;
    hv.push_back(r);
  }
  const planner::Coverage hc = planner::coverage(hv, t, hardware);
  fmt::print("| {} (shipped presets, never fitted on) | {} | {:.0f}% | {:.0f}% | {} |\n", md_cell(holdout), hc.n,
             100 * hc.frac1(), 100 * hc.frac2(), hc.prior_only);
  fmt::print("\n| hold-out row | error % | band | within |\n|---|---|---|---|\n");
  for (const auto& r : hv) {
    const auto b = planner::choose_band(t, r.regime, hardware.at(r.hardware).efficiency_param("error_band_rel"),
                                        hardware.at(r.hardware).efficiency_param("error_band_runs"));
    const double e = std::fabs(r.rel_err);
    fmt::print("| {} | {} | {} | {} |\n", r.row_id, pct_cell(r.rel_err), md_cell(b.note),
               e <= b.rel_1sigma ? "1σ" : (e <= 2 * b.rel_1sigma ? "2σ" : "outside 2σ"));
  }
}

// `validate --crossval`: leave one source out, the bands, their coverage (Markdown tables).
void run_crossval(const ValidateArgs& a, const std::vector<planner::PublishedRow>& rows,
                  const std::vector<planner::ValidationCase>& cases, planner::HardwareSet& hardware,
                  const std::vector<planner::Annotation>& annotations, const std::string& command) {
  auto groups = planner::shipped_fit_groups();
  if (a.prior > 0)
    for (auto& g : groups) g.prior_weight = a.prior;
  for (const auto& g : groups)
    for (const auto& h : g.hardware)
      if (!hardware.count(h)) hardware.emplace(h, load_hardware(h));
  // Leave one source out, and what a GPU without rows of its own gets: another family's fitted
  // fractions.
  planner::CrossvalResult cv, carried;
  try {
    cv = planner::leave_one_source_out(rows, cases, hardware, groups);
    carried = planner::carry_across_families(rows, cases, hardware, groups);
  } catch (const UsageError& e) {
    throw UsageError(std::string("validate --crossval: ") + e.what());
  }
  if (!a.out_of_sample.empty()) {
    write_file_atomic(a.out_of_sample, planner::out_of_sample_csv(cv));
    fmt::print(stderr, "wrote {} ({} rows predicted without their source)\n", a.out_of_sample, cv.rows.size());
  }
  fmt::print("## Leave one source out ({} rows, {} sources)\n\n", cv.rows.size(), cv.folds.size());
  print_fold_table(cv, "source left out", "refit", "every row, predicted without its source");
  if (!carried.rows.empty()) {
    fmt::print("\n## Fitted fractions carried to another GPU family ({} rows)\n\n", carried.rows.size());
    print_fold_table(carried, "fitted on → predicted", "fit", "every row, predicted with the other family's fit");
  }
  print_shipped_fit(rows, cases, hardware, groups);  // the same fit on every source
  planner::BandTable t = planner::build_bands(cv.rows, groups, a.min_rows);
  t.method = fmt::format(
      "leave one source out over {} rows of {} sources: refit {} per GPU family on the other sources, "
      "predict the left-out rows; rel_1sigma = rms of predicted/measured - 1 of the band's rows; "
      "regimes with fewer than {} rows are omitted; [reference_run]: every ordered pair (a, b) of the left-out rows "
      "of one source, hardware preset and runtime, b predicted with a as its reference run, rel_1sigma = root of the "
      "mean over those groups of each group's mean squared error",
      cv.rows.size(), cv.folds.size(), "the shipped keys", a.min_rows);
  t.command = command;
  {
    const planner::ReferencePairs rp = planner::reference_pairs(planner::reference_rows(cv.rows));
    fmt::print("\n## Reference run\n\nA prediction carried from a measured run of its own source, hardware and runtime "
               "(--reference-run, planner/evidence/reference_run.h), over the left-out rows: {} pairs of {} groups, MAPE {:.1f}%, "
               "bias {:+.1f}%; band (rms, each group weighted equally) ±{:.1f}%.\n",
               rp.n_pairs, rp.n_groups, rp.mape, rp.bias, 100 * t.reference.rel_1sigma);
  }
  fmt::print("\n## Bands (1σ of the out-of-sample errors per GPU family and regime)\n\n"
             "| family | regime | n | sources | 1σ % |\n|---|---|---|---|---|\n");
  for (const auto& b : t.bands)
    fmt::print("| {} | {} | {} | {} | {:.1f} |\n", b.family, b.dimension == "all" ? "all" : b.dimension + " " + b.value,
               b.n_rows, b.sources.size(), 100 * b.rel_1sigma);
  const planner::Coverage nested = planner::nested_coverage(cv.rows, groups, a.min_rows, hardware);
  fmt::print("\n## Coverage\n\n| rows | n | within 1σ | within 2σ | prior only |\n|---|---|---|---|---|\n");
  fmt::print("| leave one source out (each source against bands built without it) | {} | {:.0f}% | {:.0f}% | {} |\n",
             nested.n, 100 * nested.frac1(), 100 * nested.frac2(), nested.prior_only);
  if (!a.holdout.empty()) print_holdout_coverage(a.holdout, annotations, hardware, t);
  if (!a.write_bands.empty()) {
    write_file_atomic(a.write_bands, planner::write_bands_toml(t));
    fmt::print(stderr, "wrote {} ({} bands)\n", a.write_bands, t.bands.size());
  }
}

// The within-source pairs: per pair and per setting (planner/evidence/pairs.h).
void print_pairs(const std::vector<planner::ConfigPair>& pairs, bool markdown) {
  const auto summaries = planner::summarize_pairs(pairs);
  if (markdown) {
    fmt::print("\n| setting that differs | pairs | ratio MAPE % | ratio bias % | max % | no difference predicted: MAPE % "
               "| order right (decided) |\n|---|---|---|---|---|---|---|\n");
    for (const auto& s : summaries)
      fmt::print("| {} | {} | {:.1f} | {:+.1f} | {:.1f} | {:.1f} | {} / {} |\n", md_cell(s.setting), s.n, s.mape, s.bias,
                 s.max_abs, s.mape_no_difference, s.order_right, s.decided);
    fmt::print("\n| run a | run b | setting | a | b | measured b/a | predicted b/a | error % |\n"
               "|---|---|---|---|---|---|---|---|\n");
    for (const auto& p : pairs)
      fmt::print("| {} | {} | {} | {} | {} | {:.3f} | {:.3f} | {:+.1f}{} |\n", md_cell(p.row_a), md_cell(p.row_b),
                 md_cell(p.setting), md_cell(p.value_a), md_cell(p.value_b), p.measured_ratio, p.predicted_ratio,
                 100 * p.err, p.decided && !p.order_right ? " (order wrong)" : "");
    return;
  }
  fmt::print("\nwithin-source pairs (two runs of one source, one setting apart; ratio = b / a, tokens/s/GPU):\n");
  fmt::print("{:<40} {:<40} {:<28} {:>9} {:>9} {:>7}\n", "run a", "run b", "setting", "measured", "predicted", "err%");
  for (const auto& p : pairs)
    fmt::print("{:<40} {:<40} {:<28} {:>9.3f} {:>9.3f} {:>+7.1f}{}\n", clip(p.row_a, 40), clip(p.row_b, 40),
               clip(p.setting, 28), p.measured_ratio, p.predicted_ratio, 100 * p.err,
               p.decided && !p.order_right ? "  order wrong" : "");
  fmt::print("\n  {:<40} {:>5} {:>7} {:>7} {:>7} {:>8}  {}\n", "setting", "pairs", "MAPE", "bias", "max", "no diff",
             "order right / decided");
  for (const auto& s : summaries)
    fmt::print("  {:<40} {:>5} {:>7.1f} {:>+7.1f} {:>7.1f} {:>8.1f}  {} / {}\n", clip(s.setting, 40), s.n, s.mape, s.bias,
               s.max_abs, s.mape_no_difference, s.order_right, s.decided);
  fmt::print("  (no diff: the MAPE of predicting no difference, ratio 1 — the size of the effects)\n");
}

}  // namespace

// --fit: fit the named presets' efficiency keys first (printed; hardware takes the values).
void fit_first(const ValidateArgs& args, const std::vector<planner::PublishedRow>& rows,
               const std::vector<planner::ValidationCase>& cases, const std::vector<planner::Annotation>& annotations,
               planner::HardwareSet& hardware) {
  const ValidateArgs* a = &args;
    if (a->fit_params.empty()) throw UsageError("validate: --fit needs --fit-params");
    for (const auto& h : a->fit_hardware)
      if (!hardware.count(h)) hardware.emplace(h, load_hardware(h));
    planner::FitSpec spec;
    spec.hardware = a->fit_hardware;
    spec.params = a->fit_params;
    spec.prior_weight = a->prior;
    planner::FitResult f;
    try {
      if (a->fit_on.empty()) {
        f = planner::fit_efficiency(rows, cases, hardware, spec);
      } else {
        std::vector<planner::PublishedRow> fit_rows = planner::read_published_csv(a->fit_on, annotations);
        const auto fit_cases = planner::resolve_cases(fit_rows, hardware);
        f = planner::fit_efficiency(fit_rows, fit_cases, hardware, spec);
      }
    } catch (const UsageError& e) {
      throw UsageError(std::string("validate --fit: ") + e.what());
    }
    FILE* out = a->json || a->markdown ? stderr : stdout;
    fmt::print(out, "# fitted on {} runs of", f.n_runs);
    for (const auto& h : a->fit_hardware) fmt::print(out, " {}", h);
    fmt::print(out, ": rms log error {:.4f} -> {:.4f} ({} iterations)\n[efficiency]\n", f.rms_log_before,
               f.rms_log_after, f.iterations);
    for (const auto& [k, val] : f.values) fmt::print(out, "{} = {:.6g}\n", k, val);
    fmt::print(out, "\n");
}

// The published rows' table, the source-level split, the reference pairs, pairs and the rule
// of thumb, as text, Markdown or JSON.
void print_published(const ValidateArgs& args, const std::vector<planner::PublishedRow>& rows,
                     const planner::ValidationResult& v, const std::vector<planner::ConfigPair>& pairs,
                     const planner::ValidationSummary& rule_summary, int rule_unscored) {
  const ValidateArgs* a = &args;
  // Each source's level against the spread around it (pairs.h): how much of the error a
  // source's stack shares across its runs, and how much the settings it varies leave.
  const planner::SourceLevelSplit split = planner::source_level_split(rows, v);
  // Each row predicted from a reference run of its own source (reference_run.h), against the
  // shipped reference band.
  const planner::ReferencePairs ref = planner::reference_pairs(planner::reference_rows(rows, v));
  const double ref_band = planner::shipped_bands().reference.rel_1sigma;
  const int64_t ref_within1 = ref.within(ref_band), ref_within2 = ref.within(2 * ref_band);
  if (a->json) {
    nlohmann::json j = v;
    j["source_level_split"] = {{"sources", split.sources}, {"rows", split.rows}, {"mape_tokens_per_s", split.mape},
                               {"source_level_pct", split.level}, {"within_source_pct", split.within}};
    j["reference_pairs"] = {{"pairs", ref.n_pairs},          {"groups", ref.n_groups},
                            {"mape_tokens_per_s", ref.mape}, {"bias_tokens_per_s", ref.bias},
                            {"rel_1sigma", ref.rel_1sigma},  {"band_rel_1sigma", ref_band},
                            {"within_1sigma", ref_within1},  {"within_2sigma", ref_within2}};
    if (a->pairs) {
      j["pairs"] = pairs;
      j["pairs_summary"] = planner::summarize_pairs(pairs);
    }
    if (a->baseline)
      j["baseline"] = {{"name", rule_summary.name}, {"n", rule_summary.n}, {"mape_tokens_per_s", rule_summary.mape_tps},
                       {"median_abs_err_tokens_per_s", rule_summary.median_abs_err_tps},
                       {"max_abs_err_tokens_per_s", rule_summary.max_abs_err_tps},
                       {"n_unscored_gpu_type_not_fitted", rule_unscored}};
    fmt::print("{}\n", j.dump(2));
  } else if (a->markdown) {
    print_markdown(v);
    if (a->pairs) print_pairs(pairs, true);
  } else {
    print_human(v);
    if (split.sources > 0)
      fmt::print("\n  sources with two or more rows: {} ({} rows): MAPE {:.1f}%; their sources' mean errors {:.1f}% "
                 "(mean abs); the rows around their source's mean {:.1f}% (planner/evidence/pairs.h source_level_split)\n",
                 split.sources, split.rows, split.mape, split.level, split.within);
    if (ref.n_pairs > 0)
      fmt::print("  with a reference run (--reference-run): each row predicted from another row of its source, hardware and "
                 "runtime: {} pairs of {} groups: MAPE {:.1f}%, bias {:+.1f}%; within the reference band (±{:.1f}%) "
                 "1σ {} / {}, 2σ {} / {} (planner/evidence/reference_run.h)\n",
                 ref.n_pairs, ref.n_groups, ref.mape, ref.bias, 100 * ref_band, ref_within1, ref.n_pairs, ref_within2,
                 ref.n_pairs);
    if (a->pairs) print_pairs(pairs, false);
  }
  if (a->baseline && !a->json) {
    fmt::print("\n{}: n {}, MAPE {:.1f}%, median {:.1f}%, max {:.1f}%", rule_summary.name, rule_summary.n,
               rule_summary.mape_tps, rule_summary.median_abs_err_tps, rule_summary.max_abs_err_tps);
    if (rule_unscored > 0) fmt::print(" ({} rows on GPU types the fit never saw not scored)", rule_unscored);
    fmt::print("\n");
  }
}

// The options whose presence (not value) validate checks (check_validate_flags).
struct ValidateOptions {
  CLI::Option *min_pairs, *hardware, *fit_params, *fit_on, *baseline_fit_on, *prior, *min_rows;
};

ValidateOptions add_validate_flags(CLI::App* cmd, ValidateArgs* a) {
  ValidateOptions o;
  cmd->add_option("--published", a->published, "CSV of published runs (configs/published/README.md columns)");
  cmd->add_option("run_dirs", a->run_dirs, "trainer run directories (validation.json, run_report.json, run.toml)");
  o.hardware = add_hardware_flag(cmd, a->hardware, "run dirs: re-predict with this hardware preset (name or .toml) instead of each run's");
  add_reference_run_flag(cmd, a->reference_run);
  cmd->add_option("--annotations", a->annotations,
                  "CSV of row_id,column,value,source: facts the published CSV leaves empty, each with its source");
  cmd->add_flag("--json", a->json, "print {rows, summary, per_source, per_hardware} as JSON");
  cmd->add_flag("--markdown", a->markdown, "print the summary and the rows as Markdown tables (docs/validation.md)");
  cmd->add_flag("--pairs", a->pairs,
                "also compare runs of one source that differ in one setting: measured against predicted "
                "throughput ratio, and whether the prediction ranks them as measured (planner/evidence/pairs.h)");
  cmd->add_option("--write-decisions", a->write_decisions,
                  "with --pairs: write the decision error per setting to this TOML (configs/decisions.toml, "
                  "planner/evidence/decision_error.h)");
  o.min_pairs = cmd->add_option("--min-pairs", a->min_pairs, "with --write-decisions: fewest pairs a setting's band needs");
  cmd->add_option("--fit", a->fit_hardware, "fit efficiency keys of these presets first (values shared)")->delimiter(',');
  o.fit_params = cmd->add_option("--fit-params", a->fit_params, "efficiency keys to fit (with --fit)")->delimiter(',');
  o.fit_on = cmd->add_option("--fit-on", a->fit_on, "fit on this CSV's rows instead (hold-out checks: fit on one source, validate another)");
  cmd->add_flag("--baseline", a->baseline,
                "also score the rule of thumb: one fitted MFU per GPU type (planner/evidence/baseline.h)");
  o.baseline_fit_on = cmd->add_option("--baseline-fit-on", a->baseline_fit_on,
                  "fit the rule of thumb on this CSV instead of the validated one (hold-out)");
  o.prior = cmd->add_option("--prior", a->prior, "weight w of the pull towards the preset's values: w·log(value/start) per key");
  cmd->add_flag("--crossval", a->crossval,
                "leave one source out: refit the shipped keys without each source, predict it, print the bands "
                "per GPU family and regime and their coverage, and each family's fit carried to the other "
                "families' rows (planner/evidence/crossval.h)");
  cmd->add_option("--holdout", a->holdout, "with --crossval: also check the bands on this CSV (never fitted on)");
  cmd->add_option("--write-bands", a->write_bands, "with --crossval: write the bands to this TOML (configs/bands.toml)");
  cmd->add_option("--out-of-sample", a->out_of_sample,
                  "with --crossval: write every row's prediction by the fit without its source to this CSV");
  o.min_rows = cmd->add_option("--min-rows", a->min_rows, "with --crossval: fewest rows a regime band needs");
  return o;
}

// A flag given where it does nothing is refused by name (it would be read as done).
void check_validate_flags(const ValidateArgs& args, const ValidateOptions& o) {
  const ValidateArgs* a = &args;
  auto needs = [](const CLI::Option* opt, bool ok, const char* what) {
    if (opt->count() > 0 && !ok) throw UsageError(fmt::format("validate: {} {}", opt->get_name(), what));
  };
  if (!a->run_dirs.empty() && !a->published.empty())
    throw UsageError("validate: give RUN_DIR... or --published FILE.csv, not both (the CSV would not be read)");
  needs(o.hardware, a->published.empty(), "applies to run directories (RUN_DIR...); a published row names its own GPU");
  needs(o.fit_params, !a->fit_hardware.empty(), "needs --fit PRESETS");
  needs(o.fit_on, !a->fit_hardware.empty(), "needs --fit PRESETS");
  needs(o.prior, !a->fit_hardware.empty() || a->crossval, "needs --fit PRESETS or --crossval");
  needs(o.min_rows, a->crossval, "needs --crossval");
  needs(o.baseline_fit_on, a->baseline, "needs --baseline");
}

// The rule of thumb (--baseline), fitted in-sample or on another CSV, scored on the same rows;
// *unscored: rows on GPU types its fit never saw.
planner::ValidationSummary score_baseline(const ValidateArgs& args, const std::vector<planner::PublishedRow>& rows,
                                          const std::vector<planner::ValidationCase>& cases,
                                          planner::HardwareSet& hardware,
                                          const std::vector<planner::Annotation>& annotations, int* unscored) {
  const ValidateArgs* a = &args;
  planner::RuleOfThumb rule;
  if (a->baseline_fit_on.empty()) {
    rule = planner::fit_rule_of_thumb(rows, cases, hardware);
  } else {
    std::vector<planner::PublishedRow> fit_rows = planner::read_published_csv(a->baseline_fit_on, annotations);
    const auto fit_cases = planner::resolve_cases(fit_rows, hardware);
    rule = planner::fit_rule_of_thumb(fit_rows, fit_cases, hardware);
  }
  return planner::score_rule_of_thumb(
      rule, rows, cases, hardware,
      "rule of thumb (one MFU per GPU type, fitted on " +
          (a->baseline_fit_on.empty() ? std::string("these rows") : a->baseline_fit_on) + ")",
      *unscored);
}

// validate --published: the rows predicted (after --fit, or as --crossval), scored, compared in
// pairs, and printed; every row skipped is a failed check.
void run_published(ValidateArgs* a, const CLI::Option* min_pairs) {
  if (!a->reference_run.empty())
    throw UsageError("validate: --reference-run applies to run directories (RUN_DIR...); a published CSV is "
                     "scored from every row's own source as reference (its last line)");
  if (a->published.empty()) throw UsageError("validate: give RUN_DIR... or --published FILE.csv");
  if (!a->crossval && (!a->holdout.empty() || !a->write_bands.empty() || !a->out_of_sample.empty()))
    throw UsageError("validate: --holdout, --write-bands and --out-of-sample need --crossval");
  if (!a->pairs && !a->write_decisions.empty()) throw UsageError("validate: --write-decisions needs --pairs");
  if (min_pairs->count() > 0 && a->write_decisions.empty())
    throw UsageError("validate: --min-pairs applies to --write-decisions FILE");
  std::vector<planner::Annotation> annotations;
  if (!a->annotations.empty()) annotations = planner::read_annotations(a->annotations);
  std::vector<planner::PublishedRow> rows = planner::read_published_csv(a->published, annotations);
  planner::HardwareSet hardware;
  const auto cases = planner::resolve_cases(rows, hardware);
  if (a->crossval) {
    if (!a->fit_hardware.empty() || a->json || a->baseline || a->pairs)
      throw UsageError(
          "validate --crossval: refits the shipped keys itself; --fit, --json, --baseline and --pairs do not apply");
    std::string command = "shardcast validate --crossval --published " + a->published;
    if (!a->annotations.empty()) command += " --annotations " + a->annotations;
    if (!a->holdout.empty()) command += " --holdout " + a->holdout;
    if (a->prior > 0) command += fmt::format(" --prior {}", a->prior);
    command += fmt::format(" --min-rows {} --write-bands {}", a->min_rows, a->write_bands);
    return run_crossval(*a, rows, cases, hardware, annotations, command);
  }
  if (!a->fit_hardware.empty()) fit_first(*a, rows, cases, annotations, hardware);
  const planner::ValidationResult v = planner::validate_cases(rows, cases, hardware);
  planner::ValidationSummary rule_summary;
  int rule_unscored = 0;
  if (a->baseline) rule_summary = score_baseline(*a, rows, cases, hardware, annotations, &rule_unscored);
  std::vector<planner::ConfigPair> pairs;
  if (a->pairs) pairs = planner::find_pairs(rows, cases, v);
  if (!a->write_decisions.empty()) {
    planner::DecisionTable t = planner::build_decision_table(pairs, a->min_pairs);
    t.command = "shardcast validate --published " + a->published;
    if (!a->annotations.empty()) t.command += " --annotations " + a->annotations;
    t.command += fmt::format(" --pairs --min-pairs {} --write-decisions {}", a->min_pairs, a->write_decisions);
    if (t.bands.empty())
      throw InputError(fmt::format("{}: no pairs of runs one setting apart: nothing to write to {}", a->published,
                                   a->write_decisions));
    write_file_atomic(a->write_decisions, planner::write_decisions_toml(t));
    fmt::print(stderr, "wrote {} ({} bands)\n", a->write_decisions, t.bands.size());
  }
  print_published(*a, rows, v, pairs, rule_summary, rule_unscored);
  // Every row skipped: nothing was compared, which is a failed check, not an empty success.
  if (!rows.empty() && v.n_skipped == int(rows.size()))
    throw InputError(fmt::format("{}: no row could be predicted ({} skipped, each with its reason above)",
                                 a->published, v.n_skipped));
}

void register_validate(CLI::App& app) {
  auto a = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "Predict published runs and compare with what they measured");
  const ValidateOptions o = add_validate_flags(cmd, a.get());
  cmd->callback([a, o] {
    check_validate_flags(*a, o);
    if (!a->run_dirs.empty()) {
      if (a->pairs) throw UsageError("validate: --pairs compares rows of --published FILE.csv, not run directories");
      if (!a->fit_hardware.empty() || a->baseline || a->crossval || !a->annotations.empty())
        throw UsageError("validate RUN_DIR...: --fit, --baseline, --crossval and --annotations apply to --published FILE.csv");
      return print_run_dirs(a->run_dirs, a->json, a->markdown, a->hardware, a->reference_run);
    }
    run_published(a.get(), o.min_pairs);
  });
}

}  // namespace shardcast::cli
