#include "planner/model/ops.h"

#include <algorithm>
#include <cassert>

#include "planner/model/chunked_loss.h"
#include "planner/model/fp8_recipe.h"
#include "shared/enum_names.h"

namespace shardcast::planner {

namespace {
Op gemm(const char* name, double m, double k, double n, int act_bytes) {
  Op op;
  op.name = name;
  op.kind = OpKind::matmul;
  op.m = m;
  op.n = n;
  op.k = k;
  op.flops = 2.0 * m * n * k;
  op.bytes = act_bytes * (m * k + k * n + m * n);
  op.saved_bytes = act_bytes * m * k;  // the input (the weight is a parameter)
  return op;
}
// A Llama RMSNorm written in eager PyTorch ops (NormImpl eager or eager_fp32_weight) over T rows
// of width d: a measured kernel table times it by that shape (op_forward_time).
void mark_eager_rmsnorm(Op& op, bool llama, NormImpl norm, double T, double d) {
  if (!llama || norm == NormImpl::fused) return;
  op.m = T;
  op.n = d;
  op.measured = MeasuredOp::rmsnorm;
}
Op elementwise(const char* name, double bytes, double saved_bytes, double fused_bytes = -1) {
  Op op;
  op.name = name;
  op.kind = OpKind::elementwise;
  op.bytes = bytes;
  op.fused_bytes = fused_bytes < 0 ? bytes : fused_bytes;
  op.saved_bytes = saved_bytes;
  return op;
}
}  // namespace

// Per token, d = d_model, q = query width (n_heads · head_dim; d unless model.head_dim is set),
// kv = K/V width, f = ffn width, A = activation bytes. Eager PyTorch,
// each op's HBM traffic (reads + writes), and the fused traffic under torch.compile (one read of
// the chain's inputs, one write of its outputs):
// - RMSNorm (Llama: torchtitan, fms, HF — written in eager PyTorch with an fp32 up-cast):
//   x.float() (r A, w 4), pow(2) (r 4, w 4), mean (r 4), x·rsqrt (r 4, w 4), type_as (r 4, w A),
//   ·weight (r A, w A) → (4A + 28)·d; fused 2A·d. Saves its input and the fp32 statistic.
//   A fused RMSNorm kernel (NormImpl::fused) moves the fused traffic 2A·d eagerly too.
// - LayerNorm of MPT (llm-foundry low_precision_layernorm = one F.layer_norm kernel in the
//   activation dtype) → 2A·d, fused the same.
// - RoPE on q and k (Llama; complex multiply in fp32): float() (r A, w 4), complex mul (r 4,
//   w 4), type_as (r 4, w A) → (2A + 16)·(d + kv); fused 2A·(d + kv).
// - residual adds: read 2, write 1 → 3·A·d each, two per block (fused the same).
// - SwiGLU: silu (r f, w f) + product (r 2f, w f) = 5·A·f, fused 3·A·f; GELU: 2·A·f.
// docs/cost-model.md lists the same terms.
namespace {
// HBM bytes per token of one norm's forward (see above).
// litgpt's eager RMSNorm moves the same bytes at A = 2: x.float() (r A, w 4), x·x (r 4, w 4),
// mean (r 4), x·rsqrt (r 4, w 4), ·weight.float() (r 4, w 4), .to(dtype) (r 4, w A) = 2A + 32.
double norm_bytes_per_token(const ModelSpec& m, int A, NormImpl norm) {
  const double d = m.d_model;
  return m.mlp_type == MlpType::swiglu && norm != NormImpl::fused ? (4.0 * A + 28.0) * d : 2.0 * A * d;
}
}  // namespace

namespace {
constexpr EnumName<NormImpl> kNormImpls[] = {
    {NormImpl::eager, "eager"}, {NormImpl::eager_fp32_weight, "eager_fp32_weight"}, {NormImpl::fused, "fused"}};
constexpr EnumName<CrossEntropyImpl> kCrossEntropyImpls[] = {{CrossEntropyImpl::fp32_upcast, "fp32_upcast"},
                                                             {CrossEntropyImpl::fp32_upcast_shifted, "fp32_upcast_shifted"},
                                                             {CrossEntropyImpl::fp32_upcast_chunked, "fp32_upcast_chunked"},
                                                             {CrossEntropyImpl::native, "native"},
                                                             {CrossEntropyImpl::fused, "fused"},
                                                             {CrossEntropyImpl::chunked_lm_head, "chunked_lm_head"},
                                                             {CrossEntropyImpl::chunked_rows, "chunked_rows"}};
}  // namespace

const char* to_string(NormImpl n) { return enum_name(kNormImpls, n); }

bool parse_norm_impl(const std::string& s, NormImpl& out) {
  const auto v = enum_parse(kNormImpls, s);
  if (v) out = *v;
  return v.has_value();
}

double eager_norm_extra_saved_per_token(const ModelSpec& m, int A, NormImpl norm, bool compile) {
  if (compile || m.mlp_type != MlpType::swiglu) return 0.0;
  const double d = m.d_model;
  switch (norm) {
    case NormImpl::eager: return 4.0 * d;
    case NormImpl::eager_fp32_weight: return 8.0 * d - A * d;
    case NormImpl::fused: return 0.0;
  }
  return 0.0;
}

std::vector<Op> block_forward_ops(const ModelSpec& m, int micro_batch, int seq_len, int A, NormImpl norm,
                                  bool rope_fused, bool swiglu_fused) {
  const double b = micro_batch, s = seq_len, T = b * s;
  const double d = m.d_model, q = double(m.q_dim()), kv = double(m.kv_dim()), f = double(m.ffn_dim);
  const double heads = m.n_heads;
  const bool llama = m.mlp_type == MlpType::swiglu;
  const double norm_bytes = norm_bytes_per_token(m, A, norm);
  std::vector<Op> ops;
  ops.reserve(13);
  ops.push_back(elementwise("attention_norm", T * norm_bytes, T * (A * d + 4.0), T * 2.0 * A * d));
  mark_eager_rmsnorm(ops.back(), llama, norm, T, d);
  {
    Op qkv = gemm("wqkv", T, d, q + 2 * kv, A);
    qkv.saved_bytes = 0;  // its input is the norm output, counted below with q, k, v
    ops.push_back(qkv);
  }
  if (m.qk_norm) {
    // Qwen3's q_norm and k_norm: the block's RMSNorm over the q + kv width per token (rows of
    // head_dim); it keeps its input and a 4-byte statistic per head row.
    const double width = q + kv, rows = heads + m.n_kv_heads;
    ops.push_back(elementwise("qk_norm", T * norm_bytes * width / d, T * (A * width + 4.0 * rows), T * 2.0 * A * width));
    mark_eager_rmsnorm(ops.back(), llama, norm, T * rows, double(m.head_dim()));
  }
  if (llama) {
    const double fused = T * 2.0 * A * (q + kv);
    ops.push_back(elementwise("rope", rope_fused ? fused : T * (2.0 * A + 16.0) * (q + kv), 0, fused));
  }
  {
    Op att;
    att.name = "attention";
    att.kind = OpKind::attention;
    // QKᵀ and PV: 2 GEMMs of 2·s·s·head_dim per head, causal half executed (q = heads·head_dim).
    att.flops = 2.0 * b * s * s * q;
    att.k = s;
    att.bytes = A * T * (2 * q + 2 * kv);
    // norm output (wqkv input), q, k, v, output, and the fp32 log-sum-exp per head.
    att.saved_bytes = T * (A * (d + q + 2 * kv + q) + 4.0 * heads);
    ops.push_back(att);
  }
  ops.push_back(gemm("wo", T, q, d, A));
  ops.back().saved_bytes = 0;  // input = attention output, saved above
  ops.push_back(elementwise("residual_add", T * 3.0 * A * d, 0));
  ops.push_back(elementwise("ffn_norm", T * norm_bytes, T * (A * d + 4.0), T * 2.0 * A * d));
  mark_eager_rmsnorm(ops.back(), llama, norm, T, d);
  if (llama) {
    ops.push_back(gemm("w1_w3", T, d, 2 * f, A));          // gate and up, input saved once
    const double fused = T * 3.0 * A * f;
    ops.push_back(elementwise("silu_mul", swiglu_fused ? fused : T * 5.0 * A * f, T * A * 3 * f, fused));  // w1x, silu, w3x
    if (!swiglu_fused) {  // eager F.silu and the product: a measured kernel table times them by shape
      ops.back().m = T;
      ops.back().n = f;
      ops.back().measured = MeasuredOp::swiglu;
    }
    ops.push_back(gemm("w2", T, f, d, A));                  // input (silu·w3x) saved
  } else {
    ops.push_back(gemm("fc1", T, d, f, A));
    ops.push_back(elementwise("gelu", T * 2.0 * A * f, T * A * f));  // fc1 output
    ops.push_back(gemm("fc2", T, f, d, A));                 // gelu output saved
  }
  ops.push_back(elementwise("residual_add", T * 3.0 * A * d, 0));
  return ops;
}

std::vector<Op> embedding_forward_ops(const ModelSpec& m, int micro_batch, int seq_len, int A) {
  const double T = double(micro_batch) * seq_len, d = m.d_model;
  std::vector<Op> ops;
  // Gather rows: read and write d per token. MPT (GELU family) adds learned positions.
  const double passes = m.mlp_type == MlpType::gelu ? 5.0 : 2.0;
  ops.push_back(elementwise("embedding", T * passes * A * d, 0));
  return ops;
}

const char* to_string(CrossEntropyImpl c) { return enum_name(kCrossEntropyImpls, c); }

bool parse_cross_entropy(const std::string& s, CrossEntropyImpl& out) {
  const auto v = enum_parse(kCrossEntropyImpls, s);
  if (v) out = *v;
  return v.has_value();
}

// Per logit (T·V of them), A = bytes of the logits' dtype:
// - fp32_upcast: forward holds the logits (A), the fp32 copy (4) and the fp32 log-softmax
//   output (4, saved); backward: the dense fp32 gradient of the log-probabilities and of the
//   copy (4 + 4) — torchtitan deletes the logits before backward.
// - fp32_upcast_shifted: the logits (A) are gone once the fp32 copy (4) exists (`logits =
//   logits.float()` rebinds them); the shifted contiguous copy (4) and the log-softmax output
//   (4, saved) come beside the fp32 copy; backward as fp32_upcast (the shift's gradient is the
//   log-softmax's, then slice backward writes the copy's gradient after that one is freed).
// - fp32_upcast_chunked: forward as fp32_upcast (the log-softmax output, 4, saved chunk by
//   chunk); backward frees each chunk's log-probabilities as its gradient (4 in all) lands in
//   split's buffer, then cat writes the copy's gradient (4) beside them: saved + 4, not + 8.
// - native: log-softmax output in A (saved) and the logits (A) held by the training loop's
//   `output` through backward; backward: gradients of the log-probabilities and logits (A + A).
// - fused: the logits (A) and a 4-byte log-sum-exp per token are saved; backward writes the
//   logits' gradient (A).
// - chunked_lm_head: one chunk's logits at a time, forward and backward inside the loss call
//   (chunked_loss.h chunked_loss_chunk_bytes); nothing saved, no backward transient. The
//   wrapper's hidden-state tensors are added by activation_terms (chunked_loss_peak_bytes).
// - chunked_rows (shardcast-train's chunked_lm_loss, trainer/model/chunked_loss.cpp): the logits
//   (A) and two fp32 floats per token are saved; forward, per chunk of c = min(T, 1024) rows, the
//   fp32 rows, z = rows − max and exp(z) at once (3 · 4·c·V; 2 when the logits are fp32 and the
//   cast is the tensor itself); backward writes the logits' gradient (A) and per chunk the fp32
//   rows and the softmax built from them (8·c·V; 4 on fp32 logits). On fp32 logits of one chunk
//   these are fp32_upcast's bytes (tested).
LossMemory loss_memory(CrossEntropyImpl impl, double T, double V, int A) {
  const double n = T * V;
  LossMemory l;
  switch (impl) {
    case CrossEntropyImpl::fp32_upcast:
      l.saved = 4.0 * n;
      l.fwd_transient = (A + 4.0) * n;
      l.bwd_transient = 8.0 * n;
      break;
    case CrossEntropyImpl::fp32_upcast_shifted:
      l.saved = 4.0 * n;
      l.fwd_transient = std::max(A + 4.0, 8.0) * n;
      l.bwd_transient = 8.0 * n;
      break;
    case CrossEntropyImpl::fp32_upcast_chunked:
      l.saved = 4.0 * n;
      l.fwd_transient = (A + 4.0) * n;
      l.bwd_transient = 4.0 * n;
      break;
    case CrossEntropyImpl::native:
      l.saved = 2.0 * A * n;
      l.bwd_transient = 2.0 * A * n;
      break;
    case CrossEntropyImpl::fused:
      l.saved = A * n + 4.0 * T;
      l.bwd_transient = A * n;
      break;
    case CrossEntropyImpl::chunked_lm_head:
      l.fwd_transient = chunked_loss_chunk_bytes(T, V, A);
      break;
    case CrossEntropyImpl::chunked_rows: {
      const double chunk = std::min(T, kChunkedRowsTokens) * V;  // logits of one chunk
      l.saved = A * n + 8.0 * T;
      l.fwd_transient = (A == 4 ? 2.0 : 3.0) * 4.0 * chunk;
      l.bwd_transient = A * n + (A == 4 ? 4.0 : 8.0) * chunk;
      break;
    }
  }
  return l;
}

std::vector<Op> head_forward_ops(const ModelSpec& m, int micro_batch, int seq_len, int A, CrossEntropyImpl ce,
                                 NormImpl norm) {
  const double T = double(micro_batch) * seq_len, d = m.d_model, V = double(m.vocab);
  std::vector<Op> ops;
  const double norm_bytes = norm_bytes_per_token(m, A, norm);
  ops.push_back(elementwise("final_norm", T * norm_bytes, T * (A * d + 4.0), T * 2.0 * A * d));
  mark_eager_rmsnorm(ops.back(), m.mlp_type == MlpType::swiglu, norm, T, d);
  ops.push_back(gemm("output", T, d, V, A));
  ops.back().saved_bytes = 0;  // input = norm output, saved above
  ops.back().fp8 = false;      // the LM head stays in param_dtype under fp8
  // HBM traffic per logit forward (backward is twice it):
  // fp32_upcast (and fp32_upcast_chunked and chunked_lm_head, the same passes by chunks): up-cast (r A, w 4) and
  // log-softmax (r 4, w 4) = A + 12;
  // fp32_upcast_shifted: and the shifted copy (r 4, w 4) = A + 20;
  // native: log-softmax in A (r A twice: max/sum and write pass, w A) = 3A;
  // fused: one read of the logits = A;
  // chunked_rows: the up-cast (r A, w 4; none on fp32 logits), max (r 4), z (r 4, w 4), exp (r 4,
  // w 4) and its sum (r 4) = A + 28 (24 on fp32 logits).
  double bytes = A;
  switch (ce) {
    case CrossEntropyImpl::fp32_upcast:
    case CrossEntropyImpl::fp32_upcast_chunked:
    case CrossEntropyImpl::chunked_lm_head: bytes = A + 12.0; break;
    case CrossEntropyImpl::fp32_upcast_shifted: bytes = A + 20.0; break;
    case CrossEntropyImpl::native: bytes = 3.0 * A; break;
    case CrossEntropyImpl::fused: bytes = A; break;
    case CrossEntropyImpl::chunked_rows: bytes = A == 4 ? 24.0 : A + 28.0; break;
  }
  ops.push_back(elementwise("cross_entropy", T * V * bytes, loss_memory(ce, T, V, A).saved));
  return ops;
}

namespace {
double elementwise_bytes(const Op& op, const ComputeContext& c) {
  // compile: the fused traffic, over the achieved fraction of ideal fusion (fitted).
  // Ops compile cannot shorten (loss, embedding) keep their eager traffic.
  return c.compile ? std::min(op.bytes, op.fused_bytes / c.eff.compile_elementwise_factor) : op.bytes;
}
}  // namespace

// One GEMM (m×k)·(k×n), bounded below by its bytes: a measured kernel table's time where it
// holds the shape; else on the SM grid (GPU presets, kernel_rates.h); else the roofline's shape
// curve (matmul_dim_half). fp8: the fp8 rate, fp8 operands and an output in the compute dtype.
double gemm_time(double m, double n, double k, bool fp8, const ComputeContext& c) {
  const double hbm = c.hbm_bandwidth * c.eff.hbm_eff;
  const double bytes = fp8 ? (m * k + k * n) + c.act_bytes * m * n : c.act_bytes * (m * k + k * n + m * n);
  if (c.kernels)
    if (const double t = c.kernels->gemm_seconds(fp8 ? "fp8" : c.dtype, m, n, k); t > 0)
      return std::max(t / c.kernel_clock_scale, bytes / hbm);
  const double rate = fp8 ? c.fp8_peak_flops * c.eff.fp8_matmul_eff : c.peak_flops * c.eff.matmul_eff;
  double t;
  if (c.grid.sm_count > 0) {
    t = gemm_time_tiled(m, n, k, rate, c.grid);
  } else {
    const double kmin = std::min({m, n, k});
    t = 2.0 * m * n * k / (rate * kmin / (kmin + c.eff.matmul_dim_half));
  }
  return std::max(t, bytes / hbm);
}

namespace {
// A block Linear's mean time over the blocks when only ComputeContext::fp8_block_share of them run
// the recipe (nvfp4's bf16 tail): that share at the recipe's time, the rest at the bf16 time.  // s
double blend_fp8_share(double fp8_s, double bf16_s, const ComputeContext& c) {
  return c.fp8_block_share >= 1 ? fp8_s : c.fp8_block_share * fp8_s + (1.0 - c.fp8_block_share) * bf16_s;
}
// An fp8 Linear: its three GEMMs and the recipe's scaling and cast kernels (fp8_recipe.h).
bool runs_fp8(const Op& op, const ComputeContext& c) {
  return op.kind == OpKind::matmul && op.fp8 && c.fp8 != Fp8Recipe::none && c.fp8_peak_flops > 0;
}
double bf16_linear_s(const Op& op, const ComputeContext& c);  // defined below op_backward_time
Fp8LinearTime fp8_time(const Op& op, const ComputeContext& c) {
  const double hbm = c.hbm_bandwidth * c.eff.hbm_eff;
  const Fp8LinearTime roofline =
      fp8_linear_time(c.fp8, op.m, op.k, op.n, c.act_bytes, c.compile, c.fp8_weights_precast, hbm,
                      [&](double m, double n, double k, bool fp8) { return gemm_time(m, n, k, fp8, c); }, c.mxfp8_casts);
  if (!c.fp8_linear) return roofline;
  if (!c.compile) {
    // Eager torchao: the compiled Linear as measured, plus what its casts move unfused.
    ComputeContext compiled = c;
    compiled.compile = true;
    const Fp8LinearTime t = fp8_time(op, compiled);
    const Fp8LinearTime fused =
        fp8_linear_time(c.fp8, op.m, op.k, op.n, c.act_bytes, true, c.fp8_weights_precast, hbm,
                        [&](double m, double n, double k, bool fp8) { return gemm_time(m, n, k, fp8, c); }, c.mxfp8_casts);
    return Fp8LinearTime{t.fwd_s + std::max(0.0, roofline.fwd_s - fused.fwd_s),
                         t.bwd_s + std::max(0.0, roofline.bwd_s - fused.bwd_s)};
  }
  // The measured speed-up of the recipe at this shape (fp8_linear_table.h), over this GPU's own
  // bf16 Linear and the benchmark graph's LayerNorm and Sigmoid; split into forward and
  // backward as the roofline splits it.
  const double s = fp8_linear_speedup(*c.fp8_linear, op.m, op.k, op.n);
  assert(s > 0);
  const double floor_s = roofline.fwd_s + roofline.bwd_s;
  // The benchmark casts the weight in every step; a weight that arrives in fp8 from the
  // all-gather (tensorwise with fp8 all-gather) skips those kernels: their roofline time off.
  double weight_cast_s = 0;
  if (c.fp8_weights_precast) {
    const Fp8CastKernels here = fp8_cast_kernels(c.fp8, op.m, op.k, op.n, c.act_bytes, c.compile, false, c.mxfp8_casts);
    const Fp8CastKernels precast = fp8_cast_kernels(c.fp8, op.m, op.k, op.n, c.act_bytes, c.compile, true, c.mxfp8_casts);
    weight_cast_s = fp8_cast_kernels_s(here.fwd, hbm) + fp8_cast_kernels_s(here.bwd, hbm) -
                    fp8_cast_kernels_s(precast.fwd, hbm) - fp8_cast_kernels_s(precast.bwd, hbm);
  }
  const double t = measured_fp8_linear_s(s, bf16_linear_s(op, c),
                                         fp8_benchmark_other_bytes(op.m, op.k, op.n, c.act_bytes) / hbm,
                                         floor_s + weight_cast_s) -
                   weight_cast_s;
  return Fp8LinearTime{t * roofline.fwd_s / floor_s, t * roofline.bwd_s / floor_s};
}
}  // namespace

namespace {
// An eager element-wise op a kernel table times (Op::measured: an RMSNorm marked by
// mark_eager_rmsnorm, an eager SwiGLU) not fused by compile, on a GPU whose measured kernel
// table has its rows: their time at its shape; 0 otherwise.  // s
double measured_eager_elementwise(const Op& op, const ComputeContext& c, bool backward) {
  if (op.kind != OpKind::elementwise || c.compile || c.kernels == nullptr) return 0;
  switch (op.measured) {
    case MeasuredOp::none: return 0;
    case MeasuredOp::rmsnorm: return c.kernels->rmsnorm_seconds(op.m, op.n, backward);
    case MeasuredOp::swiglu: return c.kernels->swiglu_seconds(op.m, op.n, backward);
  }
  return 0;
}
}  // namespace

double op_forward_time(const Op& op, const ComputeContext& c) {
  const double hbm = c.hbm_bandwidth * c.eff.hbm_eff;
  switch (op.kind) {
    case OpKind::matmul: {
      const double bf16_s = std::max(gemm_time(op.m, op.n, op.k, /*fp8=*/false, c), op.bytes / hbm);
      if (runs_fp8(op, c)) return blend_fp8_share(fp8_time(op, c).fwd_s, bf16_s, c);
      return bf16_s;
    }
    case OpKind::attention: {
      // Executed FLOPs: the dense causal count, or the share a document mask leaves.
      const double flops = op.flops * c.attention_work;
      if (c.attention_flops > 0) {
        // Published forward + backward rate R on executed FLOPs F (fwd + bwd = 3.5·F): forward
        // F/R, backward 2.5·F/R (op_backward_time).
        return std::max(flops / c.attention_flops, op.bytes / hbm);
      }
      // Diagonal tiles of the causal mask are computed whole: +tile/s of the executed FLOPs
      // (op.k holds the sequence length).
      const double tiles = 1.0 + c.eff.attention_tile / op.k;
      return std::max(flops * tiles / (c.peak_flops * c.eff.attention_eff), op.bytes / hbm);
    }
    case OpKind::elementwise:
      if (const double t = measured_eager_elementwise(op, c, /*backward=*/false); t > 0) return t;
      return elementwise_bytes(op, c) / hbm;
  }
  return 0;
}

double op_backward_time(const Op& op, const ComputeContext& c) {
  switch (op.kind) {
    case OpKind::matmul: {
      if (runs_fp8(op, c)) {
        Op bf16 = op;
        bf16.fp8 = false;
        return blend_fp8_share(fp8_time(op, c).bwd_s,
                               c.fp8_block_share < 1 ? op_backward_time(bf16, c) : 0.0, c);
      }
      if (c.grid.sm_count > 0) {
        // grad-input dY(m×n)·Wᵀ(n×k) and grad-weight Xᵀ(k×m)·dY(m×n), each bounded by its bytes.
        const double hbm = c.hbm_bandwidth * c.eff.hbm_eff;
        return std::max(gemm_time(op.m, op.k, op.n, false, c), op.bytes / hbm) +
               std::max(gemm_time(op.k, op.n, op.m, false, c), op.bytes / hbm);
      }
      return 2.0 * op_forward_time(op, c);  // grad-input and grad-weight GEMMs
    }
    case OpKind::attention:
      return 2.5 * op_forward_time(op, c);  // flash backward: 5 GEMMs vs 2 (recomputes QKᵀ)
    case OpKind::elementwise:
      if (const double t = measured_eager_elementwise(op, c, /*backward=*/true); t > 0) return t;
      return 2.0 * op_forward_time(op, c);
  }
  return 0;
}

namespace {
// The same Linear in the compute dtype (fp8 off): forward + backward as op_*_time time it.
double bf16_linear_s(const Op& op, const ComputeContext& c) {
  Op bf16 = op;
  bf16.fp8 = false;
  return op_forward_time(bf16, c) + op_backward_time(bf16, c);
}
}  // namespace

UnitCost unit_cost(const std::vector<Op>& ops, double input_bytes, double transient_bytes,
                   const ComputeContext& c) {
  UnitCost u;
  for (const Op& op : ops) {
    u.fwd_s += op_forward_time(op, c);
    u.bwd_s += op_backward_time(op, c);
    u.fwd_flops += op.kind == OpKind::attention ? op.flops * c.attention_work : op.flops;
    u.saved_bytes += op.saved_bytes;
  }
  u.input_bytes = input_bytes;
  u.transient_bytes = transient_bytes;
  return u;
}

}  // namespace shardcast::planner
