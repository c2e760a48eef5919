#include "planner/evidence/predict.h"

#include <fmt/format.h>

#include "planner/evidence/error_band.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {

void apply_evidence(Prediction& p, const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt) {
  // The cross-validated band of this configuration's regime (error_band.h, configs/bands.toml),
  // or the preset's prior for hardware no published run measured.
  const BandChoice band =
      choose_band(shipped_bands(), band_regime(cfg, hw.name, opt.framework.empty() ? opt.runtime : opt.framework),
                  hw.efficiency_param("error_band_rel"), hw.efficiency_param("error_band_runs"));
  p.error_band_rel = band.rel_1sigma;
  p.error_band_note = band.note;
  if (!(opt.reference_level > 0)) return;
  // The stack's level from its own measured run (reference_run.h): the step as a whole.
  const ReferenceBand& rb = shipped_bands().reference;
  if (!(rb.rel_1sigma > 0))
    throw ConfigError((config_dir() / "bands.toml").string(), "reference_run",
                      "no reference-run band: written by `shardcast validate --crossval ... --write-bands`");
  p.step_time_s /= opt.reference_level;
  p.host_bound_s /= opt.reference_level;
  p.tokens_per_s_per_gpu *= opt.reference_level;
  p.mfu *= opt.reference_level;
  p.hfu *= opt.reference_level;
  p.reference_level = opt.reference_level;
  p.reference_run = opt.reference_run;
  p.error_band_rel = rb.rel_1sigma;
  p.error_band_note = fmt::format(
      "±{:.0f}% (1σ of a run's level carried to the other runs of its source, GPU and runtime: {} pairs in {} "
      "groups, leave-one-source-out); x{:.3f}: reference run {}",
      100 * rb.rel_1sigma, rb.n_pairs, rb.n_groups, opt.reference_level, opt.reference_run);
}

Prediction predict(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt) {
  Prediction p = plan(cfg, hw, opt);
  apply_evidence(p, cfg, hw, opt);
  return p;
}

}  // namespace shardcast::planner
