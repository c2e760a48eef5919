// reference_pairs() (planner/evidence/reference_run.h) in n log n against the pair loop it
// replaced, kept here as the oracle: on random rows (several groups, duplicated rows, ties,
// rows without a figure) the counts are equal, within() counts exactly the same pairs, and
// MAPE, bias and the band agree to 1e-9 relative. A group of 100k rows, 10^10 pairs, which the
// loop could not finish in minutes (issue 52: 100k rows past 120 s), is summed here.
#include "planner/evidence/reference_run.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

namespace shardcast::planner {
namespace {

// The pair loop as it was (every ordered pair listed), the oracle.
struct Simple {
  int64_t n_pairs = 0;
  int n_groups = 0;
  double mape = 0, bias = 0, rel_1sigma = 0;
  std::vector<double> errors;
  int64_t within(double rel) const {
    int64_t n = 0;
    for (double e : errors) n += std::fabs(e) <= rel;
    return n;
  }
};

Simple simple_pairs(const std::vector<ReferenceRow>& rows) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::vector<Key> order;
  std::map<Key, std::vector<const ReferenceRow*>> by;
  for (const ReferenceRow& r : rows) {
    if (!(r.predicted_tps > 0) || !(r.measured_tps > 0)) continue;
    const Key k{r.source, r.hardware, r.runtime};
    if (!by.count(k)) order.push_back(k);
    by[k].push_back(&r);
  }
  Simple out;
  double group_ms_sum = 0, abs_sum = 0, sum = 0;
  for (const Key& k : order) {
    const auto& g = by.at(k);
    if (g.size() < 2) continue;
    double sq = 0;
    int n = 0;
    for (const ReferenceRow* a : g)
      for (const ReferenceRow* b : g) {
        if (a == b) continue;
        const double e = b->predicted_tps * (a->measured_tps / a->predicted_tps) / b->measured_tps - 1.0;
        out.errors.push_back(e);
        sq += e * e;
        abs_sum += std::fabs(e);
        sum += e;
        ++n;
      }
    group_ms_sum += sq / n;
    ++out.n_groups;
  }
  out.n_pairs = int64_t(out.errors.size());
  if (out.n_pairs > 0) {
    out.mape = 100 * abs_sum / out.n_pairs;
    out.bias = 100 * sum / out.n_pairs;
    out.rel_1sigma = std::sqrt(group_ms_sum / out.n_groups);
  }
  return out;
}

// Random rows: up to 6 groups of up to 300 rows, predicted 100..10000 tokens/s, measured
// within ±40 %; some rows repeated (ties), some exactly at their prediction, some unmeasured.
std::vector<ReferenceRow> random_rows(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> n_rows(0, 600), group(0, 5), kind(0, 9);
  std::uniform_real_distribution<double> pred(100, 10000), level(0.6, 1.4);
  const char* sources[] = {"a", "b", "c"};
  const char* runtimes[] = {"torchtitan", "fms-fsdp"};
  std::vector<ReferenceRow> rows;
  const int n = n_rows(rng);
  for (int i = 0; i < n; ++i) {
    const int g = group(rng);
    ReferenceRow r{sources[g % 3], "H100-80GB-SXM", runtimes[g / 3], pred(rng), 0};
    const int k = kind(rng);
    if (k == 0 && !rows.empty()) r = rows[std::uniform_int_distribution<size_t>(0, rows.size() - 1)(rng)];  // a tie
    else if (k == 1) r.measured_tps = r.predicted_tps;  // level exactly 1
    else if (k == 2) r.measured_tps = 0;                // unmeasured: skipped
    else r.measured_tps = r.predicted_tps * level(rng);
    rows.push_back(r);
  }
  return rows;
}

TEST(ReferencePairs, EqualsThePairLoopOnRandomRows) {
  std::mt19937_64 rng(52);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<ReferenceRow> rows = random_rows(rng);
    const Simple want = simple_pairs(rows);
    const ReferencePairs got = reference_pairs(rows);
    ASSERT_EQ(got.n_pairs, want.n_pairs) << trial;
    ASSERT_EQ(got.n_groups, want.n_groups) << trial;
    const auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); };
    EXPECT_PRED2(close, got.mape, want.mape) << trial;
    EXPECT_PRED2(close, got.bias, want.bias) << trial;
    EXPECT_PRED2(close, got.rel_1sigma, want.rel_1sigma) << trial;
    // Bands at 0 (the ties), at and around the errors that occur (boundaries), and wide.
    std::vector<double> bands = {0.0, 1e-12, 0.01, 0.0785, 0.157, 0.5, 10.0};
    for (size_t i = 0; i < want.errors.size() && i < 40; i += 7) {
      const double e = std::fabs(want.errors[i]);
      bands.insert(bands.end(), {e, std::nextafter(e, 0.0), std::nextafter(e, 1.0)});
    }
    for (double rel : bands) EXPECT_EQ(got.within(rel), want.within(rel)) << "trial " << trial << " band " << rel;
  }
}

TEST(ReferencePairs, HundredThousandRowsOfOneGroupInSeconds) {
  std::mt19937_64 rng(55);
  std::uniform_real_distribution<double> pred(100, 10000), level(0.8, 1.2);
  std::vector<ReferenceRow> rows;
  for (int i = 0; i < 100000; ++i) {
    const double p = pred(rng);
    rows.push_back({"s", "H100-80GB-SXM", "torchtitan", p, p * level(rng)});
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ReferencePairs p = reference_pairs(rows);
  const int64_t in_band = p.within(0.0785);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(p.n_pairs, int64_t(100000) * 99999);
  EXPECT_EQ(p.n_groups, 1);
  EXPECT_GT(in_band, 0);
  EXPECT_LT(in_band, p.n_pairs);
  // Levels uniform on [0.8, 1.2]: the pair errors are L_a/L_b − 1, mean E[L]·E[1/L] − 1 =
  // ln(1.5)/0.4 − 1 = +1.37 %; mean |error| 13.6 % (a direct sum over 3000 such levels: 13.65 %).
  EXPECT_NEAR(p.bias, 100 * (std::log(1.5) / 0.4 - 1), 0.1);
  EXPECT_NEAR(p.mape, 13.65, 0.3);
  EXPECT_LT(s, 20.0) << "a sort and binary searches: about 0.1 s on a 2-core VM";
}

}  // namespace
}  // namespace shardcast::planner
