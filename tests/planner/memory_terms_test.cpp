// Activation and loss memory (ac_policy.h, ops.h loss_memory), op-level selective
// checkpointing and fp8 all-gather: two ways of computing the same thing, properties, and the
// published figures the planner was not fitted on (configs/published/holdout.csv).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "planner/model/ac_policy.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "planner/evidence/published_csv.h"
#include "planner/evidence/validate.h"
#include "shared/config_io.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::component;
using test::make_config;


TEST(MemoryTerms, EagerBlockEqualsTheOpsSavedBytes) {
  // ac_policy counts tensors from the shape; ops.cpp counts what each op saves: same number
  // (exact, both are sums of the same integer-valued terms).
  for (const char* name : {"llama2-7b", "llama3-8b", "mpt-760m", "mpt-7b"}) {
    const ModelSpec m = load_model(name);
    double ops = 0;
    for (const Op& op : block_forward_ops(m, 2, 1024, 2)) ops += op.saved_bytes;
    EXPECT_DOUBLE_EQ(block_kept_bytes(m, 2 * 1024, 2, BlockAc::none, false), ops) << name;
  }
}

TEST(MemoryTerms, PoliciesOrderAsTheyShould) {
  // Checkpointing keeps less than op-SAC, which keeps less than nothing; compile never keeps more.
  for (const char* name : {"llama2-7b", "llama3-8b", "mpt-760m", "llama2-70b"}) {
    const ModelSpec m = load_model(name);
    const double T = 8192;
    for (bool compile : {false, true}) {
      const double none = block_kept_bytes(m, T, 2, BlockAc::none, compile);
      const double sac = block_kept_bytes(m, T, 2, BlockAc::selective_op, compile);
      const double ckpt = block_kept_bytes(m, T, 2, BlockAc::checkpointed, compile);
      EXPECT_LT(ckpt, sac) << name;
      EXPECT_LT(sac, none) << name;
    }
    // Compile recomputes silu(w1·x) only (ac_policy.cpp: GEMM inputs stay saved): A·f per
    // token less for SwiGLU, the same for GELU (its output is fc2's input).
    const double saved_silu = m.mlp_type == MlpType::swiglu ? T * 2.0 * double(m.ffn_dim) : 0.0;
    EXPECT_DOUBLE_EQ(block_kept_bytes(m, T, 2, BlockAc::none, true),
                     block_kept_bytes(m, T, 2, BlockAc::none, false) - saved_silu)
        << name;
  }
}

TEST(MemoryTerms, SelectiveOpHandCount) {
  // Llama-3-8B, bf16, per token: input d, wq d, wv kv, SDPA out d + 4·heads, w1 f, w2 d.
  const ModelSpec m = load_model("llama3-8b");
  const double d = m.d_model, kv = double(m.kv_dim()), f = double(m.ffn_dim);
  EXPECT_DOUBLE_EQ(block_kept_bytes(m, 1, 2, BlockAc::selective_op, false),
                   2 * (d + d + kv + d + f + d) + 4.0 * m.n_heads);
}

TEST(MemoryTerms, SelectiveOpSitsBetweenNoneAndFull) {
  // Activations and step time of op-SAC lie between no checkpointing and full checkpointing.
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  auto at = [&](AcMode ac) {
    return plan(make_config("llama3-8b", "H100-80GB-SXM", 64, ShardingStrategy::full_shard, ac, 1, 8192), hw);
  };
  const Prediction none = at(AcMode::none), sac = at(AcMode::selective_op), full = at(AcMode::full);
  EXPECT_LT(component(full, "activations"), component(sac, "activations"));
  EXPECT_LT(component(sac, "activations"), component(none, "activations"));
  EXPECT_LT(none.step_time_s, sac.step_time_s);
  EXPECT_LT(sac.step_time_s, full.step_time_s);
  EXPECT_GT(sac.hfu, sac.mfu);       // it recomputes wk, wo, w3
  EXPECT_LT(sac.hfu / sac.mfu, full.hfu / full.mfu);
}

TEST(MemoryTerms, LossImplementationsOrderByMemory) {
  // fp32 up-cast keeps more than the native bf16 loss, which keeps more than a fused kernel.
  const double T = 16384, V = 128256;
  const LossMemory up = loss_memory(CrossEntropyImpl::fp32_upcast, T, V, 2);
  const LossMemory nat = loss_memory(CrossEntropyImpl::native, T, V, 2);
  const LossMemory fused = loss_memory(CrossEntropyImpl::fused, T, V, 2);
  auto peak = [](const LossMemory& l) { return l.saved + std::max(l.fwd_transient, l.bwd_transient); };
  EXPECT_GT(peak(up), peak(nat));
  EXPECT_GT(peak(nat), peak(fused));
  // fp32 up-cast: 4 B/logit saved, 8 B/logit of fp32 gradients in backward: 12 B/logit at the peak.
  EXPECT_DOUBLE_EQ(peak(up), 12.0 * T * V);
}

TEST(MemoryTerms, EagerRmsNormKeepsItsFp32Tensors) {
  // Two ways to the same bytes: the plan's allocated peak (the head's backward: every block's
  // activations and the head's are held) with eager and with fused norms, against the closed
  // form per norm and token — eager (torchtitan 2024, transformers) keeps the fp32 up-cast input,
  // +4·d; eager_fp32_weight (litgpt) also the fp32 normalised tensor, +8·d − A·d — over the 2
  // norms of each of the 32 blocks and the final norm. Exact up to summation rounding (1 B).
  // Under torch.compile the chain is one kernel: no difference.
  TrainConfig c = make_config("llama2-7b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 1, 4096);
  c.precision.param_dtype = "bf16";
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const double T = 4096, d = c.model.d_model, A = 2, norms = 2.0 * c.model.n_layers + 1;
  PlanOptions o;
  auto peak = [&](NormImpl n, bool compile) {
    PlanOptions p = o;
    p.rmsnorm = n;
    TrainConfig k = c;
    k.precision.compile = compile;
    return plan(k, hw, p).mem_peak_bytes;
  };
  const double fused = peak(NormImpl::fused, false);
  EXPECT_NEAR(peak(NormImpl::eager, false) - fused, norms * T * 4 * d, 1.0);
  EXPECT_NEAR(peak(NormImpl::eager_fp32_weight, false) - fused, norms * T * (8 * d - A * d), 1.0);
  EXPECT_DOUBLE_EQ(peak(NormImpl::eager, true), peak(NormImpl::fused, true));
  EXPECT_DOUBLE_EQ(eager_norm_extra_saved_per_token(load_model("mpt-7b"), 2, NormImpl::eager, false), 0.0);
}

TEST(MemoryTerms, Fp8AllGatherHalvesTheGatheredBlocks) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  auto c = make_config("llama3-8b", "H100-80GB-SXM", 64, ShardingStrategy::full_shard, AcMode::selective_op, 2, 8192);
  c.precision.fp8 = Fp8Recipe::tensorwise;
  PlanOptions bf16_gather, fp8_gather;
  fp8_gather.fp8_all_gather = true;
  const Prediction a = plan(c, hw, bf16_gather), b = plan(c, hw, fp8_gather);
  EXPECT_LT(b.comm_s, a.comm_s);
  EXPECT_GT(b.comm_s, 0.45 * a.comm_s);  // embedding and head still gather bf16; latency stays
  EXPECT_LE(b.step_time_s, a.step_time_s);
  // Without --fp8 the flag changes nothing.
  c.precision.fp8 = Fp8Recipe::none;
  EXPECT_DOUBLE_EQ(plan(c, hw, bf16_gather).step_time_s, plan(c, hw, fp8_gather).step_time_s);
}

// torchao's Float8Linear keeping each Linear's fp8-cast weight for backward (runtime term
// fp8_weight_saved): a block without checkpointing keeps one byte per Linear weight more, so at
// a peak where every block's saved tensors are live (the loss's backward) the difference is
// exactly L × (block parameters − its two norm vectors); lightning-thunder's PR #1528 pairs,
// which differ by torchao's force_recompute_fp8_weight_in_bwd alone, measured 6.12 and 6.50 GiB
// for Llama-2-7B and Llama-3-8B (docs/validation.md "Memory").
TEST(MemoryTerms, Fp8WeightsSavedForBackward) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (const char* model : {"llama2-7b", "llama3-8b"}) {
    auto c = make_config(model, "H100-80GB-SXM", 8, ShardingStrategy::shard_grad_op, AcMode::none, 1, 4096);
    c.precision.fp8 = Fp8Recipe::tensorwise;
    PlanOptions recast, saved;
    recast.fp8_all_gather = saved.fp8_all_gather = true;
    saved.fp8_weight_saved = true;
    const ModelSpec& m = c.model;
    const std::vector<int64_t> units = m.fsdp_unit_params();
    const double linear_weights = double(m.n_layers) * (double(units[1]) - 2.0 * m.d_model);
    const double diff = plan(c, hw, saved).mem_peak_bytes - plan(c, hw, recast).mem_peak_bytes;
    EXPECT_NEAR(diff, linear_weights, 1.0) << model;
    EXPECT_NEAR(diff / double(1ull << 30), std::string(model) == "llama2-7b" ? 6.03 : 6.50, 0.01) << model;
    // Checkpointed blocks keep it only while their recompute runs: one block's at most.
    c.activation_checkpointing.mode = AcMode::full;
    const double ckpt_diff = plan(c, hw, saved).mem_peak_bytes - plan(c, hw, recast).mem_peak_bytes;
    EXPECT_GE(ckpt_diff, 0.0) << model;
    EXPECT_LE(ckpt_diff, double(units[1]) + 1.0) << model;
    // Without --fp8 the term changes nothing.
    c.precision.fp8 = Fp8Recipe::none;
    EXPECT_DOUBLE_EQ(plan(c, hw, saved).mem_peak_bytes, plan(c, hw, recast).mem_peak_bytes) << model;
  }
}

// torchao's tensorwise Float8Linear keeping each Linear's input cast to fp8 instead of the
// input (runtime term fp8_input_saved): a plain block keeps its two norm outputs and the MLP's
// down-projection input at 1 byte instead of A, and a 1-byte copy of the attention output
// beside the one attention keeps. Closed form at a peak where every block's saved tensors are
// live: n_layers · T · ((A − 1)(2d + f) − d) less; lightning-thunder's Llama-2-7B rows (1 × 4096,
// zero2): 1.84 GiB. The row-wise recipes keep the bf16 input (nothing changes), so does a
// plan without fp8; checkpointed blocks keep only their input, so at most one block's worth.
TEST(MemoryTerms, Fp8InputSavedInsteadOfTheInput) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (const char* model : {"llama2-7b", "llama3-8b"}) {
    auto c = make_config(model, "H100-80GB-SXM", 8, ShardingStrategy::shard_grad_op, AcMode::none, 1, 4096);
    c.precision.compile = true;
    c.precision.fp8 = Fp8Recipe::tensorwise;
    PlanOptions hp, fp8;
    fp8.fp8_input_saved = true;
    const ModelSpec& m = c.model;
    const double T = 4096, A = 2;
    const double expected = m.n_layers * T * ((A - 1) * (2.0 * m.d_model + double(m.ffn_dim)) - m.d_model);
    const double diff = plan(c, hw, hp).mem_peak_bytes - plan(c, hw, fp8).mem_peak_bytes;
    EXPECT_NEAR(diff, expected, 64.0) << model;
    if (std::string(model) == "llama2-7b") {
      EXPECT_NEAR(diff / double(1ull << 30), 1.84, 0.01);
    }
    for (Fp8Recipe r : {Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp, Fp8Recipe::none}) {
      c.precision.fp8 = r;
      EXPECT_DOUBLE_EQ(plan(c, hw, hp).mem_peak_bytes, plan(c, hw, fp8).mem_peak_bytes) << model;
    }
    c.precision.fp8 = Fp8Recipe::tensorwise;
    c.activation_checkpointing.mode = AcMode::full;
    const double ckpt_diff = plan(c, hw, hp).mem_peak_bytes - plan(c, hw, fp8).mem_peak_bytes;
    EXPECT_GE(ckpt_diff, 0.0) << model;
    EXPECT_LE(ckpt_diff, expected / m.n_layers + 64.0) << model;
  }
}

// litgpt's fused q/k/v GEMM (runtime term qkv_output_kept): with K/V at n_heads attention saves
// v as a view of that GEMM's output, so the whole output outlives the forward beside the rotated
// q and k. Closed form for plain blocks: n_layers · T · A · (d + kv) more at the peak (the
// peak is in the last block's backward, after every block's forward: exact to a byte of float
// sums); lightning-thunder's PR #940 rows (llama2-7b, zero2, 1 × 4096): 2.0 GiB. With grouped
// K/V (llama3-8b) the view is dropped by the expand-and-reshape copy: nothing changes; MPT
// (no RoPE: its views are the whole output already) likewise. Checkpointed blocks keep it
// only while one block's recompute runs.
TEST(MemoryTerms, FusedQkvOutputKeptThroughTheValueView) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  PlanOptions separate, fused;
  fused.qkv_output_kept = true;
  for (const char* model : {"llama2-7b", "llama3-8b", "mpt-7b"}) {
    auto c = make_config(model, "H100-80GB-SXM", 8, ShardingStrategy::shard_grad_op, AcMode::none, 1, 4096);
    c.precision.compile = true;
    const ModelSpec& m = c.model;
    const bool mha_rope = m.n_kv_heads == m.n_heads && m.mlp_type == MlpType::swiglu;
    const double expected = mha_rope ? double(m.n_layers) * 4096.0 * 2.0 * (m.d_model + double(m.kv_dim())) : 0.0;
    const double diff = plan(c, hw, fused).mem_peak_bytes - plan(c, hw, separate).mem_peak_bytes;
    EXPECT_NEAR(diff, expected, 1.0) << model;
    if (std::string(model) == "llama2-7b") {
      EXPECT_NEAR(diff / double(1ull << 30), 2.0, 1e-9);
    }
    c.activation_checkpointing.mode = AcMode::full;
    const double ckpt_diff = plan(c, hw, fused).mem_peak_bytes - plan(c, hw, separate).mem_peak_bytes;
    EXPECT_GE(ckpt_diff, 0.0) << model;
    EXPECT_LE(ckpt_diff, expected / m.n_layers + 1.0) << model;
  }
}

TEST(MemoryTerms, GradientsFreedBetweenStepsAreNotAtTheFirstPeak) {
  // zero_grad(set_to_none=True): at the head's backward of a one-micro-step step no sharded
  // gradient exists yet, so the peak drops by at most the whole sharded gradient 4·P/N; with
  // two micro-steps every shard exists again during the second one, so the peak is the same.
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  PlanOptions kept, freed;
  freed.grads_freed_between_steps = true;
  for (int ga : {1, 2}) {
    const auto c = make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::selective_op, 2,
                               8192, ga);
    const Prediction a = plan(c, hw, kept), b = plan(c, hw, freed);
    const double all_grads = 4.0 * double(c.model.total_params()) / 8;
    EXPECT_LE(b.mem_peak_bytes, a.mem_peak_bytes);
    EXPECT_GE(b.mem_peak_bytes, a.mem_peak_bytes - all_grads * (1 + 1e-12));
    if (ga == 1) {
      EXPECT_LT(b.mem_peak_bytes, a.mem_peak_bytes - 0.5 * all_grads);
    }
    // A peak in the second micro-step holds every shard (relative 1e-9: float sums).
    if (ga == 2) {
      EXPECT_NEAR(b.mem_peak_bytes, a.mem_peak_bytes, 1e-9 * a.mem_peak_bytes);
    }
    EXPECT_DOUBLE_EQ(b.step_time_s, a.step_time_s);  // memory placement only
  }
}

TEST(MemoryTerms, TorchtitanSeventyBOnSixtyFourA100) {
  // torchtitan docs/performance.md: Llama-2-70B on 64 A100-80GB with selective op AC ran at
  // local batch 1 and ran out of memory at local batch 2 (its footnote 1).
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  auto c = make_config("llama2-70b", "A100-80GB-SXM", 64, ShardingStrategy::full_shard, AcMode::selective_op, 1, 4096);
  PlanOptions torchtitan;  // fp32 up-cast loss (the default), gradients set to None between steps
  torchtitan.grads_freed_between_steps = true;
  EXPECT_TRUE(plan(c, hw, torchtitan).fits);
  c.training.micro_batch = 2;
  EXPECT_FALSE(plan(c, hw, torchtitan).fits);
}

TEST(MemoryTerms, HoldOutPeakReservedWithinTenPercent) {
  // Never fitted on: torchtitan's published max-reserved memory (H100 96GB, H200). The planner's
  // reserved estimate is compared with it like for like; 10% is PyTorch's FSDPMemTracker test
  // tolerance (on active bytes), the baseline the planner must at least match.
  const ValidationResult v =
      test::validate_published_file(std::string(SHARDCAST_TEST_CONFIG_DIR) + "/published/holdout.csv");
  int n = 0;
  for (const auto& r : v.rows) {
    if (!r.has_mem) continue;
    ++n;
    EXPECT_LT(std::fabs(r.err_mem_pct), 10.0) << r.row_id;
  }
  EXPECT_GE(n, 9);
}

TEST(MemoryTerms, HoldOutNoRowPredictedMoreThanFivePercentLow) {
  // An under-prediction is an OOM the user did not see coming: the reserved estimate errs high.
  // 5% is the stated limit (docs/validation.md); every published memory figure of the hold-out
  // CSV is checked like for like (mem_metric). None of these rows states its allocator setting
  // (expandable_segments), so each is judged against the reserved range over both settings
  // (err_mem_band_pct: 0 inside it) — the band widens where the setting is unknown.
  const ValidationResult v =
      test::validate_published_file(std::string(SHARDCAST_TEST_CONFIG_DIR) + "/published/holdout.csv");
  int n = 0;
  for (const auto& r : v.rows) {
    if (!r.has_mem) continue;
    ++n;
    EXPECT_FALSE(r.allocator_setting_stated) << r.row_id;
    EXPECT_GT(r.err_mem_band_pct, -5.0) << r.row_id;
    // The point estimate (the runtime profile's setting: torchtitan's launcher sets
    // expandable_segments) holds the same 5% limit.
    EXPECT_GT(r.err_mem_pct, -5.0) << r.row_id;
    EXPECT_LE(r.predicted_reserved_lo_gib, r.predicted_reserved_gib + 1e-9) << r.row_id;
    EXPECT_GE(r.predicted_reserved_hi_gib, r.predicted_reserved_gib - 1e-9) << r.row_id;
  }
  EXPECT_GE(n, 9);
}

// shardcast-train's chunked_lm_loss (cross_entropy = "chunked_rows"). Two ways to the same bytes:
// on fp32 logits of one chunk (the CPU path: at most 1024 tokens a micro-step) its transients are
// fp32_upcast's exactly and it saves 8 bytes a token more (the per-row max and log-sum-exp);
// on bf16 logits of 8192 tokens (a GPU micro-step) the closed form of ops.cpp, with no fp32 copy
// of all logits: its peak at the loss is under fp32_upcast's by (A + 4)·n in forward.
TEST(LossMemory, ChunkedRowsIsFp32UpcastOnOneFp32ChunkAndHoldsNoFp32CopyOnGpus) {
  const double V = 128256;
  for (double T : {256.0, 1024.0}) {
    const LossMemory rows = loss_memory(CrossEntropyImpl::chunked_rows, T, V, 4);
    const LossMemory upcast = loss_memory(CrossEntropyImpl::fp32_upcast, T, V, 4);
    EXPECT_DOUBLE_EQ(rows.fwd_transient, upcast.fwd_transient) << T;
    EXPECT_DOUBLE_EQ(rows.bwd_transient, upcast.bwd_transient) << T;
    EXPECT_DOUBLE_EQ(rows.saved, upcast.saved + 8.0 * T) << T;
  }
  const double T = 8192, n = T * V, c = 1024 * V;
  const LossMemory rows = loss_memory(CrossEntropyImpl::chunked_rows, T, V, 2);
  EXPECT_DOUBLE_EQ(rows.saved, 2.0 * n + 8.0 * T);
  EXPECT_DOUBLE_EQ(rows.fwd_transient, 12.0 * c);
  EXPECT_DOUBLE_EQ(rows.bwd_transient, 2.0 * n + 8.0 * c);
  const LossMemory upcast = loss_memory(CrossEntropyImpl::fp32_upcast, T, V, 2);
  EXPECT_LT(rows.saved + rows.bwd_transient, upcast.saved + upcast.bwd_transient);
  EXPECT_LT(rows.saved + rows.fwd_transient, upcast.saved + upcast.fwd_transient);
}

// The profile: shardcast-train runs chunked_lm_loss with tp = 1 on both paths and
// VocabParallelLossFn (fp32_upcast on the shard) with tp > 1.
TEST(LossMemory, ShardcastTrainRunsTheChunkedLossWithoutTp) {
  TrainConfig c = make_config("llama3.2-1b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 4, 2048);
  c.runtime = "shardcast-train";
  const HardwareSpec h100 = load_hardware("H100-80GB-SXM");
  EXPECT_EQ(resolve_plan_options(c, h100).cross_entropy, CrossEntropyImpl::chunked_rows);
  c.parallelism.tp = 2;
  EXPECT_EQ(resolve_plan_options(c, h100).cross_entropy, CrossEntropyImpl::fp32_upcast);
  TrainConfig cpu = make_config("tiny-2l", "cpu", 2, ShardingStrategy::full_shard, AcMode::none, 2, 128);
  cpu.runtime = "shardcast-train";
  EXPECT_EQ(resolve_plan_options(cpu, load_hardware("cpu")).cross_entropy, CrossEntropyImpl::chunked_rows);
  c.parallelism.tp = 1;
  c.runtime = "shardcast-train-2026-11";  // before 70b0301: the reference loss on the fp32 copy
  EXPECT_EQ(resolve_plan_options(c, h100).cross_entropy, CrossEntropyImpl::fp32_upcast);
}

}  // namespace
}  // namespace shardcast::planner
