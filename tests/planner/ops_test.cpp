// Compute model: hand-computed FLOPs, bytes and times of the op listing.
#include "planner/model/ops.h"

#include <gtest/gtest.h>

#include "planner/model/ac_policy.h"
#include "shared/config_io.h"

namespace shardcast::planner {
namespace {

ModelSpec llama7b() { return load_model("llama2-7b"); }

EfficiencyParams unit_eff() {
  EfficiencyParams e;
  e.matmul_eff = 0.5;
  e.matmul_dim_half = 0;  // no shape penalty: times are flops / (peak·0.5)
  e.attention_eff = 0.25;
  e.attention_tile = 0;
  e.hbm_eff = 1.0;
  e.compile_elementwise_factor = 0.5;
  e.fp8_matmul_eff = 0.5;
  return e;
}

TEST(Ops, BlockMatmulFlopsAreTwiceWeightsPerToken) {
  // Every weight of a block is used once per token in one GEMM: forward GEMM FLOPs = 2·P_w·T.
  const ModelSpec m = llama7b();
  const int b = 2, s = 4096;
  double gemm = 0, attn = 0;
  for (const Op& op : block_forward_ops(m, b, s, 2)) {
    if (op.kind == OpKind::matmul) gemm += op.flops;
    if (op.kind == OpKind::attention) attn += op.flops;
  }
  const double weights = double(m.block_params() - 2 * m.d_model);  // minus the norm vectors
  EXPECT_DOUBLE_EQ(gemm, 2.0 * weights * b * s);
  // Causal attention executes half of QKᵀ and PV: 2·b·s²·d (the MFU convention counts 4·b·s²·d).
  EXPECT_DOUBLE_EQ(attn, 2.0 * b * double(s) * s * m.d_model);
}

TEST(Ops, HeadGemmAndLogitsBytes) {
  const ModelSpec m = llama7b();
  const auto ops = head_forward_ops(m, 1, 1024, 2);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_DOUBLE_EQ(ops[1].flops, 2.0 * 1024 * m.d_model * double(m.vocab));
  // Cross entropy: (A + 12) bytes per logit forward, fp32 log-probabilities saved.
  EXPECT_DOUBLE_EQ(ops[2].bytes, 1024.0 * m.vocab * 14.0);
  EXPECT_DOUBLE_EQ(ops[2].saved_bytes, 1024.0 * m.vocab * 4.0);
}

TEST(Ops, SavedActivationsMatchHandCount) {
  // Llama block, bf16, per token: norm inputs 2·(2d + 4 B), q,k,v + wqkv input + attention
  // output 2·(3d + 2kv) + 4·heads, w1/w3 input 2d, w1x, silu(w1x) and w3x 2·3f, w2 input 2f
  // (= formulas.md §2.4: 2·(6d + 2kv + 4f) + 4·heads + 8).
  const ModelSpec m = llama7b();
  const double d = m.d_model, kv = double(m.kv_dim()), f = double(m.ffn_dim);
  double saved = 0;
  for (const Op& op : block_forward_ops(m, 1, 1, 2)) saved += op.saved_bytes;
  const double expect = 2 * (2 * d + 4) + 2 * (3 * d + 2 * kv) + 4 * m.n_heads + 2 * d + 2 * 3 * f + 2 * f;
  EXPECT_DOUBLE_EQ(saved, expect);
  EXPECT_DOUBLE_EQ(saved, 2 * (6 * d + 2 * kv + 4 * f) + 4 * m.n_heads + 8);
}

// Qwen3-32B (model.head_dim 128 on d_model 5120 / 64 heads, model.qk_norm): the projections and
// attention run at the query width q = 64 · 128 = 8192, not d; the per-head norms keep their
// inputs and a statistic per head row. Two counts of the saved bytes, the op list and
// ac_policy's closed form, agree exactly.
TEST(Ops, Qwen3BlockRunsAtTheQueryWidth) {
  const ModelSpec m = load_model("qwen3-32b");
  const double d = 5120, q = 8192, kv = 1024, f = 25600, h = 64, kvh = 8;
  const int s = 4096;
  bool saw_norm = false;
  for (const Op& op : block_forward_ops(m, 1, s, 2)) {
    const std::string n = op.name;
    if (n == "wqkv") EXPECT_DOUBLE_EQ(op.n, q + 2 * kv);
    if (n == "wo") {
      EXPECT_DOUBLE_EQ(op.k, q);
      EXPECT_DOUBLE_EQ(op.n, d);
    }
    if (op.kind == OpKind::attention) EXPECT_DOUBLE_EQ(op.flops, 2.0 * s * double(s) * q);
    if (n == "qk_norm") {
      saw_norm = true;
      EXPECT_DOUBLE_EQ(op.saved_bytes, s * (2 * (q + kv) + 4 * (h + kvh)));
    }
  }
  EXPECT_TRUE(saw_norm);
  double saved = 0;
  for (const Op& op : block_forward_ops(m, 1, 1, 2)) saved += op.saved_bytes;
  const double by_hand = 2 * (4 * d + 2 * q + 2 * kv + 4 * f) + 4 * h + 8 + 2 * (q + kv) + 4 * (h + kvh);
  EXPECT_DOUBLE_EQ(saved, by_hand);
  EXPECT_DOUBLE_EQ(block_kept_bytes(m, 1, 2, BlockAc::none, false), by_hand);
  // Every weight once per token in one GEMM, as for a Llama block (norm vectors excluded).
  double gemm = 0;
  for (const Op& op : block_forward_ops(m, 1, s, 2))
    if (op.kind == OpKind::matmul) gemm += op.flops;
  EXPECT_DOUBLE_EQ(gemm, 2.0 * double(m.block_params() - m.block_norm_params()) * s);
  EXPECT_EQ(m.block_norm_params(), 2 * 5120 + 2 * 128);
}

TEST(Ops, RooflineTimes) {
  ComputeContext c;
  c.peak_flops = 100e12;
  c.hbm_bandwidth = 1e12;
  c.eff = unit_eff();
  Op mm;
  mm.kind = OpKind::matmul;
  mm.m = mm.n = mm.k = 4096;
  mm.flops = 2.0 * 4096.0 * 4096 * 4096;
  mm.bytes = 2.0 * 3 * 4096 * 4096;
  EXPECT_DOUBLE_EQ(op_forward_time(mm, c), mm.flops / 50e12);
  EXPECT_DOUBLE_EQ(op_backward_time(mm, c), 2 * mm.flops / 50e12);
  // A tiny-K GEMM is bound by its bytes.
  Op thin = mm;
  thin.k = 1;
  thin.flops = 2.0 * 4096 * 4096;
  thin.bytes = 2.0 * (4096 + 4096 + 4096.0 * 4096);
  EXPECT_DOUBLE_EQ(op_forward_time(thin, c), thin.bytes / 1e12);
  Op ew;
  ew.kind = OpKind::elementwise;
  ew.bytes = 1e9;
  EXPECT_DOUBLE_EQ(op_forward_time(ew, c), 1e-3);
  // compile: the fused traffic over the achieved fraction of ideal fusion (0.5 here) ...
  ew.fused_bytes = 0.25e9;
  c.compile = true;
  EXPECT_DOUBLE_EQ(op_forward_time(ew, c), 0.5e-3);
  // ... never more than eager (an op compile cannot shorten keeps its traffic).
  ew.fused_bytes = 0.8e9;
  EXPECT_DOUBLE_EQ(op_forward_time(ew, c), 1e-3);
  Op att;
  att.kind = OpKind::attention;
  att.flops = 1e12;
  att.k = 4096;
  EXPECT_DOUBLE_EQ(op_forward_time(att, c), 1e12 / 25e12);
  EXPECT_DOUBLE_EQ(op_backward_time(att, c), 2.5 * 1e12 / 25e12);
}

TEST(Ops, ShapeEfficiencyFallsForSmallDims) {
  ComputeContext c;
  c.peak_flops = 100e12;
  c.hbm_bandwidth = 1e15;  // keep it compute-bound
  c.eff = unit_eff();
  c.eff.matmul_dim_half = 64;
  // Without an SM grid (the cpu profile's path) a GEMM's time is 2mnk / (rate·k/(k + dim_half)),
  // k the smallest dimension (the op's FLOPs are 2mnk, as gemm() in ops.cpp builds them).
  Op big;
  big.kind = OpKind::matmul;
  big.m = big.n = big.k = 8192;
  big.flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  Op small = big;
  small.k = 256;
  small.flops = 2.0 * 8192.0 * 8192.0 * 256.0;
  EXPECT_NEAR(op_forward_time(big, c), big.flops / (50e12 * 8192 / (8192 + 64)), 1e-12);
  EXPECT_NEAR(op_forward_time(small, c), small.flops / (50e12 * 256 / (256 + 64.0)), 1e-12);
}

TEST(Ops, Fp8MatmulIsFasterAndPaysCasts) {
  ComputeContext c;
  c.peak_flops = 100e12;
  c.hbm_bandwidth = 1e12;
  c.eff = unit_eff();
  Op mm;
  mm.kind = OpKind::matmul;
  mm.m = mm.n = mm.k = 8192;
  mm.flops = 2.0 * 8192.0 * 8192 * 8192;
  const double bf16 = op_forward_time(mm, c);
  c.fp8 = Fp8Recipe::tensorwise;
  c.fp8_peak_flops = 200e12;
  // Forward casts of tensorwise, eager (fp8_recipe.cpp): x amax (2 B) + cast to both layouts
  // (2 + 2 B), weight amax (2 B) + cast (2 + 1 B), per element of 8192²; two amax second
  // stages of ~0 bytes at the 2 µs kernel floor.
  const double cast = (8192.0 * 8192) * (2 + 4 + 2 + 3) / 1e12 + 2 * 2e-6;
  EXPECT_NEAR(op_forward_time(mm, c), mm.flops / 100e12 + cast, 1e-12);
  EXPECT_LT(op_forward_time(mm, c), bf16);
}

}  // namespace
}  // namespace shardcast::planner

namespace shardcast::planner {
namespace {

TEST(Ops, FusedRopeAndSwigluMoveTheFusedBytes) {
  // Runtime terms rope / swiglu = fused: RoPE (2A + 16)·(d + kv) → 2A·(d + kv) and SwiGLU
  // 5A·f → 3A·f bytes per token forward; every other op unchanged.
  const ModelSpec m = load_model("llama3-8b");
  const int b = 2, s = 4096, A = 2;
  const double T = double(b) * s, d = m.d_model, kv = double(m.kv_dim()), f = double(m.ffn_dim);
  const auto eager = block_forward_ops(m, b, s, A);
  const auto fused = block_forward_ops(m, b, s, A, NormImpl::eager, true, true);
  ASSERT_EQ(eager.size(), fused.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    const std::string n = eager[i].name;
    if (n == "rope") {
      EXPECT_DOUBLE_EQ(eager[i].bytes, T * (2.0 * A + 16.0) * (d + kv));
      EXPECT_DOUBLE_EQ(fused[i].bytes, T * 2.0 * A * (d + kv));
    } else if (n == "silu_mul") {
      EXPECT_DOUBLE_EQ(eager[i].bytes, T * 5.0 * A * f);
      EXPECT_DOUBLE_EQ(fused[i].bytes, T * 3.0 * A * f);
    } else {
      EXPECT_DOUBLE_EQ(eager[i].bytes, fused[i].bytes) << n;
    }
    EXPECT_DOUBLE_EQ(eager[i].fused_bytes, fused[i].fused_bytes) << n;  // compile's traffic is the same
    EXPECT_DOUBLE_EQ(eager[i].saved_bytes, fused[i].saved_bytes) << n;
  }
}

}  // namespace
}  // namespace shardcast::planner
