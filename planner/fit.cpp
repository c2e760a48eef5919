#include "planner/fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "planner/efficiency.h"

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
  if (it == kBounds.end()) throw std::invalid_argument("efficiency parameter '" + key + "' is not fittable");
  return it->second;
}

FitResult fit_efficiency(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                         HardwareSet& hardware, const FitSpec& spec) {
  if (spec.params.empty()) throw std::invalid_argument("no parameters to fit");
  for (const auto& k : spec.params) {
    const auto& keys = efficiency_keys();
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      throw std::invalid_argument("unknown efficiency parameter '" + k + "'");
  }
  std::vector<const ValidationCase*> used;
  for (const auto& c : cases) {
    const bool hw_match = std::find(spec.hardware.begin(), spec.hardware.end(), c.hardware) != spec.hardware.end();
    if (hw_match && rows[c.row].tokens_per_s_per_gpu && *rows[c.row].tokens_per_s_per_gpu > 0)
      used.push_back(&c);
  }
  if (used.empty()) throw std::invalid_argument("no measured runs on the hardware to fit");
  for (const auto& h : spec.hardware)
    if (!hardware.count(h)) throw std::invalid_argument("hardware '" + h + "' is not loaded");

  const int np = int(spec.params.size());
  const HardwareSpec& first = hardware.at(spec.hardware.front());
  // Each parameter lives in its physical range [lo, hi] (fit_bounds): value = lo + (hi−lo)·σ(x).
  std::vector<FitBounds> bounds;
  Eigen::VectorXd x0(np);
  for (int k = 0; k < np; ++k) {
    bounds.push_back(fit_bounds(spec.params[k]));
    const FitBounds& b = bounds.back();
    const double v = std::clamp(first.efficiency_param(spec.params[k]), b.lo, b.hi);
    const double u = std::clamp((v - b.lo) / (b.hi - b.lo), 1e-4, 1 - 1e-4);
    x0[k] = std::log(u / (1 - u));
  }
  auto value = [&](const Eigen::VectorXd& x, int k) {
    return bounds[k].lo + (bounds[k].hi - bounds[k].lo) / (1.0 + std::exp(-x[k]));
  };
  auto apply = [&](const Eigen::VectorXd& x) {
    for (const auto& h : spec.hardware)
      for (int k = 0; k < np; ++k) hardware.at(h).efficiency[spec.params[k]] = value(x, k);
  };
  const int nr = int(used.size()) + (spec.prior_weight > 0 ? np : 0);
  auto residuals = [&](const Eigen::VectorXd& x) {
    apply(x);
    Eigen::VectorXd r(nr);
    for (size_t i = 0; i < used.size(); ++i) {
      const ValidationCase& c = *used[i];
      const double pred = plan(c.cfg, hardware.at(c.hardware), c.options).tokens_per_s_per_gpu;
      r[int(i)] = std::log(pred / *rows[c.row].tokens_per_s_per_gpu);
    }
    if (spec.prior_weight > 0)
      for (int k = 0; k < np; ++k)
        r[int(used.size()) + k] = spec.prior_weight * std::log(value(x, k) / std::max(value(x0, k), 1e-12));
    return r;
  };
  const LmResult lm = levenberg_marquardt(residuals, x0, spec.lm);
  apply(lm.x);
  FitResult out;
  out.n_runs = int(used.size());
  out.iterations = lm.iterations;
  out.rms_log_before = std::sqrt(2.0 * lm.cost_before / nr);
  out.rms_log_after = std::sqrt(2.0 * lm.cost_after / nr);
  for (int k = 0; k < np; ++k) out.values[spec.params[k]] = value(lm.x, k);
  return out;
}

}  // namespace shardcast::planner
