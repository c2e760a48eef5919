// Cases and counts of the GPU kernel-ceiling table. See kernel_table.h.
#include "trainer/microbench/kernel_table.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace shardcast::trainer {

namespace {

constexpr double kBf16 = 2;  // bytes per element
constexpr double kFp32 = 4;
constexpr double kInt64 = 8;
// Cross-entropy rows stop at 2^31 logits (16384 tokens × a 128256 vocab): the fp32 upcast,
// its log-softmax and their gradients hold ~16 bytes per logit at once (34 GiB there).
constexpr double kMaxLossElements = double(int64_t(1) << 31);
// Optimizer rows stop at 2^30 elements: four tensors of them (parameters, gradients, two
// moments) are 8.6 GB in bf16, 17 GB in fp32.
constexpr int64_t kMaxOptimizerElements = int64_t(1) << 30;

// The forward and backward rows of an op over m rows of width n, with the bytes each moves.
void add_fwd_bwd(std::vector<KernelRow>& rows, const char* fwd_op, const char* bwd_op, int64_t m, int64_t n,
                 double fwd_bytes, double bwd_bytes) {
  KernelRow f;
  f.op = fwd_op, f.m = m, f.n = n;
  f.bytes = fwd_bytes;
  rows.push_back(f);
  KernelRow b = f;
  b.op = bwd_op;
  b.bytes = bwd_bytes;
  rows.push_back(b);
}

KernelRow gemm(int64_t m, int64_t n, int64_t k, const char* dtype) {
  KernelRow r;
  r.op = "gemm";
  r.dtype = dtype;
  r.m = m, r.n = n, r.k = k;
  r.flop = 2.0 * double(m) * double(n) * double(k);
  return r;
}

}  // namespace

double sdpa_causal_fwd_flop(int64_t b, int64_t h, int64_t s, int64_t d) {
  return 4.0 * double(b) * double(h) * double(s) * double(s) * double(d) / 2.0;
}

double sdpa_causal_bwd_flop(int64_t b, int64_t h, int64_t s, int64_t d) {
  return 2.5 * sdpa_causal_fwd_flop(b, h, s, d);
}

namespace {

// GEMMs: each weight W (out × in) of a block and the head, for T tokens: forward X(T×in)·Wᵀ,
// input gradient dY(T×out)·W, weight gradient dYᵀ(out×T)·X; in bf16, then the same shapes in
// fp8 (torchao's tensor-wise float8 GEMM: e4m3 operands, one fp32 scale each, bf16 out), which
// run_gpu_kernel_bench leaves out where the GPU or LibTorch has none.
void add_gemm_rows(const KernelCaseOptions& o, std::vector<KernelRow>& rows) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> gemms;
  for (const ModelSpec& m : o.models) {
    const int64_t d = m.d_model, hd = m.head_dim();
    const std::vector<std::pair<int64_t, int64_t>> weights = {
        {int64_t(m.n_heads) * hd, d},  // q_proj
        {m.kv_dim(), d},               // k_proj, v_proj
        {d, int64_t(m.n_heads) * hd},  // o_proj
        {m.ffn_dim, d},                // gate_proj, up_proj (or the GELU up)
        {d, m.ffn_dim},                // down_proj
        {m.vocab, d}};                 // lm_head (or the tied embedding as head)
    for (int64_t T : o.tokens)
      for (const auto& [out, in] : weights) {
        gemms.insert({T, out, in});   // forward
        gemms.insert({T, in, out});   // dX
        gemms.insert({out, in, T});   // dW
      }
  }
  for (const auto& [m, n, k] : gemms) rows.push_back(gemm(m, n, k, "bf16"));
  for (const auto& [m, n, k] : gemms) rows.push_back(gemm(m, n, k, "fp8"));
}

// SDPA: every distinct (heads, kv_heads, head_dim) of the presets at each sequence length,
// batch = sdpa_tokens / s, forward and backward.
void add_sdpa_rows(const KernelCaseOptions& o, std::vector<KernelRow>& rows) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> layouts;
  for (const ModelSpec& m : o.models) layouts.insert({m.n_heads, m.n_kv_heads, m.head_dim()});
  for (const auto& [h, kv, hd] : layouts)
    for (int64_t s : o.seq_lens) {
      const int64_t b = std::max<int64_t>(1, o.sdpa_tokens / s);
      for (const bool bwd : {false, true}) {
        KernelRow r;
        r.op = bwd ? "sdpa_bwd" : "sdpa_fwd";
        r.batch = b, r.seq_len = s, r.heads = h, r.kv_heads = kv, r.head_dim = hd;
        r.flop = bwd ? sdpa_causal_bwd_flop(b, h, s, hd) : sdpa_causal_fwd_flop(b, h, s, hd);
        rows.push_back(r);
      }
    }
}

// RMSNorm (m rows of width n = d_model), SwiGLU's element-wise part (m rows of the FFN width,
// Llama presets) and cross-entropy (m rows of width n = vocab): fewest bytes = each input read
// once, each output written once (bf16 activations; the loss reads bf16 logits and int64
// targets).
void add_elementwise_rows(const KernelCaseOptions& o, std::vector<KernelRow>& rows) {
  std::set<std::pair<int64_t, int64_t>> norms, losses, swiglus;
  for (const ModelSpec& m : o.models)
    for (int64_t T : o.tokens) {
      norms.insert({T, m.d_model});
      losses.insert({T, m.vocab});
      if (m.mlp_type == MlpType::swiglu) swiglus.insert({T, m.ffn_dim});
    }
  for (const auto& [m, n] : norms) {
    const double mn = double(m) * double(n);
    // forward: x read, y written, weight read; backward: x and dy read, dx written, weight read,
    // dweight written.
    add_fwd_bwd(rows, "rmsnorm_fwd", "rmsnorm_bwd", m, n, kBf16 * (2 * mn + n), kBf16 * (3 * mn + 2 * n));
  }
  for (const auto& [m, n] : swiglus) {
    const double mn = double(m) * double(n);
    // forward reads gate and up and writes the product; backward reads the product's gradient,
    // gate and up and writes both gradients.
    add_fwd_bwd(rows, "swiglu_fwd", "swiglu_bwd", m, n, kBf16 * 3 * mn, kBf16 * 5 * mn);
  }
  for (const auto& [m, n] : losses) {
    const double mn = double(m) * double(n);
    if (mn > kMaxLossElements) continue;
    // forward: logits and targets read, the scalar written; backward: logits and targets read,
    // dlogits written.
    add_fwd_bwd(rows, "cross_entropy_fwd", "cross_entropy_bwd", m, n, kBf16 * mn + kInt64 * m + kFp32,
                2 * kBf16 * mn + kInt64 * m);
  }
}

// One optimizer step over k tensors of the preset's mean parameter-tensor size
// (ModelSpec::parameter_tensors: the embedding, 9 per Llama block — q, k, v, o, three MLP
// weights, two norms —, the final norm, an untied head): clip_grad_norm_ reads every gradient
// for the norm and reads and writes it to scale it (torch.nn.utils.clip_grad: _foreach_norm,
// then _foreach_mul_ unconditionally), and the fused AdamW reads parameter, gradient and both
// moments and writes parameter and both moments: 10 accesses an element, in the row's dtype
// (bf16: pure bf16 training; fp32: fp32 master).
void add_optimizer_rows(const KernelCaseOptions& o, std::vector<KernelRow>& rows) {
  std::set<std::pair<int64_t, int64_t>> steps;  // (elements, tensors)
  for (const ModelSpec& m : o.models) {
    const int64_t tensors = m.parameter_tensors();
    const int64_t mean = std::max<int64_t>(1, m.total_params() / tensors);
    const int64_t k = std::clamp<int64_t>(kMaxOptimizerElements / mean, 1, tensors);
    steps.insert({k * mean, k});
  }
  for (const auto& [elements, tensors] : steps)
    for (const auto& [dtype, bytes] : {std::pair<const char*, double>{"bf16", kBf16}, {"fp32", kFp32}}) {
      KernelRow a;
      a.op = "adamw_fused_clip", a.dtype = dtype, a.m = elements, a.k = tensors;
      a.bytes = 10.0 * bytes * double(elements);
      rows.push_back(a);
    }
}

}  // namespace

std::vector<KernelRow> kernel_cases(const KernelCaseOptions& o) {
  std::vector<KernelRow> rows;
  add_gemm_rows(o, rows);
  add_sdpa_rows(o, rows);
  add_elementwise_rows(o, rows);
  KernelRow copy;  // one copy of copy_bytes: read and written
  copy.op = "copy";
  copy.bytes = 2.0 * double(o.copy_bytes);
  rows.push_back(copy);
  add_optimizer_rows(o, rows);
  return rows;
}

}  // namespace shardcast::trainer
