// Runtime generations: a published row's framework and framework_date choose its runtime
// profile (runtime_for_framework), the fused-RMSNorm term changes exactly the norms' traffic,
// and emit writes a generation's files as its framework's.
#include <string>

#include <gtest/gtest.h>

#include "planner/model/ac_policy.h"
#include "planner/model/efficiency.h"
#include "planner/emit/emit.h"
#include "planner/model/ops.h"
#include "planner/evidence/predict.h"
#include "planner/model/plan.h"
#include "planner/evidence/published_csv.h"
#include "planner/model/runtime.h"
#include "planner/evidence/validate.h"
#include "shared/errors.h"
#include "shared/op_category.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/model_spec.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

// Llama 3 8B, full_shard, op-level SAC, 1 x 8192, on `gpus` of `gpu`, planned for `runtime`.
Prediction plan_8b(const std::string& gpu, int gpus, const std::string& runtime) {
  TrainConfig c = test::make_config("llama3-8b", gpu, gpus, ShardingStrategy::full_shard, AcMode::selective_op, 1,
                                    8192, 1);
  c.runtime = runtime;
  const HardwareSpec hw = load_hardware(gpu);
  return predict(c, hw, resolve_plan_options(c, hw));  // with its band (evidence/predict.h)
}

TEST(RuntimeGenerations, FrameworkAndDateChooseTheProfile) {
  // The framework the column names first: atorch's example runs auto_accelerate, not accelerate.
  EXPECT_EQ(runtime_for_framework("atorch (dlrover) @3a442b728 (FSDP1 + HF transformers Llama, auto_accelerate)",
                                  "2023-11-22"),
            "atorch");
  EXPECT_EQ(runtime_for_framework("accelerate with atorch's attention", ""), "accelerate");
  EXPECT_EQ(runtime_for_framework("llm-foundry/Composer (FSDP1)"), "llm-foundry");
  EXPECT_EQ(runtime_for_framework("Composer"), "llm-foundry");
  EXPECT_EQ(runtime_for_framework("lit-llama @d598aa2 (Lightning Fabric FSDPStrategy)", "2023-05-03"), "lit-llama");
  // Its one generation has an end (the script moved on 2023-05-10): a row must date itself.
  EXPECT_THROW(runtime_for_framework("lit-llama @d598aa2 (Lightning Fabric FSDPStrategy)"), InputError);
  EXPECT_EQ(runtime_for_framework("a trainer without a profile"), "");
  const std::string tt = "torchtitan (FSDP2)";
  EXPECT_EQ(runtime_for_framework(tt), "torchtitan");  // no date: the newest generation
  EXPECT_EQ(runtime_for_framework(tt, "2024-04-18"), "torchtitan-2024-04");
  EXPECT_EQ(runtime_for_framework(tt, "2024-04"), "torchtitan-2024-04");
  EXPECT_EQ(runtime_for_framework(tt, "2024-05-01"), "torchtitan-2024-04");
  EXPECT_EQ(runtime_for_framework(tt, "2024-05-02"), "torchtitan-2024-05");  // from_date is inclusive
  EXPECT_EQ(runtime_for_framework(tt, "2024-06-11"), "torchtitan-2024-05");
  EXPECT_EQ(runtime_for_framework(tt, "2024-06-12"), "torchtitan-2024-06");
  EXPECT_EQ(runtime_for_framework(tt, "2024-10"), "torchtitan-2024-06");     // a month = its first day
  EXPECT_EQ(runtime_for_framework(tt, "2024-10-22"), "torchtitan-2024-10");
  EXPECT_EQ(runtime_for_framework(tt, "2025-02-23"), "torchtitan-2024-10");
  EXPECT_EQ(runtime_for_framework(tt, "2025-02-24"), "torchtitan-2025-02");
  EXPECT_EQ(runtime_for_framework(tt, "2025-06-11"), "torchtitan-2025-02");
  EXPECT_EQ(runtime_for_framework(tt, "2025-07-23"), "torchtitan-2025-02");
  EXPECT_EQ(runtime_for_framework(tt, "2025-07-24"), "torchtitan-2025-07");
  EXPECT_EQ(runtime_for_framework(tt, "2025-10-08"), "torchtitan-2025-07");
  EXPECT_EQ(runtime_for_framework(tt, "2025-10-09"), "torchtitan-2025-10");
  EXPECT_EQ(runtime_for_framework(tt, "2026-06-09"), "torchtitan-2026-06");
  EXPECT_EQ(runtime_for_framework(tt, "2026-08-13"), "torchtitan");
  EXPECT_EQ(runtime_for_framework("TorchTitan"), "torchtitan");
  // One generation only: every date is it.
  EXPECT_EQ(runtime_for_framework("fms-fsdp (FSDP1)", "2024-02-21"), "fms-fsdp");
  EXPECT_EQ(runtime_for_framework("llm-foundry/Composer (FSDP1)"), "llm-foundry");
  EXPECT_EQ(runtime_for_framework("accelerate", "2025-01-01"), "accelerate");
  EXPECT_EQ(runtime_for_framework("Megatron-LM"), "");
  EXPECT_THROW(runtime_for_framework(tt, "Oct 2024"), InputError);
  EXPECT_THROW(runtime_for_framework(tt, "2024-13"), InputError);
  EXPECT_EQ(runtime_generations("torchtitan"),
            (std::vector<std::string>{"torchtitan-2024-04", "torchtitan-2024-05", "torchtitan-2024-06", "torchtitan-2024-10",
                                      "torchtitan-2025-02", "torchtitan-2025-07", "torchtitan-2025-10",
                                      "torchtitan-2026-06", "torchtitan"}));
  // llm-foundry's benchmark sweeps: torch 1.13.1 image until b2a43a147, torch 2.1.0 after.
  const std::string lf = "llm-foundry/Composer (FSDP1)";
  EXPECT_EQ(runtime_for_framework(lf, "2023-05-03"), "llm-foundry-2023-05");
  EXPECT_EQ(runtime_for_framework(lf, "2023-10-19"), "llm-foundry");
  EXPECT_EQ(runtime_for_framework(lf, "2024-01-06"), "llm-foundry");
  EXPECT_EQ(runtime_generations("llm-foundry"), (std::vector<std::string>{"llm-foundry-2023-05", "llm-foundry"}));
}

// llm-foundry's tables: the A100-40GB section and the two A100-80GB bf16 (PURE) 70B rows were run
// on the torch 1.13.1 image (unchanged since 2023-05-03), every other row on torch 2.1.0.
TEST(RuntimeGenerations, LlmFoundryRowsTakeTheTorchImageTheyRanOn) {
  auto rows = read_published_csv(std::string(SHARDCAST_TEST_CONFIG_DIR) + "/published/calibration.csv");
  int early = 0, late = 0;
  for (const PublishedRow& r : rows) {
    if (r.row_id.rfind("llmf_", 0) != 0) continue;
    const bool old_table = r.row_id.rfind("llmf_a100_40gb_", 0) == 0 ||
                           (r.row_id.rfind("llmf_a100_80gb_", 0) == 0 && r.row_id.find("_amp_") == std::string::npos);
    EXPECT_EQ(r.cfg.runtime, old_table ? "llm-foundry-2023-05" : "llm-foundry") << r.row_id;
    (old_table ? early : late)++;
  }
  EXPECT_EQ(early, 80);
  EXPECT_EQ(late, 136);
}

// Early stop skips exactly the block's last GEMM and the residual add after it; without it the
// whole forward is recomputed. Tolerance: exact sums of the same op times (1e-12 relative).
TEST(RuntimeGenerations, EarlyStopSkipsTheLastGemmOfARecompute) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  ComputeContext cc;
  cc.peak_flops = hw.peak_flops("bf16");
  cc.hbm_bandwidth = hw.gpu.hbm_bandwidth;
  cc.eff = of_datasheet(read_efficiency(hw));
  for (const char* name : {"llama3-8b", "mpt-7b"}) {
    const auto ops = block_forward_ops(load_model(name), 2, 4096, 2);
    double all = 0, before_last_gemm = 0;
    bool past = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      const double t = op_forward_time(ops[i], cc);
      all += t;
      const std::string n = ops[i].name;
      if (n == "w2" || n == "fc2") past = true;
      if (!past) before_last_gemm += t;
    }
    EXPECT_NEAR(checkpointed_recompute_time(ops, cc, false), all, 1e-12 * all) << name;
    EXPECT_NEAR(checkpointed_recompute_time(ops, cc, true), before_last_gemm, 1e-12 * all) << name;
    EXPECT_LT(before_last_gemm, all) << name;
  }
  // Whole plan: full checkpointing is faster with early stop; without checkpointing nothing changes.
  TrainConfig c = test::make_config("mpt-7b", "A100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 8,
                                    2048, 1);
  c.runtime = "llm-foundry";
  const Prediction late = plan(c, hw, resolve_plan_options(c, hw));
  c.runtime = "llm-foundry-2023-05";
  const Prediction early = plan(c, hw, resolve_plan_options(c, hw));
  EXPECT_GT(late.tokens_per_s_per_gpu, early.tokens_per_s_per_gpu);
  // HFU keeps the published convention: the same ratio to MFU, to rounding (4 ulps: both are
  // FLOP counts over the same step time, divided in a different order).
  EXPECT_DOUBLE_EQ(late.hfu / late.mfu, early.hfu / early.mfu);
  c.activation_checkpointing.mode = AcMode::none;
  c.runtime = "llm-foundry";
  const double none_late = plan(c, hw, resolve_plan_options(c, hw)).tokens_per_s_per_gpu;
  c.runtime = "llm-foundry-2023-05";
  EXPECT_EQ(plan(c, hw, resolve_plan_options(c, hw)).tokens_per_s_per_gpu, none_late);
}

TEST(RuntimeGenerations, PublishedRowsTakeTheirGeneration) {
  auto rows = read_published_csv(std::string(SHARDCAST_TEST_CONFIG_DIR) + "/published/holdout.csv");
  int april = 0, current = 0;
  for (const PublishedRow& r : rows) {
    ASSERT_TRUE(r.skip_reason.empty()) << r.row_id;
    if (r.row_id.rfind("tt_a100_", 0) == 0) {  // docs/performance.md, torchtitan @395a52627 / @1ea476e9f
      EXPECT_EQ(r.cfg.runtime, "torchtitan-2024-04") << r.row_id;
      // The 70B configs of that commit ran the eager RMSNorm (their rmsnorm column).
      ASSERT_TRUE(r.rmsnorm.has_value()) << r.row_id;
      const bool big = r.row_id.find("70b") != std::string::npos;
      EXPECT_EQ(*r.rmsnorm, big ? NormImpl::eager : NormImpl::fused) << r.row_id;
      ++april;
    } else {
      // Dec 2024 (foreach AdamW) and June 2025 (fused).
      EXPECT_EQ(r.cfg.runtime, r.row_id.rfind("tt_h200_", 0) == 0 ? "torchtitan-2025-02" : "torchtitan-2024-10") << r.row_id;
      ++current;
    }
  }
  EXPECT_EQ(april, 8);
  EXPECT_EQ(current, 9);
  // A row the profile does not describe keeps the column's value over the profile's.
  HardwareSet hw;
  const auto cases = resolve_cases(rows, hw);
  for (const ValidationCase& c : cases) {
    const PublishedRow& r = rows[c.row];
    if (r.rmsnorm) {
      EXPECT_EQ(c.options.rmsnorm, *r.rmsnorm) << r.row_id;
    }
  }
}

// KempnerForge's published runs (outside.csv kempner_*, code at 01b461a and 601aba9) take its own
// profile by their framework column and date, and the profile states what that code does
// (configs/runtimes/kempnerforge.toml cites each): the model cast to bf16 before fully_shard (pure
// bf16), MixedPrecisionPolicy reduce_dtype fp32, set_requires_gradient_sync(False) on all but the
// last micro-batch (FSDP2 then sums the unsharded gradient in reduce_dtype), the root resharded
// after forward (reshard_after_forward=True given explicitly, torch 2.11), the loss on bf16
// logits, no Float8 before 87cfd86 (2026-04-10); before c850b5a (2026-04-04) the model was fp32.
TEST(RuntimeGenerations, KempnerForgeRowsTakeItsProfile) {
  const std::string kf = "KempnerForge @01b461a (FSDP2, torch.compile of the model, pure bf16)";
  EXPECT_EQ(runtime_for_framework(kf, "2026-04-05"), "kempnerforge");
  EXPECT_EQ(runtime_for_framework(kf, "2026-04-06"), "kempnerforge");
  EXPECT_THROW(runtime_for_framework(kf, "2026-04-10"), InputError);  // Float8 added: not described
  EXPECT_THROW(runtime_for_framework(kf, "2026-04-03"), InputError);  // fp32 model before c850b5a

  const RuntimeTerms& t = runtime_preset("kempnerforge").terms_for(true);
  EXPECT_EQ(t.master_dtypes, std::vector<std::string>{"bf16"});
  EXPECT_EQ(t.master_dtype_default, "bf16");
  EXPECT_EQ(t.reduce_dtypes, std::vector<std::string>{"fp32"});
  EXPECT_EQ(t.reduce_dtype_default, "fp32");
  EXPECT_FALSE(t.reduce_dtype_is_param_dtype);
  EXPECT_FALSE(t.sync_every_micro_step);
  EXPECT_FALSE(t.follows_config("sync_every_micro_step"));
  EXPECT_EQ(t.unsynced_gradient_dtype, "reduce_dtype");
  EXPECT_FALSE(t.root_unit);
  EXPECT_EQ(t.attention, "flash");
  EXPECT_EQ(t.cross_entropy, "native");
  EXPECT_FALSE(t.fp32_logits_held);
  EXPECT_TRUE(t.compile);
  EXPECT_TRUE(t.fp8_recipes.empty());
  EXPECT_FALSE(t.selective_op);
  EXPECT_FALSE(t.selective_blocks);
  EXPECT_FALSE(t.expandable_segments);
  EXPECT_EQ(t.collective_buffers, "record_stream");

  // What it cannot run is refused by name: fp32 masters (mixed_precision sets both the model's
  // dtype and the compute dtype), a bf16 reduction (default_mp_policy hard-codes fp32), Float8.
  const HardwareSpec h200 = load_hardware("H200-141GB-SXM");
  TrainConfig c = test::make_config("llama3-8b", "H200-141GB-SXM", 4, ShardingStrategy::full_shard, AcMode::full, 4,
                                    4096, 2);
  c.runtime = "kempnerforge";
  c.precision.param_dtype = "bf16";
  c.precision.reduce_dtype = "fp32";
  c.precision.master_dtype = "bf16";
  EXPECT_EQ(runtime_refusal(runtime_preset("kempnerforge"), c, h200), "");
  TrainConfig d = c;
  d.precision.master_dtype = "fp32";
  EXPECT_NE(runtime_refusal(runtime_preset("kempnerforge"), d, h200).find("runs bf16"), std::string::npos);
  d = c;
  d.precision.reduce_dtype = "bf16";
  EXPECT_NE(runtime_refusal(runtime_preset("kempnerforge"), d, h200).find("fp32 only"), std::string::npos);
  d = c;
  d.precision.fp8 = Fp8Recipe::tensorwise;
  EXPECT_NE(runtime_refusal(runtime_preset("kempnerforge"), d, h200).find("\"none\" only"), std::string::npos);

  auto rows = read_published_csv(std::string(SHARDCAST_TEST_CONFIG_DIR) + "/published/outside.csv");
  HardwareSet hw;
  const auto cases = resolve_cases(rows, hw);
  int kempner = 0;
  for (const ValidationCase& c : cases) {
    const PublishedRow& r = rows[c.row];
    if (r.row_id.rfind("kempner_", 0) != 0) continue;
    ++kempner;
    EXPECT_EQ(c.cfg.runtime, "kempnerforge") << r.row_id;
    EXPECT_EQ(c.cfg.precision.master_dtype, "bf16") << r.row_id;
    EXPECT_EQ(c.cfg.precision.reduce_dtype, "fp32") << r.row_id;
    EXPECT_GT(c.cfg.training.grad_accum, 1) << r.row_id;  // so the sync term matters for every row
    EXPECT_FALSE(c.options.sync_every_micro_step) << r.row_id;
    EXPECT_EQ(c.options.unsynced_gradient_dtype, UnsyncedGradDtype::reduce_dtype) << r.row_id;
    EXPECT_FALSE(c.options.root_unit) << r.row_id;
    EXPECT_EQ(c.options.cross_entropy, CrossEntropyImpl::native) << r.row_id;
  }
  EXPECT_EQ(kempner, 5);
}

// OLMo-core's README rows (outside.csv) take the generation of their commit's date; their own
// columns (cross_entropy, fp8_all_gather) agree with what that generation's code does.
TEST(RuntimeGenerations, OlmoCoreRowsTakeTheGenerationOfTheirCommit) {
  const std::string fw = "OLMo-core @e27ba7455 (FSDP2 fully_shard)";
  EXPECT_EQ(runtime_for_framework(fw, "2024-11-05"), "olmo-core");          // e27ba7455
  EXPECT_EQ(runtime_for_framework(fw, "2024-10-23"), "olmo-core-2024-09");  // 310866e45
  EXPECT_EQ(runtime_for_framework(fw, "2024-11-01"), "olmo-core");          // 00d34f693: from_date is inclusive
  EXPECT_THROW(runtime_for_framework(fw, "2024-12-04"), InputError);      // TrainModule: not read
  EXPECT_THROW(runtime_for_framework(fw, "2024-09-01"), InputError);      // before torchao float8
  EXPECT_THROW(runtime_for_framework(fw), InputError);                    // no open-ended generation
  EXPECT_EQ(runtime_generations("olmo-core"), (std::vector<std::string>{"olmo-core-2024-09", "olmo-core"}));

  auto rows = read_published_csv(std::string(SHARDCAST_TEST_CONFIG_DIR) + "/published/outside.csv");
  int early = 0, late = 0;
  for (const PublishedRow& r : rows) {
    if (r.row_id.rfind("olmo_core_", 0) != 0) continue;
    ASSERT_TRUE(r.skip_reason.empty()) << r.row_id << ": " << r.skip_reason;
    const bool old_table = r.source.find("@310866e45") != std::string::npos;  // the README of 2024-10-23
    EXPECT_EQ(r.cfg.runtime, old_table ? "olmo-core-2024-09" : "olmo-core") << r.row_id;
    (old_table ? early : late)++;
    const RuntimeTerms& t = runtime_preset(r.cfg.runtime).terms;
    ASSERT_TRUE(r.cross_entropy.has_value()) << r.row_id;
    CrossEntropyImpl profile;
    ASSERT_TRUE(parse_cross_entropy(t.cross_entropy, profile));
    EXPECT_EQ(*r.cross_entropy, profile) << r.row_id;
    if (r.fp8_all_gather) {
      EXPECT_EQ(*r.fp8_all_gather, t.fp8_all_gather) << r.row_id;
    }
  }
  EXPECT_EQ(early, 2);
  EXPECT_EQ(late, 8);
  HardwareSet hw;
  for (const ValidationCase& c : resolve_cases(rows, hw)) {
    const PublishedRow& r = rows[c.row];
    if (r.row_id.rfind("olmo_core_", 0) != 0) continue;
    EXPECT_TRUE(c.options.sync_every_micro_step) << r.row_id;
    EXPECT_EQ(c.options.fp32_logits_held, r.cfg.runtime == "olmo-core-2024-09") << r.row_id;
    EXPECT_FALSE(c.options.expandable_segments) << r.row_id;
  }
}

// The fused kernel moves 2A·d bytes per token per norm instead of (4A + 28)·d; nothing else in
// the block changes (saved tensors, FLOPs, the other ops). MPT's LayerNorm is one kernel either way.
TEST(RuntimeGenerations, FusedRmsNormChangesOnlyTheNormTraffic) {
  const ModelSpec llama = load_model("llama3-8b");
  const int b = 2, s = 4096, A = 2;
  const double T = double(b) * s, d = llama.d_model;
  const auto eager = block_forward_ops(llama, b, s, A, NormImpl::eager);
  const auto fused = block_forward_ops(llama, b, s, A, NormImpl::fused);
  ASSERT_EQ(eager.size(), fused.size());
  int norms = 0;
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_EQ(eager[i].saved_bytes, fused[i].saved_bytes) << eager[i].name;
    EXPECT_EQ(eager[i].flops, fused[i].flops) << eager[i].name;
    if (std::string(eager[i].name).find("norm") != std::string::npos) {
      EXPECT_DOUBLE_EQ(eager[i].bytes, T * (4.0 * A + 28.0) * d);
      EXPECT_DOUBLE_EQ(fused[i].bytes, T * 2.0 * A * d);
      EXPECT_DOUBLE_EQ(fused[i].fused_bytes, eager[i].fused_bytes);  // compile's traffic is the same
      ++norms;
    } else {
      EXPECT_EQ(eager[i].bytes, fused[i].bytes) << eager[i].name;
    }
  }
  EXPECT_EQ(norms, 2);
  const ModelSpec mpt = load_model("mpt-7b");
  const auto mpt_eager = block_forward_ops(mpt, b, s, A, NormImpl::eager);
  const auto mpt_fused = block_forward_ops(mpt, b, s, A, NormImpl::fused);
  for (size_t i = 0; i < mpt_eager.size(); ++i) EXPECT_EQ(mpt_eager[i].bytes, mpt_fused[i].bytes) << mpt_eager[i].name;

  // Whole plan: the April-2024 generation is faster than the eager-norm one of 2025 on the same
  // eager config (fused norms); its allocated peak is that one's plus the fp32 logits its loop
  // keeps through backward (fp32_logits_held: 4 bytes × 8192 tokens × vocab, the peak being the
  // loss's backward) minus the fp32 input the eager final norm keeps for backward (4·d bytes ×
  // 8192 tokens; op-SAC blocks recompute theirs), exact to the rounding of the sums.
  const Prediction late = plan_8b("A100-80GB-SXM", 64, "torchtitan-2025-02");
  const Prediction early = plan_8b("A100-80GB-SXM", 64, "torchtitan-2024-04");
  EXPECT_GT(early.tokens_per_s_per_gpu, late.tokens_per_s_per_gpu);
  EXPECT_NEAR(early.mem_peak_bytes,
              late.mem_peak_bytes + 4.0 * 8192 * double(llama.vocab) - 4.0 * llama.d_model * 8192.0, 1.0);
  EXPECT_EQ(early.runtime, "torchtitan-2024-04");

  // torch's fused kernel behind nn.RMSNorm (torchtitan-2025-07 against torchtitan-2025-02, which
  // differ in it and in torchao's saved float8 input, unused in bf16): the eager run gets faster
  // and its peak loses the eager final norm's fp32 input; compiled, nothing moves (compile fused
  // the norm already).
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::selective_op,
                                    1, 8192, 1);
  HardwareSpec hw = load_hardware("H100-80GB-SXM");
  hw.efficiency["overlap_compute_slowdown"] = 0.0;  // compute categories = their op sums
  auto plan_as = [&](const char* runtime, bool compile) {
    c.runtime = runtime;
    c.precision.compile = compile;
    PlanOptions opt = resolve_plan_options(c, hw);
    opt.op_breakdown = true;
    return plan(c, hw, opt);
  };
  const Prediction jul = plan_as("torchtitan-2025-07", false), feb = plan_as("torchtitan-2025-02", false);
  EXPECT_GT(jul.tokens_per_s_per_gpu, feb.tokens_per_s_per_gpu);
  EXPECT_NEAR(jul.mem_peak_bytes, feb.mem_peak_bytes - 4.0 * llama.d_model * 8192.0, 1.0);
  const auto secs = [](const Prediction& p, OpCategory k) { return p.op_seconds.at(size_t(k)); };
  EXPECT_DOUBLE_EQ(secs(jul, OpCategory::matmul), secs(feb, OpCategory::matmul));
  EXPECT_LT(secs(jul, OpCategory::norm), 0.5 * secs(feb, OpCategory::norm));  // 2A·d against (4A + 28)·d bytes
  const Prediction jul_compiled = plan_as("torchtitan-2025-07", true), feb_compiled = plan_as("torchtitan-2025-02", true);
  EXPECT_DOUBLE_EQ(jul_compiled.tokens_per_s_per_gpu, feb_compiled.tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(jul_compiled.mem_peak_bytes, feb_compiled.mem_peak_bytes);
}

// Generations of a framework share its cross-validated runtime band (configs/bands.toml has a
// "runtime torchtitan" band on H100 from the AWS rows, which run torchtitan-2024-05).
TEST(RuntimeGenerations, AGenerationStatesItsFrameworksBand) {
  const Prediction late = plan_8b("H100-80GB-SXM", 32, "torchtitan");
  const Prediction early = plan_8b("H100-80GB-SXM", 32, "torchtitan-2024-04");
  EXPECT_EQ(early.error_band_rel, late.error_band_rel);
  EXPECT_EQ(early.error_band_note, late.error_band_note);
  EXPECT_EQ(early.error_band_note.find("prior only"), std::string::npos) << early.error_band_note;
}

TEST(RuntimeGenerations, EmitWritesAGenerationsFilesAsItsFrameworks) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1,
                                    8192, 1);
  c.runtime = "torchtitan-2024-04";
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const auto targets = emit_targets(c, hw);
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front().runtime, "torchtitan-2024-04");
  EXPECT_EQ(targets.front().files, (std::vector<std::string>{"torchtitan.toml", "torchtitan_overrides.txt"}));
  EXPECT_EQ(targets.front().prediction.runtime, "torchtitan-2024-04");
  // Its files are refused: that torchtitan read keys of its own time (emit_targets).
  EXPECT_NE(targets.front().refusal.find("before v0.2.0"), std::string::npos) << targets.front().refusal;
  for (size_t i = 1; i < targets.size(); ++i) EXPECT_NE(targets[i].runtime, "torchtitan");  // not twice
}

}  // namespace
}  // namespace shardcast::planner
