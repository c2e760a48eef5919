// Error bands of tokens/s: the table of cross-validated bands (configs/bands.toml) and the
// choice of one band for one prediction.
//
// What it is: BandTable — per GPU family (the presets that share fitted efficiency values),
// the 1σ relative error of tokens/s that leave-one-source-out cross-validation measured on the
// published runs (planner/evidence/crossval.h), overall and per regime (runtime, checkpointing, scale),
// each band with the rows it came from, and the band of a prediction carried from a reference
// run (reference_run.h); its TOML reader and writer; choose_band(), which picks
// the band the planner states for one configuration and says what it comes from, and falls
// back to the hardware preset's prior (error_band_rel) — saying "prior only" — for a GPU
// family or runtime with no measured run. What it is not: the cross-validation itself
// (crossval.h) or the prediction (plan.h).
// Threading: value types; shipped_bands() loads config_dir()/bands.toml once per process under
// a mutex and is then read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shared/train_config.h"

namespace shardcast::planner {

// Regime dimensions a band can be restricted to.
inline constexpr const char* kBandAll = "all";
inline constexpr const char* kBandRuntime = "runtime";
inline constexpr const char* kBandCheckpointing = "checkpointing";
inline constexpr const char* kBandScale = "scale";

struct ErrorBand {
  std::string family;                 // GPU family, e.g. "A100 (GA100)"
  std::vector<std::string> hardware;  // hardware presets of the family
  std::string dimension = kBandAll;   // all | runtime | checkpointing | scale
  std::string value;                  // e.g. "fms-fsdp", "full", "multi-node" ("" for all)
  double rel_1sigma = 0;              // band: rms of (predicted/measured − 1) out of sample  // fraction
  int n_rows = 0;
  std::vector<std::string> sources;   // source keys the rows came from
  std::vector<std::string> rows;      // row_ids
};

// The band of a prediction carried from a reference run of the same stack (reference_run.h):
// the out-of-sample rows' reference pairs (reference_pairs: b predicted with a as its reference,
// within one source, hardware preset and runtime), their rms with each group weighted equally.
struct ReferenceBand {
  double rel_1sigma = 0;  // 0 = not measured  // fraction
  int64_t n_pairs = 0;
  int n_groups = 0;
};

struct BandTable {
  std::string method;                 // how the bands were measured (free text, written)
  std::string command;                // the command that wrote them
  int min_rows = 0;                   // a regime band needs at least this many rows
  std::vector<ErrorBand> bands;
  ReferenceBand reference;            // TOML table [reference_run]
};

// What a prediction's band depends on.
struct BandRegime {
  std::string hardware;       // preset name
  std::string runtime;        // the runtime profile's framework (RuntimeSpec::framework)
  std::string checkpointing;  // none | selective | full
  std::string scale;          // single-node | multi-node
};
std::string checkpointing_regime(AcMode mode);  // none | selective (block or op level) | full
std::string scale_regime(int nodes);            // single-node | multi-node
// The regime of cfg (cluster.nodes completed) on a hardware preset, run by a runtime of
// `framework` (PlanOptions::framework): generations of one framework (torchtitan-2024-04,
// torchtitan) share its runtime band, since one generation alone has too few published runs.
BandRegime band_regime(const TrainConfig& cfg, const std::string& hardware, const std::string& framework);

struct BandChoice {
  double rel_1sigma = 0;
  std::string note;       // e.g. "±7% (1σ leave-one-source-out: A100 (GA100), runtime fms-fsdp, 12 runs)"
  bool prior_only = false;
};
// The band for `r`: the widest of the family's overall band and its runtime, checkpointing and
// scale bands that match r (regimes with fewer than min_rows rows are not in the table). A
// runtime with no band on the family is "prior only": the widest runtime band of the family. A
// hardware preset in no family gets the preset's prior (`prior_rel`, `prior_runs` measured runs
// behind it, e.g. the CPU profile's own runs; 0 = none: "prior only").
BandChoice choose_band(const BandTable& t, const BandRegime& r, double prior_rel, double prior_runs);

// The verdict on one comparison of predicted with measured: `rel_err` = predicted / measured − 1,
// `band_rel` the 1σ band stated for that prediction (fractions). "inside the stated 1σ band
// (±15%)" or "outside the stated 1σ band (±15%): +2.3σ"; band_rel <= 0: "no band stated".
std::string band_verdict(double rel_err, double band_rel);
// The same for a table cell: "in 1σ", "out +2.3σ", "-" without a band.
std::string band_verdict_short(double rel_err, double band_rel);

// TOML text <-> table. parse throws ConfigError naming `file` and the key.
BandTable parse_bands_toml(const std::string& text, const std::string& file);
std::string write_bands_toml(const BandTable& t);

// config_dir()/bands.toml, read once per process (ConfigError when missing or malformed).
const BandTable& shipped_bands();

}  // namespace shardcast::planner
