// A measured run of the user's own stack carried to other configurations. See reference_run.h.
#include "planner/evidence/predict.h"
#include "planner/evidence/reference_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "planner/model/plan.h"
#include "planner/evidence/run_dir.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {

void require_hardware(const ReferenceRun& r, const std::string& hw_name) {
  if (r.hardware != hw_name)
    throw UsageError(fmt::format("--reference-run {}: the run is on hardware {}, this prediction on {}: a reference "
                                 "run carries the level of its own GPUs and machines only",
                                 r.dir, r.hardware, hw_name));
}

void require_runtime(const ReferenceRun& r, const std::string& runtime) {
  if (r.runtime != runtime)
    throw UsageError(fmt::format("--reference-run {}: the run was made by runtime {}, this prediction is for {}: a "
                                 "reference run carries the level of its own software only",
                                 r.dir, r.runtime, runtime));
}

void carry_reference(const ReferenceRun& r, PlanOptions& opt) {
  opt.reference_level = r.level();
  opt.reference_run = r.dir;
}

ReferenceRun read_reference_run(const std::string& dir, const HardwareSpec& hw) {
  RunDir run;
  try {
    run = read_run_dir(dir);
  } catch (const std::exception& e) {  // ConfigError / InputError of a file in it
    throw UsageError(fmt::format("--reference-run {}: {}", dir, e.what()));
  }
  ReferenceRun r;
  r.dir = dir;
  r.runtime = run.cfg.runtime;
  // cluster.hardware is a preset name or a profile file; the preset's own name decides.
  r.hardware = run.cfg.cluster.hardware == hw.name ? hw.name : load_hardware(run.cfg.cluster.hardware).name;
  require_hardware(r, hw.name);
  r.measured_tps = run.report.tokens_per_s_per_gpu;
  if (!(r.measured_tps > 0))
    throw UsageError(fmt::format("--reference-run {}: run_report.json has no measured tokens_per_s_per_gpu", dir));
  try {
    r.predicted_tps = predict(run.cfg, hw, resolve_plan_options(run.cfg, hw)).tokens_per_s_per_gpu;
  } catch (const std::exception& e) {  // a config this planner refuses (a key, a dtype the GPU lacks)
    throw UsageError(fmt::format("--reference-run {}: its config cannot be predicted: {}", dir, e.what()));
  }
  if (!(r.predicted_tps > 0))
    throw UsageError(fmt::format("--reference-run {}: the planner predicts no throughput for its config", dir));
  return r;
}

ReferenceRun read_reference_run(const std::string& dir, const HardwareSpec& hw, const std::string& runtime) {
  ReferenceRun r = read_reference_run(dir, hw);
  require_runtime(r, runtime);
  return r;
}

namespace {

// The error of the pair (a as reference, b predicted), written as the pair loop wrote it:
// predicted_b · level_a / measured_b − 1. For a fixed b it is non-decreasing in level_a (each
// rounded operation is monotone), so the a of one sign or of one band are a range of the
// sorted levels.
double pair_error(double predicted_b, double level_a, double measured_b) {
  return predicted_b * level_a / measured_b - 1.0;
}

// The sums over the ordered pairs of one group (a != b): with L the levels, S = ΣL, Q = ΣL²
// and c_b = predicted_b / measured_b, error(a, b) = c_b·L_a − 1, so
//   Σ_a≠b error   = c_b·(S − L_b) − (n − 1)
//   Σ_a≠b error²  = c_b²·(Q − L_b²) − 2·c_b·(S − L_b) + (n − 1)
//   Σ_a≠b |error| = over the a below the sign change (1 − c_b·L_a), above it (c_b·L_a − 1),
//                   by prefix sums of the sorted levels; the a = b term is then taken out.
// Long double: the differences cancel about log10(n) digits.
struct GroupSums {
  long double sum = 0, sq = 0, abs = 0;
};

GroupSums group_sums(const ReferencePairs::Group& g) {
  const std::vector<double>& L = g.levels;
  const size_t n = L.size();
  std::vector<long double> prefix(n + 1, 0);  // prefix[i] = L[0] + ... + L[i-1]
  long double Q = 0;
  for (size_t i = 0; i < n; ++i) {
    prefix[i + 1] = prefix[i] + L[i];
    Q += (long double)L[i] * L[i];
  }
  const long double S = prefix[n], m = (long double)(n - 1);
  GroupSums out;
  for (size_t b = 0; b < n; ++b) {
    const double p = g.predicted[b], meas = g.measured[b], level_b = meas / p;
    const long double c = (long double)p / meas;
    out.sum += c * (S - level_b) - m;
    out.sq += c * c * (Q - (long double)level_b * level_b) - 2 * c * (S - level_b) + m;
    const size_t k = size_t(std::partition_point(L.begin(), L.end(), [&](double l) { return pair_error(p, l, meas) < 0; }) -
                            L.begin());
    const long double below = (long double)k - c * prefix[k], above = c * (S - prefix[k]) - (long double)(n - k);
    out.abs += below + above - std::fabs(c * level_b - 1);  // less the a = b term
  }
  return out;
}

}  // namespace

int64_t ReferencePairs::within(double rel) const {
  int64_t n = 0;
  for (const Group& g : groups)
    for (size_t b = 0; b < g.predicted.size(); ++b) {
      const double p = g.predicted[b], m = g.measured[b];
      // |e| <= rel  <=>  -rel <= e <= rel; e is non-decreasing along the sorted levels.
      const auto lo = std::partition_point(g.levels.begin(), g.levels.end(),
                                           [&](double l) { return pair_error(p, l, m) < -rel; });
      const auto hi = std::partition_point(lo, g.levels.end(), [&](double l) { return pair_error(p, l, m) <= rel; });
      n += hi - lo;
      n -= std::fabs(pair_error(p, m / p, m)) <= rel;  // b itself is in the range when its own error is
    }
  return n;
}

ReferencePairs reference_pairs(const std::vector<ReferenceRow>& rows) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::vector<Key> order;
  std::map<Key, ReferencePairs::Group> by;
  for (const ReferenceRow& r : rows) {
    if (!(r.predicted_tps > 0) || !(r.measured_tps > 0)) continue;
    const Key k{r.source, r.hardware, r.runtime};
    auto [it, added] = by.try_emplace(k);
    if (added) order.push_back(k);
    it->second.predicted.push_back(r.predicted_tps);
    it->second.measured.push_back(r.measured_tps);
    it->second.levels.push_back(r.measured_tps / r.predicted_tps);
  }
  ReferencePairs out;
  long double group_ms_sum = 0, abs_sum = 0, sum = 0;
  for (const Key& k : order) {
    ReferencePairs::Group& g = by.at(k);
    const size_t n = g.levels.size();
    if (n < 2) continue;
    std::sort(g.levels.begin(), g.levels.end());
    const GroupSums s = group_sums(g);
    const int64_t pairs = int64_t(n) * int64_t(n - 1);
    group_ms_sum += s.sq / pairs;
    abs_sum += s.abs;
    sum += s.sum;
    out.n_pairs += pairs;
    ++out.n_groups;
    out.groups.push_back(std::move(g));
  }
  if (out.n_pairs > 0) {
    out.mape = double(100 * abs_sum / out.n_pairs);
    out.bias = double(100 * sum / out.n_pairs);
    out.rel_1sigma = double(std::sqrt(group_ms_sum / out.n_groups));
  }
  return out;
}

}  // namespace shardcast::planner
