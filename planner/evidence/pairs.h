// Within-source pairs: two published runs of one source that differ in one setting, and how
// well the planner predicts the ratio of their throughputs.
//
// What it is: the decision check of `shardcast validate --published FILE --pairs`. A user picks
// between configurations (micro-batch, checkpointing, compile, fp8 recipe, GPU count, sharding);
// what matters is whether the planner gets the ratio between two of them right, and ranks them
// the way the measurement does. Two rows of one source (crossval.h source_key: one team,
// framework and version) ran on the same software and machines, so whatever shifts every run of
// that source cancels in their ratio and what is left is the effect of the setting that differs.
// A setting is a run.toml key of the row's resolved config (shared/config_schema.h, the schema
// table; keys that do not change a prediction — optimizer, schedule, data, checkpoint, metrics,
// comm, steps, seed — are left out), with the [model] shape as one setting; fp8's all-gather and
// saved-weight terms count with `precision.fp8`, `activation_checkpointing.ratio` with its mode,
// the HSDP shard size with the sharding strategy, cluster.nodes with cluster.gpus_per_node (the
// GPU count). Beside them, the runtime terms a row's own columns may set (validate.cpp
// resolve_cases: cross_entropy, rmsnorm, cudnn_attention, fp8_all_gather, fp8_weight_saved), as
// resolved for the row. Rows that differ in no setting at all pair under "none": the source measured a difference
// the planner cannot see.
// What it is not: the validation of single rows (validate.h) or the fit (fit.h). Functions are
// pure and reentrant.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "planner/evidence/published_csv.h"
#include "planner/evidence/reference_run.h"
#include "planner/evidence/validate.h"

namespace shardcast::planner {

// |measured ratio − 1| below this is a tie: the source does not rank the two runs.
inline constexpr double kPairTie = 0.02;
// The name of the summary (and decision band) over every pair.
inline constexpr const char* kEveryPair = "every pair";

struct ConfigPair {
  std::string source;        // source_key of both rows
  std::string setting;       // the one setting that differs ("training.micro_batch", ...), or "none"
  std::string row_a, row_b;  // row ids; a comes first in the CSV
  std::string value_a, value_b;  // the setting's value in each ("" for "none")
  double measured_ratio = 0;    // measured tokens/s/GPU of b over a
  double predicted_ratio = 0;   // predicted tokens/s/GPU of b over a
  double err = 0;               // predicted_ratio / measured_ratio − 1  // fraction
  bool decided = false;         // |measured_ratio − 1| ≥ kPairTie
  bool order_right = false;     // decided, and the prediction ranks b against a the same way
};

struct PairSummary {
  std::string setting;  // or "every pair"
  int n = 0;
  double mape = 0;       // mean |err|  // %
  double bias = 0;       // mean err  // %
  double max_abs = 0;    // %
  // The same MAPE for a prediction of no difference (ratio 1): how large the setting's effect
  // is, the yardstick of the planner's.  // %
  double mape_no_difference = 0;
  int decided = 0, order_right = 0;
};

// The run.toml settings of a resolved config that a prediction reads, as key → value in schema
// order, the [model] shape as the one setting "model".
std::vector<std::pair<std::string, std::string>> row_settings(const TrainConfig& resolved);

// Every pair of predicted rows with a measured tokens/s that share a source and differ in at
// most one setting. `result` is validate_cases(rows, cases, ...) for the same rows and cases.
std::vector<ConfigPair> find_pairs(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                                   const ValidationResult& result);

// The settings (as ConfigPair::setting names them) in which two resolved configs differ, from
// row_settings alone (runtime-term columns of published rows are not in a TrainConfig).
std::set<std::string> settings_differing(const TrainConfig& a, const TrainConfig& b);

// One summary per setting (settings in first-seen order), then one over every pair (kEveryPair).
std::vector<PairSummary> summarize_pairs(const std::vector<ConfigPair>& pairs);

// The absolute tokens/s error of the predicted rows split into each source's level and the
// spread around it, over the sources (source_key) with at least two predicted rows: `level` =
// the rows' mean |their source's mean error|, `within` = the rows' mean |error − their source's
// mean| · sqrt(n / (n − 1)) (a source's mean takes one of its n degrees of freedom), `mape` = the
// same rows' mean |error|. `within` is what the pairs see (the planner's response to the settings
// a source varies); `level` is what every run of a source shares (its stack, machines, power,
// measurement). All in %.
struct SourceLevelSplit {
  int sources = 0, rows = 0;
  double mape = 0, level = 0, within = 0;  // %
};
SourceLevelSplit source_level_split(const std::vector<PublishedRow>& rows, const ValidationResult& result);

// The predicted rows with a measured tokens/s as reference_pairs() (reference_run.h) groups
// them: source_key, hardware preset, runtime profile.
std::vector<ReferenceRow> reference_rows(const std::vector<PublishedRow>& rows, const ValidationResult& result);

void to_json(nlohmann::json& j, const ConfigPair& p);
void to_json(nlohmann::json& j, const PairSummary& s);

}  // namespace shardcast::planner
