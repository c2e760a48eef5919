// The planner's measured decision error: how far its predicted throughput ratio between two runs
// one setting apart has been from the measured ratio (planner/evidence/pairs.h), per setting, over
// published runs it was never fitted on.
//
// What it is: the table configs/decisions.toml (written by `shardcast validate --published
// configs/published/outside.csv --annotations configs/published/annotations.csv --pairs
// --write-decisions configs/decisions.toml`): one band per setting with at least `min_pairs`
// pairs, and one over every pair; 1σ = root mean square of predicted/measured ratio − 1. `search`
// states it beside the gap between its winner and the next best: a gap inside it is a tie as far
// as published runs can tell. What it is not: the error band of one prediction (error_band.h:
// absolute tokens/s, leave-one-source-out), nor the pair finder (pairs.h).
// Threading: value types; shipped_decisions() loads config_dir()/decisions.toml once per process
// under a mutex and returns a reference that stays valid.
#pragma once

#include <string>
#include <vector>

#include "planner/evidence/pairs.h"

namespace shardcast::planner {

struct DecisionBand {
  std::string setting;   // pairs.h setting name, or kEveryPair (pairs.h)
  int n_pairs = 0;
  double rel_1sigma = 0;  // rms of predicted_ratio / measured_ratio − 1  // fraction
  std::vector<std::string> pairs;  // "row_a / row_b", the pairs it was measured on
};

struct DecisionTable {
  std::string method, command;
  int min_pairs = 4;
  std::vector<DecisionBand> bands;
  // The band of `setting` when the table has one, else the band over every pair; nullptr for an
  // empty table.
  const DecisionBand* band_for(const std::string& setting) const;
};

// Bands from the pairs of published runs (settings with fewer than min_pairs pairs only count in
// the band over every pair).
DecisionTable build_decision_table(const std::vector<ConfigPair>& pairs, int min_pairs);

// Strict TOML: unknown keys, a band whose n_pairs disagrees with its list, or a non-positive 1σ
// throw ConfigError naming the file and key.
DecisionTable parse_decisions_toml(const std::string& text, const std::string& file);
std::string write_decisions_toml(const DecisionTable& t);
const DecisionTable& shipped_decisions();

}  // namespace shardcast::planner
