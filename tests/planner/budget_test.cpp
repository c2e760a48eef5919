// budget(): the cheapest plan is never beaten by another row on the same criterion (GPU-hours
// or cost), every row that meets the deadline is ranked, the smallest cluster is the smallest,
// a deadline that cannot be met says by how much, the 1σ band brackets the date, the breaks
// agree with the rows' flags, and bad prices are usage errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "planner/decide/budget.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {
namespace {

BudgetOptions options(double deadline_days) {
  BudgetOptions o;
  o.scale.space.model = load_model("llama3-8b");
  o.scale.space.model_preset = "llama3-8b";
  o.scale.space.seq_len = 8192;
  o.scale.from = 8;
  o.scale.to = 1024;
  o.scale.tokens = 1e12;
  o.scale.reliability = load_reliability("default");
  o.gpu_types = {"H100-80GB-SXM", "H200-141GB-SXM"};
  o.deadline_days = deadline_days;
  return o;
}

void expect_cheapest_unbeaten(const BudgetResult& r, double deadline) {
  ASSERT_FALSE(r.ranked.empty());
  const double best = budget_criterion(r.rows[r.ranked.front()], r.by_cost);
  for (size_t k = 0; k < r.ranked.size(); ++k) {
    const BudgetRow& row = r.rows[r.ranked[k]];
    EXPECT_TRUE(row.meets_deadline);
    EXPECT_LE(row.days, deadline);
    EXPECT_LE(best, budget_criterion(row, r.by_cost)) << row.gpu_type << " x " << row.point.gpus;
    if (k > 0) {
      EXPECT_LE(budget_criterion(r.rows[r.ranked[k - 1]], r.by_cost), budget_criterion(row, r.by_cost));
    }
  }
  // Every row that meets the deadline is ranked (top = 0), and no other.
  size_t meeting = 0;
  for (const auto& row : r.rows) meeting += row.point.feasible && row.days <= deadline;
  EXPECT_EQ(meeting, r.ranked.size());
}

TEST(Budget, CheapestByGpuHoursIsNeverBeaten) {
  const BudgetOptions o = options(30);
  const BudgetResult r = budget(o);
  EXPECT_FALSE(r.by_cost);
  EXPECT_EQ(r.rows.size(), 2u * 8u);  // 8..1024 on each type
  expect_cheapest_unbeaten(r, 30);
  EXPECT_GE(r.ranked.size(), 3u);
  // Smallest cluster: no ranked row has fewer GPUs.
  ASSERT_GE(r.smallest, 0);
  for (size_t i : r.ranked) EXPECT_GE(r.rows[i].point.gpus, r.rows[size_t(r.smallest)].point.gpus);
  EXPECT_TRUE(r.rows[size_t(r.smallest)].meets_deadline);
  EXPECT_EQ(r.shortfall_days, 0);
  // Cheapest per type: no ranked row of that type is cheaper.
  ASSERT_EQ(r.cheapest_per_type.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const long c = r.cheapest_per_type[k];
    ASSERT_GE(c, 0);
    EXPECT_EQ(r.rows[size_t(c)].gpu_type, o.gpu_types[k]);
    for (size_t i : r.ranked)
      if (r.rows[i].gpu_type == o.gpu_types[k]) {
        EXPECT_LE(r.rows[size_t(c)].gpu_hours, r.rows[i].gpu_hours);
      }
  }
}

TEST(Budget, CheapestByCostIsNeverBeatenAndCostIsHoursTimesPrice) {
  BudgetOptions o = options(30);
  o.price_per_gpu_hour = {{"H100-80GB-SXM", 2.0}, {"H200-141GB-SXM", 3.5}};
  const BudgetResult r = budget(o);
  EXPECT_TRUE(r.by_cost);
  expect_cheapest_unbeaten(r, 30);
  for (const auto& row : r.rows)
    if (row.point.feasible) {
      EXPECT_DOUBLE_EQ(row.cost, row.gpu_hours * o.price_per_gpu_hour.at(row.gpu_type));
    }
  // `top` keeps the head of the same ranking.
  o.top = 2;
  const BudgetResult t = budget(o);
  ASSERT_EQ(t.ranked.size(), 2u);
  EXPECT_EQ(t.ranked[0], r.ranked[0]);
  EXPECT_EQ(t.ranked[1], r.ranked[1]);
  EXPECT_EQ(t.smallest, r.smallest);
}

TEST(Budget, DaysIncludeFailuresAndTheBandBracketsThem) {
  const BudgetResult r = budget(options(30));
  for (const auto& row : r.rows) {
    if (!row.point.feasible) continue;
    SCOPED_TRACE(row.gpu_type + " x " + std::to_string(row.point.gpus));
    const double e = row.point.best.prediction.error_band_rel;
    ASSERT_GT(e, 0);
    EXPECT_GE(row.days, row.days_ideal);
    EXPECT_DOUBLE_EQ(row.days, row.days_ideal / row.point.goodput.goodput);
    EXPECT_DOUBLE_EQ(row.days_lo, row.days / (1 + e));
    EXPECT_DOUBLE_EQ(row.days_hi, row.days / (1 - e));
    EXPECT_LT(row.days_lo, row.days);
    EXPECT_GT(row.days_hi, row.days);
    // Paid GPU-hours are the wall time with failures on every GPU.
    EXPECT_NEAR(row.gpu_hours, row.days * 24 * row.point.gpus, 1e-9 * row.gpu_hours);
  }
}

TEST(Budget, UnmetDeadlineSaysByHowMuch) {
  const BudgetResult r = budget(options(0.5));  // 1T tokens of 8B in 12 hours on <= 1024 GPUs
  EXPECT_TRUE(r.ranked.empty());
  EXPECT_EQ(r.smallest, -1);
  ASSERT_GE(r.fastest, 0);
  const BudgetRow& f = r.rows[size_t(r.fastest)];
  EXPECT_NEAR(r.shortfall_days, f.days - 0.5, 1e-12);
  EXPECT_GT(r.shortfall_days, 0);
  for (const auto& row : r.rows)
    if (row.point.feasible) {
      EXPECT_GE(row.days, f.days);
    }
}

TEST(Budget, BreaksAreTheFirstFlaggedCounts) {
  BudgetOptions o = options(30);
  o.scale.to = 2048;             // 4Mi tokens at seq 8192 = 512 sequences: mb1 at 512, over at 1024
  o.scale.goodput_threshold = 0.999;
  o.scale.space.tps = o.scale.space.cps = o.scale.space.pps = {1};  // pure FSDP's batch wall
  const BudgetResult r = budget(o);
  ASSERT_EQ(r.breaks.size(), 2u);
  for (const auto& b : r.breaks) {
    SCOPED_TRACE(b.gpu_type);
    EXPECT_EQ(b.mb1_at, 512);
    EXPECT_EQ(b.batch_over_at, 1024);
    int first_low = 0;
    for (const auto& row : r.rows)
      if (row.gpu_type == b.gpu_type && row.point.goodput_low && !first_low) first_low = row.point.gpus;
    EXPECT_EQ(b.goodput_low_at, first_low);
    EXPECT_GT(first_low, 8);  // 99.9% holds on one node (an interruption every 6,300 h) but not up to 2048 GPUs
  }
}

TEST(Budget, BadPricesAndDeadlinesAreUsageErrors) {
  BudgetOptions o = options(30);
  o.price_per_gpu_hour = {{"H100-80GB-SXM", 2.0}};  // none for H200
  EXPECT_THROW(budget(o), UsageError);
  o.price_per_gpu_hour = {{"H100-80GB-SXM", 2.0}, {"H200-141GB-SXM", 3.0}, {"B200", 5.0}};  // B200 not searched
  EXPECT_THROW(budget(o), UsageError);
  o.price_per_gpu_hour = {{"H100-80GB-SXM", 0.0}, {"H200-141GB-SXM", 3.0}};
  EXPECT_THROW(budget(o), UsageError);
  o.price_per_gpu_hour.clear();
  o.deadline_days = 0;
  EXPECT_THROW(budget(o), UsageError);
  o.deadline_days = 30;
  o.gpu_types.clear();
  EXPECT_THROW(budget(o), UsageError);
  o.gpu_types = {"H100-80GB-SMX"};
  EXPECT_THROW(budget(o), ConfigError);
  o.gpu_types = {"H100-80GB-SXM", "H100-80GB-SXM"};
  EXPECT_THROW(budget(o), UsageError);
}

}  // namespace
}  // namespace shardcast::planner
