// The users' rule of thumb, as a baseline for validation: one fitted MFU per GPU type.
//
// What it is: MFU = geometric mean of the measured MFU of the fitting runs on each GPU type
// (GPUs with the same dense bf16 peak count as one type: H100 SXM, H100-96GB and H200 share
// a die), and tokens/s/GPU = MFU · peak / flops_per_token. `shardcast validate --baseline`
// prints its error beside the planner's, in-sample or fitted on another CSV. What it is not:
// part of the planner's model. Pure functions, thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/evidence/validate.h"

namespace shardcast::planner {

struct RuleOfThumb {
  std::map<double, double> mfu_by_peak;  // dense bf16 peak (FLOP/s) -> fitted MFU
  std::map<double, int> n_by_peak;       // fitting runs per type
};

// Fit on the cases with a measured tokens/s.
RuleOfThumb fit_rule_of_thumb(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                              const HardwareSet& hardware);

// Score on the cases with a measured tokens/s whose GPU type was fitted; `n_unscored` gets
// the number of measured cases on types the fit never saw.
ValidationSummary score_rule_of_thumb(const RuleOfThumb& rule, const std::vector<PublishedRow>& rows,
                                      const std::vector<ValidationCase>& cases, const HardwareSet& hardware,
                                      const std::string& name, int& n_unscored);

}  // namespace shardcast::planner
