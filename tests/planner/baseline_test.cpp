// The rule-of-thumb baseline against a hand computation: runs at one MFU on one GPU type are
// reproduced exactly, the geometric mean splits two MFUs evenly, and a GPU type the fit never
// saw is not scored.
#include "planner/evidence/baseline.h"

#include <gtest/gtest.h>

#include <cmath>

namespace shardcast::planner {
namespace {

const char* kHeader =
    "row_id,model,n_layers,d_model,n_heads,n_kv_heads,ffn_dim,vocab,seq_len,gpu_type,n_gpus,gpus_per_node,"
    "sharding_key,ac_key,micro_batch_per_gpu,grad_accum,compile_key,fp8_key,in_scope_fsdp_only,"
    "measured_tokens_per_sec_per_gpu,framework\n";

// Tokens/s/GPU at `mfu` for Llama-2-7B at s = 4096 on a GPU with `peak` FLOP/s.
double tps_at(double mfu, double peak) {
  const double flops = 6.0 * 6738415616.0 + 12.0 * 32 * 4096 * 4096;
  return mfu * peak / flops;
}

std::string row(const std::string& id, const std::string& gpu, double tps) {
  return id + ",Llama2-7B,32,4096,32,32,11008,32000,4096," + gpu + ",8,8,FULL_SHARD,none,2,1,no,no,yes," +
         std::to_string(tps) + ",fms-fsdp (FSDP1)\n";
}

TEST(Baseline, GeometricMeanMfuPerGpuType) {
  const std::string text = std::string(kHeader) + row("a", "A100-80GB-SXM", tps_at(0.40, 312e12)) +
                           row("b", "A100-80GB-SXM", tps_at(0.90, 312e12)) +
                           row("c", "H100-80GB-SXM", tps_at(0.35, 989.4e12));
  auto rows = parse_published_csv(text, "t.csv");
  HardwareSet hw;
  const auto cases = resolve_cases(rows, hw);
  ASSERT_EQ(cases.size(), 3u);
  const RuleOfThumb rule = fit_rule_of_thumb(rows, cases, hw);
  ASSERT_EQ(rule.mfu_by_peak.size(), 2u);
  // sqrt(0.40 · 0.90) = 0.6; std::to_string keeps 6 decimals of tokens/s: relative 1e-6.
  EXPECT_NEAR(rule.mfu_by_peak.at(312e12), 0.6, 1e-6);
  EXPECT_NEAR(rule.mfu_by_peak.at(989.4e12), 0.35, 1e-6);
  int unscored = -1;
  const ValidationSummary s = score_rule_of_thumb(rule, rows, cases, hw, "rule", unscored);
  EXPECT_EQ(unscored, 0);
  ASSERT_EQ(s.n, 3);
  // Errors: 0.6/0.4 − 1 = +50%, 0.6/0.9 − 1 = −33.3%, 0% → MAPE 27.8%.
  EXPECT_NEAR(s.mape_tps, (50.0 + 100.0 / 3.0 + 0.0) / 3.0, 1e-3);
  EXPECT_NEAR(s.max_abs_err_tps, 50.0, 1e-3);
}

TEST(Baseline, UnseenGpuTypeIsNotScored) {
  auto fit_rows = parse_published_csv(std::string(kHeader) + row("a", "A100-80GB-SXM", tps_at(0.5, 312e12)), "f.csv");
  auto rows = parse_published_csv(std::string(kHeader) + row("b", "MI300X", 3000), "t.csv");
  HardwareSet hw;
  const auto fit_cases = resolve_cases(fit_rows, hw);
  const auto cases = resolve_cases(rows, hw);
  const RuleOfThumb rule = fit_rule_of_thumb(fit_rows, fit_cases, hw);
  int unscored = -1;
  const ValidationSummary s = score_rule_of_thumb(rule, rows, cases, hw, "rule", unscored);
  EXPECT_EQ(s.n, 0);
  EXPECT_EQ(unscored, 1);
}

}  // namespace
}  // namespace shardcast::planner
