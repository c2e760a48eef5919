// configs/published/outside.csv: published FSDP2 runs the planner was never fitted on (see
// docs/validation.md "Outside runs"). Checks that the file parses, that every row is either
// predicted or skipped for the reason its row states, that no row repeats a row of
// calibration.csv or holdout.csv, and holds the accuracy measured on it as a regression bound.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "planner/published_csv.h"
#include "planner/validate.h"
#include "shared/config_io.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

std::string published(const char* name) { return std::string(SHARDCAST_TEST_PUBLISHED_DIR) + "/" + name; }

ValidationResult validate_outside() { return test::validate_published_file(published("outside.csv")); }

TEST(OutsideRuns, EveryRowIsPredictedOrSkippedForItsStatedReason) {
  const auto rows = read_published_csv(published("outside.csv"));
  ASSERT_EQ(rows.size(), 17u);
  std::set<std::string> ids;
  for (const auto& r : rows) EXPECT_TRUE(ids.insert(r.row_id).second) << "duplicate row_id " << r.row_id;

  const ValidationResult v = validate_outside();
  // Every row is in scope; the float8 row-wise rows are predicted with their recipe (fp8_key).
  const std::map<std::string, Fp8Recipe> recipe = {{"ao_h100_8b_8g_f8rowwise", Fp8Recipe::rowwise},
                                                   {"ao_mi300x_8b_8g_f8rowwise_gw_hp", Fp8Recipe::rowwise_with_gw_hp},
                                                   {"ao_mi300x_8b_8g_f8rowwise", Fp8Recipe::rowwise},
                                                   {"ao_h100_8b_8g_f8tensorwise_fp8ag", Fp8Recipe::tensorwise}};
  for (const auto& r : rows)
    if (recipe.count(r.row_id)) EXPECT_EQ(r.cfg.precision.fp8, recipe.at(r.row_id)) << r.row_id;
  int predicted = 0;
  for (const auto& r : v.rows) {
    if (recipe.count(r.row_id)) EXPECT_EQ(r.fp8, to_string(recipe.at(r.row_id))) << r.row_id;
    EXPECT_TRUE(r.skip_reason.empty()) << r.row_id << ": " << r.skip_reason;
    EXPECT_TRUE(r.has_tps) << r.row_id;
    EXPECT_TRUE(std::isfinite(r.predicted_tps) && r.predicted_tps > 0) << r.row_id;
    EXPECT_TRUE(r.fits) << r.row_id << ": every published run ran";
    EXPECT_GT(r.band_rel_1sigma, 0) << r.row_id << ": every prediction states its band";
    ++predicted;
  }
  EXPECT_EQ(predicted, 17);
  EXPECT_EQ(v.n_skipped, 0);
}

// (n_layers, d_model, seq_len, gpu_type, n_gpus, micro-batch, measured tokens/s/GPU) of each row.
using RunKey = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string, double>;
std::set<RunKey> run_keys(const std::string& path) {
  const auto records = parse_csv(read_text(path), path);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < records.at(0).size(); ++i) col[records[0][i]] = i;
  std::set<RunKey> keys;
  for (size_t i = 1; i < records.size(); ++i) {
    const auto& r = records[i];
    auto at = [&](const char* c) { return col.at(c) < r.size() ? r[col.at(c)] : std::string(); };
    const std::string tps = at("measured_tokens_per_sec_per_gpu");
    keys.insert({at("n_layers"), at("d_model"), at("seq_len"), at("gpu_type"), at("n_gpus"), at("micro_batch_per_gpu"),
                 tps.empty() ? -1.0 : std::stod(tps)});
  }
  return keys;
}

TEST(OutsideRuns, NoRowRepeatsACalibrationOrHoldoutRow) {
  const auto outside = run_keys(published("outside.csv"));
  EXPECT_EQ(outside.size(), 17u);
  for (const char* other : {"calibration.csv", "holdout.csv"}) {
    const auto theirs = run_keys(published(other));
    for (const auto& k : outside) EXPECT_FALSE(theirs.count(k)) << "a row of outside.csv repeats a row of " << other;
  }
}

TEST(OutsideRuns, AccuracyHoldsItsMeasuredBounds) {
  // Targets for runs never seen (issue targets, docs/validation.md): tokens/s/GPU MAPE ≤ 12 %, no
  // systematic sign, memory MAPE ≤ 8 % with no row predicted more than 5 % below its measured
  // value, ≥ 60 % of the rows inside their stated 1σ band and ≥ 90 % inside 2σ.
  // Regression bounds: what `shardcast validate --published configs/published/outside.csv`
  // measured with the float8 recipes' rows in scope (MAPE 11.72 %, bias +3.87 %, memory MAPE
  // 4.34 % over 7 rows, 16 / 17 within 1σ, 17 / 17 within 2σ), rounded up to the next 0.5 point
  // so that a float-level change does not trip them; a change of the cost model that moves them
  // further fails here on purpose. (Before the recipes: 14 rows, MAPE 9.85 %, bias +1.36 %; the
  // three row-wise rows added are over-predicted by 16-31 %, docs/validation.md.)
  const ValidationResult v = validate_outside();
  const ValidationSummary& s = v.overall;
  ASSERT_EQ(s.n, 17);
  EXPECT_LE(s.mape_tps, 12.0);
  EXPECT_LE(std::fabs(s.bias_tps), 4.0);
  EXPECT_GE(s.within_1sigma, 16);
  EXPECT_EQ(s.within_2sigma, 17);
  ASSERT_EQ(s.n_mem, 7);
  EXPECT_LE(s.mape_mem, 4.5);
  for (const auto& r : v.rows) {
    if (!r.skip_reason.empty() || !r.has_mem) continue;
    EXPECT_GE(r.err_mem_pct, -5.0) << r.row_id << ": an under-predicted peak is an OOM the user did not see coming";
  }
}

}  // namespace
}  // namespace shardcast::planner
