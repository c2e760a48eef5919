// SDPA's backend as a plan sees it: the flash backend (FlashAttention-2 kernels) or cuDNN
// attention, chosen by the runtime term cudnn_attention against the preset's compute capability
// and timed at that kernel's published ceiling; op SAC that does not save the cuDNN op runs
// attention's forward again and keeps less. Each check compares two plans that differ in the
// backend alone against the closed form of the ceilings (docs/cost-model.md §2.2).
#include <gtest/gtest.h>

#include <string>

#include "planner/model/ac_policy.h"
#include "planner/model/efficiency.h"
#include "planner/model/kernel_rates.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/op_category.h"
#include "shared/runtime_spec.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::make_config;

struct Planned {
  Prediction p;
  PlanOptions opt;
};

Planned plan_with(const std::string& gpu, const std::string& runtime, AcMode ac, double overlap = 0.0) {
  TrainConfig c = make_config("llama3-8b", gpu, 8, ShardingStrategy::full_shard, ac, 1, 8192);
  c.runtime = runtime;
  if (runtime == "kempnerforge") c.precision.master_dtype = "bf16";  // it trains in pure bf16
  HardwareSpec hw = load_hardware(gpu);
  hw.efficiency["overlap_compute_slowdown"] = overlap;  // compute categories = their op sums
  PlanOptions opt = resolve_plan_options(c, hw);
  opt.op_breakdown = true;
  return {plan(c, hw, opt), opt};
}

double attention_s(const Prediction& p) { return p.op_seconds.at(size_t(OpCategory::attention)); }

// torchtitan-2025-07 and torchtitan-2025-10 differ in the SDPA order alone (and the SAC save list,
// unused without SAC): on H100 the first runs the flash backend, the second cuDNN. Attention
// time scales by exactly attention_ceiling / cudnn_attention_ceiling (the same fitted fraction
// of each kernel's published rate; 1e-9: floating point), and nothing else moves.
TEST(AttentionBackend, CudnnOnHopperRunsAtItsCeilingOverTheFlashOne) {
  const EfficiencyParams e = read_efficiency(load_hardware("H100-80GB-SXM"));
  const Planned flash = plan_with("H100-80GB-SXM", "torchtitan-2025-07", AcMode::none);
  const Planned cudnn = plan_with("H100-80GB-SXM", "torchtitan-2025-10", AcMode::none);
  EXPECT_EQ(flash.p.attention, "flash");
  EXPECT_EQ(cudnn.p.attention, "cudnn");
  EXPECT_NEAR(attention_s(cudnn.p) / attention_s(flash.p), e.attention_ceiling / e.cudnn_attention_ceiling, 1e-9);
  EXPECT_GT(e.cudnn_attention_ceiling, 1.7 * e.attention_ceiling);  // 603 vs 328 TFLOP/s
  const double mm = flash.p.op_seconds.at(size_t(OpCategory::matmul));
  EXPECT_NEAR(cudnn.p.op_seconds.at(size_t(OpCategory::matmul)), mm, 1e-12 * mm);  // summation order only
  EXPECT_DOUBLE_EQ(cudnn.p.mem_peak_bytes, flash.p.mem_peak_bytes);
  EXPECT_GT(cudnn.p.tokens_per_s_per_gpu, flash.p.tokens_per_s_per_gpu);
}

// On A100 cuDNN attention is the slower kernel (0.82x the flash backend, transformers #48163):
// torchtitan's cuDNN-first order costs time there.
TEST(AttentionBackend, CudnnOnAmpereIsSlower) {
  const Planned flash = plan_with("A100-80GB-SXM", "torchtitan-2025-07", AcMode::none);
  const Planned cudnn = plan_with("A100-80GB-SXM", "torchtitan-2025-10", AcMode::none);
  EXPECT_EQ(flash.p.attention, "flash");
  EXPECT_EQ(cudnn.p.attention, "cudnn");
  EXPECT_NEAR(attention_s(cudnn.p) / attention_s(flash.p), 1 / 0.82, 1e-3);  // the preset rounds to 4 digits
  EXPECT_LT(cudnn.p.tokens_per_s_per_gpu, flash.p.tokens_per_s_per_gpu);
}

// The backend follows the GPU: torchtitan-2025-02 runs cuDNN on B200 (capability 10.0) but not
// on H100; no runtime runs cuDNN on AMD (no compute capability); KempnerForge (torch 2.11) on
// both NVIDIA generations.
TEST(AttentionBackend, TheRuntimeListAndTheComputeCapabilityDecide) {
  EXPECT_EQ(plan_with("B200", "torchtitan-2025-02", AcMode::none).p.attention, "cudnn");
  EXPECT_EQ(plan_with("MI300X", "torchtitan-2025-10", AcMode::none).p.attention, "flash");
  EXPECT_EQ(plan_with("H200-141GB-SXM", "kempnerforge", AcMode::full).p.attention, "cudnn");
  EXPECT_EQ(plan_with("H100-80GB-SXM", "fms-fsdp", AcMode::none).p.attention, "flash");
}

// Op SAC with a save list that lacks the cuDNN op (torchtitan before b39377f9f): the backward
// runs attention's forward again, so attention costs (1 + 2.5 + 1) / (1 + 2.5) of its plain
// time (forward F/R, backward 2.5·F/R); a list that has it (torchtitan) keeps the plain time.
TEST(AttentionBackend, SacWithoutTheCudnnOpRecomputesAttention) {
  const Planned none = plan_with("B200", "torchtitan-2025-02", AcMode::none);
  const Planned sac = plan_with("B200", "torchtitan-2025-02", AcMode::selective_op);
  ASSERT_FALSE(sac.opt.sac_attention_saved());
  EXPECT_NEAR(attention_s(sac.p) / attention_s(none.p), 4.5 / 3.5, 1e-9);
  const Planned saved = plan_with("H100-80GB-SXM", "torchtitan-2025-10", AcMode::selective_op);
  const Planned saved_none = plan_with("H100-80GB-SXM", "torchtitan-2025-10", AcMode::none);
  ASSERT_TRUE(saved.opt.sac_attention_saved());
  EXPECT_NEAR(attention_s(saved.p) / attention_s(saved_none.p), 1.0, 1e-9);
  // What the block keeps: attention's output and log-sum-exp less (A·d + 4·heads per token).
  const ModelSpec m = load_model("llama3-8b");
  const double T = 8192;
  EXPECT_DOUBLE_EQ(block_kept_bytes(m, T, 2, BlockAc::selective_op, true, false, true) -
                       block_kept_bytes(m, T, 2, BlockAc::selective_op, true, false, false),
                   T * (2.0 * m.d_model + 4.0 * m.n_heads));
}

// A preset whose compute capability a runtime lists but that states no cuDNN rate is refused
// with the key named, not timed at some other kernel's rate.
TEST(AttentionBackend, NoCudnnCeilingIsAnErrorWhereCudnnRuns) {
  TrainConfig c = make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 1, 4096);
  c.runtime = "torchtitan-2025-10";
  HardwareSpec hw = load_hardware("H100-80GB-SXM");
  hw.efficiency["cudnn_attention_ceiling"] = 0;
  try {
    plan(c, hw, resolve_plan_options(c, hw));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "efficiency.cudnn_attention_ceiling");
    EXPECT_NE(std::string(e.what()).find("9.0"), std::string::npos) << e.what();
  }
  // Nor by the flash-attention table, which has no cuDNN rows.
  hw = load_hardware("H100-80GB-SXM");
  hw.gpu.attention_benchmark = "H100-80GB-SXM5";
  try {
    plan(c, hw, resolve_plan_options(c, hw));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "gpu.attention_benchmark");
  }
}

// cuDNN attention is an SDPA backend: a runtime listing capabilities with eager attention is refused.
TEST(AttentionBackend, CudnnListNeedsSdpa) {
  std::string text = read_text(config_dir() / "runtimes" / "kempnerforge.toml");
  const std::string from = "attention = \"flash\"\n";
  text.replace(text.find(from), from.size(), "attention = \"eager\"\n");
  try {
    parse_runtime_toml(text, "kempnerforge.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "terms.cudnn_attention");
  }
}

// torch < 2.2's SDPA flash backend (attention = "flash1"): the same plan with only the options'
// kernel switched takes exactly 1 / kFlashAttention1OverFlashAttention2 of the flash backend's
// attention time (1e-9: floating point), keeps the same memory and moves nothing else; the
// benchmark-table path, which has no FlashAttention-1 rows, refuses it naming the key.
TEST(AttentionBackend, FlashAttention1RunsAtItsPublishedShareOfTheFlashRate) {
  TrainConfig c = make_config("llama2-7b", "A100-40GB-SXM", 4, ShardingStrategy::full_shard, AcMode::full, 2, 2048);
  c.runtime = "torchtitan-2024-04";
  HardwareSpec hw = load_hardware("A100-40GB-SXM");
  hw.efficiency["overlap_compute_slowdown"] = 0;
  PlanOptions opt = resolve_plan_options(c, hw);
  opt.op_breakdown = true;
  ASSERT_EQ(opt.attention_kernel, AttentionKernel::flash2);
  const Prediction flash = plan(c, hw, opt);
  opt.attention_kernel = AttentionKernel::flash1;
  const Prediction flash1 = plan(c, hw, opt);
  EXPECT_EQ(flash.attention, "flash");
  EXPECT_EQ(flash1.attention, "flash1");
  EXPECT_NEAR(attention_s(flash1) / attention_s(flash), 1 / kFlashAttention1OverFlashAttention2, 1e-9);
  const double mm = flash.op_seconds.at(size_t(OpCategory::matmul));
  EXPECT_NEAR(flash1.op_seconds.at(size_t(OpCategory::matmul)), mm, 1e-12 * mm);
  EXPECT_DOUBLE_EQ(flash1.mem_peak_bytes, flash.mem_peak_bytes);
  EXPECT_LT(flash1.tokens_per_s_per_gpu, flash.tokens_per_s_per_gpu);
  hw.gpu.attention_benchmark = "A100-80GB-SXM4";
  try {
    plan(c, hw, opt);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "gpu.attention_benchmark");
  }
}

}  // namespace
}  // namespace shardcast::planner
