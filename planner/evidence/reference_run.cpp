// A measured run of the user's own stack carried to other configurations. See reference_run.h.
#include "planner/evidence/predict.h"
#include "planner/evidence/reference_run.h"

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

int ReferencePairs::within(double rel) const {
  int n = 0;
  for (double e : errors) n += std::fabs(e) <= rel;
  return n;
}

ReferencePairs reference_pairs(const std::vector<ReferenceRow>& rows) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::vector<Key> order;
  std::map<Key, std::vector<const ReferenceRow*>> by;
  for (const ReferenceRow& r : rows) {
    if (!(r.predicted_tps > 0) || !(r.measured_tps > 0)) continue;
    const Key k{r.source, r.hardware, r.runtime};
    if (!by.count(k)) order.push_back(k);
    by[k].push_back(&r);
  }
  ReferencePairs out;
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
  out.n_pairs = int(out.errors.size());
  if (out.n_pairs > 0) {
    out.mape = 100 * abs_sum / out.n_pairs;
    out.bias = 100 * sum / out.n_pairs;
    out.rel_1sigma = std::sqrt(group_ms_sum / out.n_groups);
  }
  return out;
}

}  // namespace shardcast::planner
