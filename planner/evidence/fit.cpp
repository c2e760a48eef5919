#include "planner/evidence/predict.h"
#include "planner/evidence/fit.h"

#include <algorithm>
#include <cmath>

#include "planner/model/efficiency.h"
#include "shared/errors.h"

namespace shardcast::planner {

LmResult levenberg_marquardt(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& residuals,
                             const Eigen::VectorXd& x0, const LmOptions& opt) {
  LmResult res;
  Eigen::VectorXd x = x0;
  Eigen::VectorXd r = residuals(x);
  double cost = 0.5 * r.squaredNorm();
  res.cost_before = cost;
  double lambda = 1e-3;
  const int n = int(x.size());
  bool converged = false;
  for (int it = 0; it < opt.max_iterations && !converged; ++it) {
    res.iterations = it + 1;
    Eigen::MatrixXd J(r.size(), n);
    for (int k = 0; k < n; ++k) {
      Eigen::VectorXd xk = x;
      const double h = opt.fd_step * std::max(1.0, std::fabs(x[k]));
      xk[k] += h;
      J.col(k) = (residuals(xk) - r) / h;
    }
    const Eigen::MatrixXd JtJ = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 25 && !improved; ++tries) {
      Eigen::MatrixXd A = JtJ;
      A.diagonal() += lambda * (JtJ.diagonal().array() + 1e-12).matrix();
      const Eigen::VectorXd step = A.ldlt().solve(-g);
      const Eigen::VectorXd xn = x + step;
      const Eigen::VectorXd rn = residuals(xn);
      const double cn = 0.5 * rn.squaredNorm();
      if (std::isfinite(cn) && cn < cost) {
        const double rel = (cost - cn) / std::max(cost, 1e-300);
        x = xn;
        r = rn;
        cost = cn;
        lambda = std::max(lambda / 3.0, 1e-9);
        improved = true;
        converged = rel < opt.tolerance;
      } else {
        lambda *= 4.0;
      }
    }
    if (!improved) break;
  }
  res.x = x;
  res.cost_after = cost;
  return res;
}

FitBounds fit_bounds(const std::string& key) {
  // Physical ranges (docs/cost-model.md §Fitting): compute and HBM efficiencies are fractions
  // of the GPU's measured ceilings (at most 1); the others are fractions of a datasheet rate no
  // tool or paper reports outside these; overheads are host times per unit / step.
  static const std::map<std::string, FitBounds> kBounds = {
      {"matmul_eff", {0.5, 1.0}},
      {"matmul_dim_half", {0, 512}},
      {"fp8_matmul_eff", {0.25, 1.0}},
      {"attention_eff", {0.15, 1.0}},
      {"attention_tile", {0, 256}},
      {"hbm_eff", {0.4, 1.0}},
      {"compile_elementwise_factor", {0.3, 1.0}},
      {"unit_overhead_s", {0, 0.005}},
      {"step_overhead_s", {0, 2.0}},
      {"intra_node_bw_eff", {0.4, 0.95}},
      {"inter_node_bw_eff", {0.4, 1.0}},
      {"collective_base_latency_s", {0, 0.001}},
      {"overlap_compute_slowdown", {0, 1.0}},
  };
  auto it = kBounds.find(key);
  if (it == kBounds.end()) {
    check_efficiency_key(key, "--fit-params");  // an unknown key: ConfigError with the closest one
    throw UsageError("efficiency parameter '" + key + "' is not fittable (memory terms and the error band are not)");
  }
  return it->second;
}

FitResult fit_efficiency(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                         HardwareSet& hardware, const FitSpec& spec) {
  if (spec.params.empty()) throw UsageError("no parameters to fit");
  for (const auto& k : spec.params) fit_bounds(k);  // unknown or not fittable: throws
  std::vector<const ValidationCase*> used;
  for (const auto& c : cases) {
    const bool hw_match = std::find(spec.hardware.begin(), spec.hardware.end(), c.hardware) != spec.hardware.end();
    if (hw_match && rows[c.row].tokens_per_s_per_gpu && *rows[c.row].tokens_per_s_per_gpu > 0)
      used.push_back(&c);
  }
  if (used.empty()) throw UsageError("no measured runs on the hardware to fit");
  for (const auto& h : spec.hardware)
    if (!hardware.count(h)) throw UsageError("hardware '" + h + "' is not loaded");

  const int np = int(spec.params.size());
  const HardwareSpec& first = hardware.at(spec.hardware.front());
  std::vector<double> start;
  for (const auto& k : spec.params) start.push_back(first.efficiency_param(k));
  auto apply = [&](const std::vector<double>& v) {
    for (const auto& h : spec.hardware)
      for (int k = 0; k < np; ++k) hardware.at(h).efficiency[spec.params[k]] = v[size_t(k)];
  };
  auto data = [&](const std::vector<double>& v) {
    apply(v);
    Eigen::VectorXd r(Eigen::Index(used.size()));
    for (size_t i = 0; i < used.size(); ++i) {
      const ValidationCase& c = *used[i];
      const double pred = predict(c.cfg, hardware.at(c.hardware), c.options).tokens_per_s_per_gpu;
      r[Eigen::Index(i)] = std::log(pred / *rows[c.row].tokens_per_s_per_gpu);
    }
    return r;
  };
  BoundedFitOptions bo;
  bo.prior_weight = spec.prior_weight;
  bo.lm = spec.lm;
  const BoundedFitResult f = fit_bounded(spec.params, start, data, bo);
  apply(f.values);
  FitResult out;
  out.n_runs = int(used.size());
  out.iterations = f.lm.iterations;
  out.rms_log_before = std::sqrt(2.0 * f.lm.cost_before / f.n_residuals);
  out.rms_log_after = std::sqrt(2.0 * f.lm.cost_after / f.n_residuals);
  for (int k = 0; k < np; ++k) out.values[spec.params[k]] = f.values[size_t(k)];
  return out;
}

BoundedFitResult fit_bounded(const std::vector<std::string>& keys, const std::vector<double>& start,
                             const std::function<Eigen::VectorXd(const std::vector<double>&)>& data,
                             const BoundedFitOptions& opt) {
  const int np = int(keys.size());
  std::vector<FitBounds> bounds;
  Eigen::VectorXd x0(np);
  for (int k = 0; k < np; ++k) {
    bounds.push_back(fit_bounds(keys[size_t(k)]));
    const FitBounds& b = bounds.back();
    // Start inside the range: on a bound the logistic map is flat (no gradient; the fit never moves).
    const double v = std::clamp(start[size_t(k)], b.lo, b.hi);
    const double u = std::clamp((v - b.lo) / (b.hi - b.lo), opt.start_margin, 1 - opt.start_margin);
    x0[k] = std::log(u / (1 - u));
  }
  auto values = [&](const Eigen::VectorXd& x) {
    std::vector<double> v(static_cast<size_t>(np));
    for (int k = 0; k < np; ++k) v[size_t(k)] = bounds[k].lo + (bounds[k].hi - bounds[k].lo) / (1.0 + std::exp(-x[k]));
    return v;
  };
  const std::vector<double> v0 = values(x0);
  const bool prior = opt.prior_weight > 0;
  int n_data = -1;
  auto residuals = [&](const Eigen::VectorXd& x) {
    const std::vector<double> v = values(x);
    const Eigen::VectorXd d = data(v);
    n_data = int(d.size());
    Eigen::VectorXd r(d.size() + (prior ? np : 0));
    r.head(d.size()) = d;
    if (prior)
      for (int k = 0; k < np; ++k)
        r[d.size() + k] = opt.prior_weight * std::log(v[size_t(k)] / std::max(v0[size_t(k)], 1e-12));
    return r;
  };
  BoundedFitResult out;
  out.lm = levenberg_marquardt(residuals, x0, opt.lm);
  if (opt.also_from_middle) {
    // From a start near a bound the logistic map is nearly flat, so the first Gauss-Newton step
    // can overshoot to the far bound and stall there; the middle of every range is a second start.
    const LmResult mid = levenberg_marquardt(residuals, Eigen::VectorXd::Zero(np), opt.lm);
    if (mid.cost_after < out.lm.cost_after) out.lm = mid;
  }
  out.values = values(out.lm.x);
  out.n_residuals = n_data + (prior ? np : 0);
  return out;
}

}  // namespace shardcast::planner
