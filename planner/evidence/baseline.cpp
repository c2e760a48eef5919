#include "planner/evidence/baseline.h"

#include <cmath>

namespace shardcast::planner {

namespace {

// Measured tokens/s, model FLOPs per token and bf16 peak of a case; false when unusable.
bool case_terms(const PublishedRow& r, const ValidationCase& c, const HardwareSet& hardware, double& tps,
                double& flops, double& peak) {
  if (!r.tokens_per_s_per_gpu || *r.tokens_per_s_per_gpu <= 0) return false;
  const auto it = hardware.find(c.hardware);
  if (it == hardware.end() || it->second.gpu.bf16_flops <= 0) return false;
  tps = *r.tokens_per_s_per_gpu;
  flops = c.cfg.model.flops_per_token(c.cfg.training.seq_len);
  peak = it->second.gpu.bf16_flops;
  return true;
}

}  // namespace

RuleOfThumb fit_rule_of_thumb(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                              const HardwareSet& hardware) {
  std::map<double, double> sum_log;
  RuleOfThumb rule;
  for (const auto& c : cases) {
    double tps, flops, peak;
    if (!case_terms(rows[c.row], c, hardware, tps, flops, peak)) continue;
    sum_log[peak] += std::log(tps * flops / peak);
    rule.n_by_peak[peak] += 1;
  }
  for (const auto& [peak, s] : sum_log) rule.mfu_by_peak[peak] = std::exp(s / rule.n_by_peak[peak]);
  return rule;
}

ValidationSummary score_rule_of_thumb(const RuleOfThumb& rule, const std::vector<PublishedRow>& rows,
                                      const std::vector<ValidationCase>& cases, const HardwareSet& hardware,
                                      const std::string& name, int& n_unscored) {
  std::vector<ValidationRowResult> results;
  n_unscored = 0;
  for (const auto& c : cases) {
    double tps, flops, peak;
    if (!case_terms(rows[c.row], c, hardware, tps, flops, peak)) continue;
    const auto it = rule.mfu_by_peak.find(peak);
    if (it == rule.mfu_by_peak.end()) {
      ++n_unscored;
      continue;
    }
    ValidationRowResult r;
    r.has_tps = true;
    r.measured_tps = tps;
    r.predicted_tps = it->second * peak / flops;
    r.err_tps_pct = 100.0 * (r.predicted_tps - tps) / tps;
    results.push_back(r);
  }
  std::vector<const ValidationRowResult*> ptrs;
  for (const auto& r : results) ptrs.push_back(&r);
  return summarize(name, ptrs);
}

}  // namespace shardcast::planner
