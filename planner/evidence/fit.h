// Least-squares fitting of efficiency parameters to measured runs (Levenberg–Marquardt, Eigen).
//
// What it is: (1) a generic LM solver over a residual function, and (2) the fit of named
// [efficiency] keys of one or more hardware presets (values tied across them, e.g. the two
// A100 parts share silicon) to measured tokens/s: residual = log(predicted / measured) per run,
// each parameter kept inside its physical range by a logistic map (fit_bounds), an optional
// prior pulling each one towards its starting value (fit_bounded, the one bounded fitter of
// `shardcast validate --fit` and `shardcast calibrate`). What it is not: where values are stored (the
// caller writes them into the preset). Functions are reentrant.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "planner/evidence/validate.h"

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

// The physical range a fitted key is kept in; throws UsageError for a key that is not
// fittable (memory terms, the error band) or unknown.
struct FitBounds {
  double lo, hi;
};
FitBounds fit_bounds(const std::string& key);

// The one bounded least-squares fit of named efficiency keys, used by fit_efficiency (published
// runs, tokens/s) and calibrate_to_runs (this machine's runs, step time). Each key k lives in
// fit_bounds(k) through value = lo + (hi − lo)·σ(x), x unbounded; `data(values)` returns the
// residuals of the measurements for those values (one per run, log(predicted/measured)); a
// prior of weight w adds w·log(value/start) per key (log space: a weight of 1 costs as much as
// a run predicted e times off when a key moves by a factor e).
struct BoundedFitOptions {
  double prior_weight = 0;
  double start_margin = 1e-4;  // the start is kept this far (as a fraction of the range) from a bound
  bool also_from_middle = false;  // also start from the middle of every range, keep the better fit
  LmOptions lm;
};
struct BoundedFitResult {
  std::vector<double> values;  // fitted value per key
  LmResult lm;                 // in x space; cost over data and prior residuals
  int n_residuals = 0;         // data + prior
};
BoundedFitResult fit_bounded(const std::vector<std::string>& keys, const std::vector<double>& start,
                             const std::function<Eigen::VectorXd(const std::vector<double>&)>& data,
                             const BoundedFitOptions& opt);

struct FitSpec {
  std::vector<std::string> params;    // efficiency keys to fit
  std::vector<std::string> hardware;  // presets fitted together (values shared)
  double prior_weight = 0;            // weight of log(value/start) residuals per parameter (fit_bounded)
  LmOptions lm;
};
struct FitResult {
  std::map<std::string, double> values;  // fitted value per key
  int n_runs = 0;
  double rms_log_before = 0, rms_log_after = 0;
  int iterations = 0;
};
// Fit spec.params on the cases whose hardware is in spec.hardware and that have a measured
// tokens/s; writes the fitted values into those presets in `hardware`. Throws UsageError for
// an unknown key or when no run matches.
FitResult fit_efficiency(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                         HardwareSet& hardware, const FitSpec& spec);

}  // namespace shardcast::planner
