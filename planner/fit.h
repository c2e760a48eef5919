// Least-squares fitting of efficiency parameters to measured runs (Levenberg–Marquardt, Eigen).
//
// What it is: (1) a generic LM solver over a residual function, and (2) the fit of named
// [efficiency] keys of one or more hardware presets (values tied across them, e.g. the two
// A100 parts share silicon) to measured tokens/s: residual = log(predicted / measured) per run,
// each parameter kept inside its physical range by a logistic map (fit_bounds), an optional
// prior pulling each one towards its starting value. `shardcast validate --fit` and a later `calibrate`
// on the trainer's measured runs both use it. What it is not: where values are stored (the
// caller writes them into the preset). Functions are reentrant.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "planner/validate.h"

namespace shardcast::planner {

struct LmOptions {
  int max_iterations = 60;
  double tolerance = 1e-7;      // stop when the relative cost change is below this
  double fd_step = 1e-4;        // forward-difference step on each parameter
};
struct LmResult {
  Eigen::VectorXd x;
  double cost_before = 0, cost_after = 0;  // ½·‖r‖²
  int iterations = 0;
};
// Minimise ½‖residuals(x)‖² from x0 (Jacobian by forward differences).
LmResult levenberg_marquardt(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& residuals,
                             const Eigen::VectorXd& x0, const LmOptions& opt = {});

// The physical range a fitted key is kept in; throws std::invalid_argument for a key that is
// not fittable (memory terms, the error band).
struct FitBounds {
  double lo, hi;
};
FitBounds fit_bounds(const std::string& key);

struct FitSpec {
  std::vector<std::string> params;    // efficiency keys to fit
  std::vector<std::string> hardware;  // presets fitted together (values shared)
  double prior_weight = 0;            // weight of log(x/x0) residuals per parameter
  LmOptions lm;
};
struct FitResult {
  std::map<std::string, double> values;  // fitted value per key
  int n_runs = 0;
  double rms_log_before = 0, rms_log_after = 0;
  int iterations = 0;
};
// Fit spec.params on the cases whose hardware is in spec.hardware and that have a measured
// tokens/s; writes the fitted values into those presets in `hardware`. Throws
// std::invalid_argument for an unknown key or when no run matches.
FitResult fit_efficiency(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                         HardwareSet& hardware, const FitSpec& spec);

}  // namespace shardcast::planner
