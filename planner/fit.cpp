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
  for (int it = 0; it < opt.max_iterations; ++it) {
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
    for (int tries = 0; tries < 10 && !improved; ++tries) {
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
        if (rel < opt.tolerance) it = opt.max_iterations;  // converged
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
  Eigen::VectorXd x0(np);
  for (int k = 0; k < np; ++k) {
    const double v = first.efficiency_param(spec.params[k]);
    if (v <= 0) throw std::invalid_argument("parameter '" + spec.params[k] + "' must start > 0 (fitted in log space)");
    x0[k] = std::log(v);
  }
  auto apply = [&](const Eigen::VectorXd& x) {
    for (const auto& h : spec.hardware)
      for (int k = 0; k < np; ++k) hardware.at(h).efficiency[spec.params[k]] = std::exp(x[k]);
  };
  const int nr = int(used.size()) + (spec.prior_weight > 0 ? np : 0);
  auto residuals = [&](const Eigen::VectorXd& x) {
    apply(x);
    Eigen::VectorXd r(nr);
    for (size_t i = 0; i < used.size(); ++i) {
      const ValidationCase& c = *used[i];
      const double pred = plan(c.cfg, hardware.at(c.hardware)).tokens_per_s_per_gpu;
      r[int(i)] = std::log(pred / *rows[c.row].tokens_per_s_per_gpu);
    }
    if (spec.prior_weight > 0)
      for (int k = 0; k < np; ++k) r[int(used.size()) + k] = spec.prior_weight * (x[k] - x0[k]);
    return r;
  };
  const LmResult lm = levenberg_marquardt(residuals, x0, spec.lm);
  apply(lm.x);
  FitResult out;
  out.n_runs = int(used.size());
  out.iterations = lm.iterations;
  out.rms_log_before = std::sqrt(2.0 * lm.cost_before / nr);
  out.rms_log_after = std::sqrt(2.0 * lm.cost_after / nr);
  for (int k = 0; k < np; ++k) out.values[spec.params[k]] = std::exp(lm.x[k]);
  return out;
}

}  // namespace shardcast::planner
