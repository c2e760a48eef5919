// The decision error table (planner/evidence/decision_error.h): its bands from pairs, the fallback to the
// band over every pair, the strict TOML reader, and the shipped configs/decisions.toml against
// the pairs of outside.csv recomputed here.
#include "planner/evidence/decision_error.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "planner/evidence/published_csv.h"
#include "planner/evidence/validate.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

ConfigPair pair_of(const std::string& setting, const std::string& a, double err) {
  ConfigPair p;
  p.setting = setting;
  p.row_a = a;
  p.row_b = a + "'";
  p.err = err;
  return p;
}

// 1σ is the root mean square of the ratio errors, by hand: fp8 sqrt((0.1² + 0.2² + 0.2² + 0.4²)/4)
// = 0.25; every pair adds the compile pair's 0.3 to the sum of squares over 5.
TEST(DecisionError, BandsAreTheRmsOfTheRatioErrors) {
  const std::vector<ConfigPair> pairs = {pair_of("precision.fp8", "a", 0.1), pair_of("precision.fp8", "b", -0.2),
                                         pair_of("precision.compile", "c", 0.3), pair_of("precision.fp8", "d", 0.2),
                                         pair_of("precision.fp8", "e", -0.4)};
  const DecisionTable t = build_decision_table(pairs, 4);
  ASSERT_EQ(t.bands.size(), 2u);  // compile has one pair: only in the band over every pair
  EXPECT_EQ(t.bands[0].setting, "precision.fp8");
  EXPECT_EQ(t.bands[0].n_pairs, 4);
  EXPECT_NEAR(t.bands[0].rel_1sigma, 0.25, 1e-15);
  EXPECT_EQ(t.bands[1].setting, kEveryPair);
  EXPECT_NEAR(t.bands[1].rel_1sigma, std::sqrt((0.01 + 0.04 + 0.09 + 0.04 + 0.16) / 5), 1e-15);
  EXPECT_EQ(t.band_for("precision.fp8"), &t.bands[0]);
  EXPECT_EQ(t.band_for("precision.compile"), &t.bands[1]);  // too few pairs of its own
  EXPECT_EQ(t.band_for("training.micro_batch"), &t.bands[1]);
  EXPECT_EQ(DecisionTable{}.band_for("precision.fp8"), nullptr);
}

TEST(DecisionError, TomlRoundTripAndStrictKeys) {
  DecisionTable t = build_decision_table({pair_of("x", "a", 0.05), pair_of("x", "b", -0.07)}, 2);
  t.command = "shardcast validate --pairs";
  const DecisionTable back = parse_decisions_toml(write_decisions_toml(t), "d.toml");
  EXPECT_EQ(back.command, t.command);
  EXPECT_EQ(back.min_pairs, 2);
  ASSERT_EQ(back.bands.size(), t.bands.size());
  for (size_t i = 0; i < t.bands.size(); ++i) {
    EXPECT_EQ(back.bands[i].setting, t.bands[i].setting);
    EXPECT_DOUBLE_EQ(back.bands[i].rel_1sigma, t.bands[i].rel_1sigma);
    EXPECT_EQ(back.bands[i].pairs, t.bands[i].pairs);
  }
  EXPECT_THROW(parse_decisions_toml("min_pairs = 4\nbogus = 1\n", "d.toml"), ConfigError);
  EXPECT_THROW(parse_decisions_toml("bogus = 1\n", "d.toml"), ConfigError);  // min_pairs missing
  EXPECT_THROW(parse_decisions_toml("min_pairs = 4\n[[band]]\nsetting = 'x'\nrel_1sigma = 0.1\nn_pairs = 2\n"
                                    "pairs = ['a / b']\n",
                                    "d.toml"),
               ConfigError);  // n_pairs disagrees with its list
  EXPECT_THROW(parse_decisions_toml("min_pairs = 4\n[[band]]\nsetting = 'x'\nrel_1sigma = 0\nn_pairs = 1\n"
                                    "pairs = ['a / b']\n",
                                    "d.toml"),
               ConfigError);
  try {
    parse_decisions_toml("min_pairs = 4\n[[band]]\nsetting = 'x'\nrel_1sigma = 0.1\nn_pairs = 1\npairs = ['a / b']\n"
                         "colour = 'red'\n",
                         "d.toml");
    FAIL() << "an unknown key in a band was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("colour"), std::string::npos) << e.what();
  }
}

// The shipped file is what its command computes from today's planner on outside.csv: the same
// pairs and the same 1σ (written with full precision: 1e-12 relative).
TEST(DecisionError, ShippedTableIsTheOutsidePairsOfTodaysPlanner) {
  const DecisionTable& shipped = shipped_decisions();
  auto rows = read_published_csv(std::string(SHARDCAST_TEST_PUBLISHED_DIR) + "/outside.csv",
                                 read_annotations(std::string(SHARDCAST_TEST_PUBLISHED_DIR) + "/annotations.csv"));
  HardwareSet hw;
  const auto cases = resolve_cases(rows, hw);
  const auto v = validate_cases(rows, cases, hw);
  const DecisionTable now = build_decision_table(find_pairs(rows, cases, v), shipped.min_pairs);
  ASSERT_EQ(shipped.bands.size(), now.bands.size()) << "rerun the command in configs/decisions.toml";
  for (size_t i = 0; i < now.bands.size(); ++i) {
    EXPECT_EQ(shipped.bands[i].setting, now.bands[i].setting);
    EXPECT_EQ(shipped.bands[i].pairs, now.bands[i].pairs);
    EXPECT_NEAR(shipped.bands[i].rel_1sigma, now.bands[i].rel_1sigma, 1e-12 * now.bands[i].rel_1sigma)
        << now.bands[i].setting << ": rerun the command in configs/decisions.toml";
  }
}

}  // namespace
}  // namespace shardcast::planner
