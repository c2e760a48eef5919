// Leave-one-source-out cross-validation of the fitted efficiency keys, and the error bands
// measured with it.
//
// What it is: for every source of the published rows (a source = one team / framework /
// version: source_key()), refit what the shipped presets fit (FitGroup: the presets of one GPU
// silicon share values; docs/cost-model.md §7) on the rows of every other source, predict the
// left-out rows, and collect the out-of-sample relative errors. build_bands() turns those
// errors into the BandTable (error_band.h) per GPU family and regime; coverage() counts the rows
// within 1σ and 2σ of the band the planner would state for them. carry_across_families()
// measures what a GPU without rows of its own gets: one family's fit on another's rows.
// What it is not: the fitter (fit.h) or the band lookup at prediction time (error_band.h).
// Functions are reentrant; leave_one_source_out copies the hardware presets it refits.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/evidence/error_band.h"
#include "planner/evidence/fit.h"
#include "planner/evidence/reference_run.h"
#include "planner/evidence/validate.h"

namespace shardcast::planner {

// One fit of the shipped procedure: keys fitted with values shared across the presets.
struct FitGroup {
  std::string family;                 // GPU family name, e.g. "A100 (GA100)"
  std::vector<std::string> hardware;  // presets fitted together (first ones have published rows)
  std::vector<std::string> params;    // efficiency keys fitted
  // Where every fit starts and what it is pulled towards (weight prior_weight on log(x/prior)):
  // values that do not come from the published rows, so a fold never starts from a fit that saw
  // the source it leaves out. Without it a fold left with a dozen rows fits seven keys to them.
  std::map<std::string, double> prior;
  double prior_weight = 0;
};
// Weight of the priors in the shipped procedure: a log-deviation of 1/w from a prior costs as
// much as one run predicted e-fold off (docs/cost-model.md §7).
inline constexpr double kShippedPriorWeight = 0.3;

// The procedure used for the shipped presets (docs/cost-model.md §7): A100 (both parts),
// H100-80GB (with fp8); the family also names the presets of the same silicon that take the
// fitted values without rows of their own (H100-96GB, H100-unspecified, H200, H800; A100-40GB, A800).
std::vector<FitGroup> shipped_fit_groups();

// The source of a row: the `source` column up to its first " (" — the document and its
// version, so the tables and sections of one document at one commit are one source (e.g.
// "mosaicml/llm-foundry scripts/train/benchmarking/README.md @5e85bd62d"); the `framework`
// column when there is no source.
std::string source_key(const PublishedRow& row);

struct CrossvalRow {
  size_t row = 0;               // index into the rows
  std::string row_id, source, hardware;
  std::string runtime;          // runtime profile (PlanOptions::runtime)
  BandRegime regime;
  double predicted_tps = 0, measured_tps = 0;
  double rel_err = 0;           // predicted / measured − 1, out of sample
};

struct CrossvalFold {
  std::string source;           // left out
  int n_rows = 0;               // rows of that source predicted
  std::vector<std::string> notes;  // per group, as fit_groups returns them
};

struct CrossvalResult {
  std::vector<CrossvalRow> rows;  // every row with a measured tokens/s, out of sample
  std::vector<CrossvalFold> folds;
};

// Fit every group on `cases` (from its prior), writing the values into `hardware`; returns one
// line per group: "family: refitted on N rows: key = value ..." (keys in the group's order, 4
// significant digits), or "family: no rows, preset values".
std::vector<std::string> fit_groups(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                                    HardwareSet& hardware, const std::vector<FitGroup>& groups,
                                    const LmOptions& lm = {});

// Leave each source out in turn, refit `groups` on the rest (fit_groups), predict the left-out
// source's rows. `hardware` must hold every case's preset.
CrossvalResult leave_one_source_out(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                                    const HardwareSet& hardware, const std::vector<FitGroup>& groups,
                                    const LmOptions& lm = {});

// Fitted fractions carried to another GPU family: for every ordered pair of groups (from, to),
// fit `from` alone on its rows (from its prior, as fit_groups), give `to`'s presets the values
// `from` fitted (a key `to` fits and `from` does not takes `to`'s prior) and predict `to`'s
// rows. This is what a GPU without published runs of its own gets: the Blackwell and AMD
// presets carry GH100's fitted fractions to their own measured ceilings (docs/cost-model.md
// §6–7); here it is measured where both families have rows. One fold per pair, named
// "from → to"; each row's `source` is its fold's name. A pair whose `from` has no rows is
// skipped (its fold notes say so).
CrossvalResult carry_across_families(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                                     const HardwareSet& hardware, const std::vector<FitGroup>& groups,
                                     const LmOptions& lm = {});

// Every row of `cv` as CSV (header row_id, source, hardware, runtime, checkpointing, scale,
// predicted_tokens_per_s_per_gpu, measured_tokens_per_s_per_gpu, err_tokens_per_s_pct; the
// names of `validate --json`), in cv.rows' order: the out-of-sample prediction of each row by
// the fit that never saw its source (`validate --crossval --out-of-sample FILE`).
std::string out_of_sample_csv(const CrossvalResult& cv);

// The out-of-sample rows as reference_pairs() groups them (source, hardware preset, runtime).
std::vector<ReferenceRow> reference_rows(const std::vector<CrossvalRow>& rows);

// The bands of the out-of-sample errors: per family, overall and per runtime / checkpointing /
// scale value with at least min_rows rows, and the reference-run band of their pairs.
BandTable build_bands(const std::vector<CrossvalRow>& rows, const std::vector<FitGroup>& groups, int min_rows);

struct Coverage {
  int n = 0, within_1sigma = 0, within_2sigma = 0, prior_only = 0;
  double frac1() const { return n ? double(within_1sigma) / n : 0; }
  double frac2() const { return n ? double(within_2sigma) / n : 0; }
};
// Nested: each source's errors against bands built without that source.
Coverage nested_coverage(const std::vector<CrossvalRow>& rows, const std::vector<FitGroup>& groups, int min_rows,
                         const HardwareSet& hardware);
// Errors `rows` against the bands of `t` (prior from each row's preset).
Coverage coverage(const std::vector<CrossvalRow>& rows, const BandTable& t, const HardwareSet& hardware);

}  // namespace shardcast::planner
