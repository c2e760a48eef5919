// Llama math and parameter layout. See llama.h.
#include "trainer/model/llama.h"

#include <cmath>

#include <limits>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <torch/version.h>

#include "shared/causal_blocks.h"
#include "trainer/model/fused_ops.h"
#include "trainer/profile/op_classify.h"

namespace shardcast::trainer {

namespace {

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

ParamInfo make(std::string name, std::vector<int64_t> shape, double std) {
  ParamInfo p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  p.numel = 1;
  for (auto s : p.shape) p.numel *= s;
  p.init_std = std;
  return p;
}

}  // namespace

// Causal softmax(q·kᵀ/√hd)·v over (B,H,T,hd) inputs -> (B,H,T,hd).
// Eager (CPU, and CUDA on LibTorch 1.13), in query blocks (shared/causal_blocks.h): block
// [r0, r0+c) scores only keys [0, r0+c), so the B·H·T·T scores shrink to the causal half plus
// the diagonal blocks (5/8 at T = 256). Per block one baddbmm writes the masked, scaled
// scores bias + (1/√hd)·q·kᵀ, bias 0 where key ≤ query and −inf above: the scale and the mask
// cost no pass of their own over the scores, forward or backward. Softmax rows are the
// reference's rows without its −inf tail (exp(−inf) = 0 adds nothing); the scale is one
// rounding apart from the reference's /√hd.
// Autograd keeps q, kᵀ, v (one copy each, the blocks keep views) and every block's fp32
// softmax output (B·H·causal_block_score_elements(T)·4 bytes) and, when the compute dtype is
// not fp32, its cast copy (·2 bytes for bf16) that the second bmm saves; not the bias.
// CUDA on LibTorch >= 2.0: at::scaled_dot_product_attention with is_causal picks flash (bf16/
// fp16) or memory-efficient attention, which keep q, k, v, the output and a (B,H,T) fp32
// logsumexp (no T·T term). NEVER COMPILED OR RUN in this project's CI (LibTorch 1.13 here).
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  RECORD_USER_SCOPE(op_scope::attention);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), hd = q.size(3);
#if TORCH_VERSION_MAJOR >= 2
  if (q.is_cuda()) return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                           /*is_causal=*/true);
#endif
  const at::Tensor q3 = q.reshape({B * H, T, hd}), k3 = k.reshape({B * H, T, hd}), v3 = v.reshape({B * H, T, hd});
  const double scale = 1.0 / std::sqrt(double(hd));
  const int64_t c = causal_query_block_rows(T);
  std::vector<at::Tensor> out;
  for (int64_t r0 = 0; r0 < T; r0 += c) {
    const int64_t rows = std::min(c, T - r0), keys = r0 + rows;
    // (rows, keys): −inf where key j > query r0 + i.
    const at::Tensor bias = at::full({rows, keys}, -std::numeric_limits<double>::infinity(), q.options()).triu_(r0 + 1);
    const auto scores = at::baddbmm(bias, q3.narrow(1, r0, rows), k3.narrow(1, 0, keys).transpose(1, 2),
                                    /*beta=*/1.0, /*alpha=*/scale);                   // (B·H,rows,keys)
    const auto probs = at::softmax(scores.to(at::kFloat), -1).to(q.scalar_type());
    out.push_back(at::bmm(probs, v3.narrow(1, 0, keys)));                              // (B·H,rows,hd)
  }
  return (out.size() == 1 ? out[0] : at::cat(out, 1)).view({B, H, T, hd});
}

at::Tensor causal_attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t T = q.size(2), hd = q.size(3);
  auto scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(hd));  // (B,H,T,T)
  auto mask = at::ones({T, T}, q.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  auto probs = at::softmax(scores.to(at::kFloat), -1).to(q.scalar_type());
  return at::matmul(probs, v);
}

namespace {

std::vector<std::vector<ParamInfo>> unit_param_infos_full(const ModelSpec& m);

// This tp rank's piece of p along dim (−1: replicated, the whole tensor).
ParamInfo split(ParamInfo p, int dim, int tp, int tp_rank) {
  p.full_shape = p.shape;
  if (dim < 0 || tp == 1) return p;
  p.tp_dim = dim;
  p.shape[size_t(dim)] /= tp;
  p.tp_offset = p.shape[size_t(dim)] * tp_rank;
  p.numel /= tp;
  return p;
}

}  // namespace

std::vector<std::vector<ParamInfo>> unit_param_infos(const ModelSpec& m, int tp, int tp_rank) {
  auto units = unit_param_infos_full(m);
  for (auto& unit : units)
    for (auto& p : unit) {
      // Row-parallel: the attention output and the MLP's down projection (SwiGLU and GELU).
      const bool row = p.name.find("o_proj") != std::string::npos || p.name.find("down_proj") != std::string::npos;
      const bool norm = p.init_std == 0;  // the RMSNorm weights (ones)
      p = split(p, norm ? -1 : row ? 1 : 0, tp, tp_rank);
    }
  return units;
}

namespace {

// The full (unsplit) layout.
std::vector<std::vector<ParamInfo>> unit_param_infos_full(const ModelSpec& m) {
  const int64_t d = m.d_model, hd = m.head_dim(), q = int64_t(m.n_heads) * hd, kv = m.kv_dim();
  const double std = 0.02;
  const double out_std = 0.02 / std::sqrt(2.0 * m.n_layers);  // depth-scaled residual outputs
  std::vector<std::vector<ParamInfo>> units;
  units.push_back({make("model.embed_tokens.weight", {m.vocab, d}, std)});
  for (int i = 0; i < m.n_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    std::vector<ParamInfo> u;
    u.push_back(make(p + "input_layernorm.weight", {d}, 0));
    u.push_back(make(p + "self_attn.q_proj.weight", {q, d}, std));
    u.push_back(make(p + "self_attn.k_proj.weight", {kv, d}, std));
    u.push_back(make(p + "self_attn.v_proj.weight", {kv, d}, std));
    u.push_back(make(p + "self_attn.o_proj.weight", {d, q}, out_std));
    u.push_back(make(p + "post_attention_layernorm.weight", {d}, 0));
    if (m.mlp_type == MlpType::swiglu) u.push_back(make(p + "mlp.gate_proj.weight", {m.ffn_dim, d}, std));
    u.push_back(make(p + "mlp.up_proj.weight", {m.ffn_dim, d}, std));
    u.push_back(make(p + "mlp.down_proj.weight", {d, m.ffn_dim}, out_std));
    units.push_back(std::move(u));
  }
  std::vector<ParamInfo> last{make("model.norm.weight", {d}, 0)};
  if (!m.tied_embeddings) last.push_back(make("lm_head.weight", {m.vocab, d}, std));
  units.push_back(std::move(last));
  return units;
}

}  // namespace

at::Tensor init_param(const ParamInfo& p, uint64_t seed) {
  if (p.init_std == 0) return at::ones(p.shape, at::kFloat);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(fnv1a(p.name, seed * 0x9E3779B97F4A7C15ull + 1));
  const auto& full = p.full_shape.empty() ? p.shape : p.full_shape;
  at::Tensor t = at::normal(0.0, p.init_std, full, gen, at::TensorOptions().dtype(at::kFloat));
  if (p.tp_dim < 0) return t;
  return t.narrow(p.tp_dim, p.tp_offset, p.shape[size_t(p.tp_dim)]).contiguous();
}

Rope make_rope(const ModelSpec& m, int seq_len) {
  const int64_t hd = m.head_dim();
  auto inv_freq = 1.0 / at::pow(m.rope_theta, at::arange(0, hd, 2, at::kDouble) / double(hd));
  auto t = at::arange(seq_len, at::kDouble);
  auto freqs = at::outer(t, inv_freq);                 // (T, hd/2)
  auto emb = at::cat({freqs, freqs}, -1);              // (T, hd)
  return Rope{emb.cos().to(at::kFloat), emb.sin().to(at::kFloat)};
}

at::Tensor embedding_forward(const at::Tensor& tokens, const at::Tensor& embed) {
  return at::embedding(embed, tokens);
}

at::Tensor block_forward(const ModelSpec& m, const Rope& rope, const at::Tensor& x,
                         const std::vector<at::Tensor>& w, const SeqParallel* sp, BlockOps ops) {
  const bool swiglu = m.mlp_type == MlpType::swiglu;
  TORCH_CHECK(w.size() == (swiglu ? 9u : 8u), "block_forward: got ", w.size(), " weights");
  const int64_t tp = sp ? sp->tp : 1;
  // Sequence parallel: the norm on this rank's shard, then the whole sequence for the
  // column-parallel q/k/v of this rank's heads.
  auto gather = [&](const at::Tensor& t) { return sp ? sp->gather(t) : t; };
  auto scatter = [&](const at::Tensor& t) { return sp ? sp->scatter(t) : t; };
  const bool fused = ops == BlockOps::fused;
  auto norm = [&](const at::Tensor& t, const at::Tensor& nw) {
    return fused ? fused_rms_norm(t, nw, m.norm_eps) : rms_norm(t, nw, m.norm_eps);
  };
  auto rotary = [&](const at::Tensor& t, const at::Tensor& c, const at::Tensor& s) {
    return fused ? fused_rotary(t, c, s) : rotary_reference(t, c, s);
  };
  const int64_t H = m.n_heads / tp, KV = m.n_kv_heads / tp, hd = m.head_dim();
  // Attention.
  auto n = gather(norm(x, w[0]));                                      // (B,T,D)
  const int64_t B = n.size(0), T = n.size(1);
  auto q = at::linear(n, w[1]).view({B, T, H, hd}).transpose(1, 2);  // (B,H,T,hd)
  auto k = at::linear(n, w[2]).view({B, T, KV, hd}).transpose(1, 2); // (B,KV,T,hd)
  auto v = at::linear(n, w[3]).view({B, T, KV, hd}).transpose(1, 2); // (B,KV,T,hd)
  {
    RECORD_USER_SCOPE(op_scope::rope);
    auto cos = rope.cos.narrow(0, 0, T).to(x.scalar_type());         // (T,hd)
    auto sin = rope.sin.narrow(0, 0, T).to(x.scalar_type());
    q = rotary(q, cos, sin);                                          // (B,H,T,hd)
    k = rotary(k, cos, sin);
  }
  at::Tensor attn;
  {
    // Grouped-query heads are widened inside the attention scope (HF repeat_kv belongs to
    // the attention; SDPA kernels that take GQA natively skip it).
    RECORD_USER_SCOPE(op_scope::attention);
    if (KV != H) {  // grouped-query: kv head j serves query heads [j·r, (j+1)·r) (HF repeat_kv)
      k = k.repeat_interleave(H / KV, 1);
      v = v.repeat_interleave(H / KV, 1);
    }
    attn = causal_attention(q, k, v);
  }
  attn = attn.transpose(1, 2).reshape({B, T, H * hd});  // (B,T,H·hd)
  // Row-parallel o_proj: partial sums over this rank's heads, summed (and sequence-sharded) by
  // the scatter.
  auto h = x + scatter(at::linear(attn, w[4]));
  // MLP: SwiGLU (gate, up, down), or GELU (up, down) for mlp_type = "gelu".
  auto n2 = gather(norm(h, w[5]));
  // (The fused SwiGLU is the op profile's shardcast::swiglu scope; aten::silu, aten::mul,
  // aten::gelu and the residual adds are `elementwise` by name; no scope, so the temporaries
  // live as long as this one expression. The reference path writes swiglu_reference's ops
  // inline so that, as in the eager block of shardcast-train-2026-11, silu(gate) lives through
  // the down projection: bench_block_memory's reference no-grad peak is that block's 7d + 4f.)
  auto mlp = swiglu ? at::linear(fused ? fused_swiglu(at::linear(n2, w[6]), at::linear(n2, w[7]))
                                       : at::silu(at::linear(n2, w[6])) * at::linear(n2, w[7]),
                                 w[8])
                    : at::linear(at::gelu(at::linear(n2, w[6])), w[7]);
  return h + scatter(mlp);
}

at::Tensor head_forward(const ModelSpec& m, const at::Tensor& x, const at::Tensor& norm_w,
                        const at::Tensor& head_w) {
  return at::linear(fused_rms_norm(x, norm_w, m.norm_eps), head_w);
}

at::Tensor lm_loss(const at::Tensor& logits, const at::Tensor& targets) {
  RECORD_USER_SCOPE(op_scope::lm_loss);
  auto l = logits.to(at::kFloat);
  return at::cross_entropy_loss(l.view({-1, l.size(-1)}), targets.reshape({-1}));
}

ReferenceModel::ReferenceModel(const ModelSpec& m, uint64_t seed)
    : spec_(m), infos_(unit_param_infos(m)) {
  for (const auto& unit : infos_) {
    std::vector<at::Tensor> ts;
    for (const auto& p : unit) ts.push_back(init_param(p, seed).requires_grad_(true));
    units_.push_back(std::move(ts));
  }
}

at::Tensor ReferenceModel::forward(const at::Tensor& tokens) {
  const int T = static_cast<int>(tokens.size(1));
  if (T > rope_len_) {
    rope_ = make_rope(spec_, T);
    rope_len_ = T;
  }
  auto x = embedding_forward(tokens, units_[0][0]);
  for (int i = 0; i < spec_.n_layers; ++i) x = block_forward(spec_, rope_, x, units_[1 + i]);
  const auto& last = units_.back();
  const at::Tensor& head = spec_.tied_embeddings ? units_[0][0] : last[1];
  return head_forward(spec_, x, last[0], head);
}

std::vector<std::pair<std::string, at::Tensor>> ReferenceModel::named_parameters() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (size_t u = 0; u < units_.size(); ++u)
    for (size_t i = 0; i < units_[u].size(); ++i) out.emplace_back(infos_[u][i].name, units_[u][i]);
  return out;
}

}  // namespace shardcast::trainer
