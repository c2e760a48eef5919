// Least squares: the LM solver on a known curve, and the efficiency fit recovering a
// perturbed parameter from runs the model itself generated.
#include "planner/evidence/fit.h"

#include <cmath>

#include <gtest/gtest.h>

#include "planner/model/efficiency.h"
#include "shared/errors.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

TEST(Lm, FitsAnExponential) {
  // y = 2·exp(−0.7·t), exactly: the solver must find (2, 0.7).
  std::vector<double> t, y;
  for (int i = 0; i < 20; ++i) {
    t.push_back(0.25 * i);
    y.push_back(2.0 * std::exp(-0.7 * t.back()));
  }
  auto res = [&](const Eigen::VectorXd& x) {
    Eigen::VectorXd r(t.size());
    for (size_t i = 0; i < t.size(); ++i) r[int(i)] = x[0] * std::exp(-x[1] * t[i]) - y[i];
    return r;
  };
  Eigen::VectorXd x0(2);
  x0 << 1.0, 0.2;
  const LmResult r = levenberg_marquardt(res, x0);
  EXPECT_NEAR(r.x[0], 2.0, 1e-5);
  EXPECT_NEAR(r.x[1], 0.7, 1e-5);
  EXPECT_LT(r.cost_after, r.cost_before);
}

TEST(Fit, RecoversAPerturbedEfficiency) {
  // Synthetic "measurements" from the H100 preset, then start the fit from a wrong matmul_eff.
  HardwareSet hw;
  hw.emplace("H100-80GB-SXM", load_hardware("H100-80GB-SXM"));
  const double truth = hw.at("H100-80GB-SXM").efficiency.at("matmul_eff");
  std::vector<PublishedRow> rows;
  std::vector<ValidationCase> cases;
  int i = 0;
  for (const char* model : {"llama2-7b", "llama2-13b", "mpt-7b"}) {
    for (int s : {2048, 4096}) {
      PublishedRow r;
      r.cfg = test::make_config(model, "H100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::none, 1, s);
      r.tokens_per_s_per_gpu = plan(r.cfg, hw.at("H100-80GB-SXM")).tokens_per_s_per_gpu;
      rows.push_back(r);
      cases.push_back({size_t(i++), r.cfg, "H100-80GB-SXM"});
    }
  }
  hw.at("H100-80GB-SXM").efficiency["matmul_eff"] = 0.6;  // a fraction of the ceiling, inside [0.5, 1]
  FitSpec spec;
  spec.params = {"matmul_eff"};
  spec.hardware = {"H100-80GB-SXM"};
  const FitResult f = fit_efficiency(rows, cases, hw, spec);
  EXPECT_EQ(f.n_runs, 6);
  // The fit stops at a relative cost change of 1e-7; the parameter is then within ~1e-4.
  EXPECT_NEAR(f.values.at("matmul_eff"), truth, 1e-3);
  EXPECT_NEAR(hw.at("H100-80GB-SXM").efficiency.at("matmul_eff"), f.values.at("matmul_eff"), 0);
  EXPECT_LT(f.rms_log_after, 1e-3);
}

TEST(Fit, RejectsUnknownAndUnfittableKeys) {
  EXPECT_THROW(fit_bounds("no_such_key"), ConfigError);
  EXPECT_THROW(fit_bounds("error_band_rel"), UsageError);
  const FitBounds b = fit_bounds("matmul_eff");
  EXPECT_LT(b.lo, b.hi);
}

}  // namespace
}  // namespace shardcast::planner
