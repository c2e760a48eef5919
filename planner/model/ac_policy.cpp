#include "planner/model/ac_policy.h"

#include <cstring>

namespace shardcast::planner {

// Per token, d = d_model, q = query width (n_heads · head_dim), kv = K/V width, f = FFN width,
// h = heads, A = activation bytes.
// Eager, Llama (formulas.md §2.4, native GQA): norm inputs 2·(A·d + 4 B rstd), norm outputs
// 2·A·d, q, k, v after RoPE A·(q + 2kv), attention output A·q + 4h B log-sum-exp, w1x, silu,
// w3x and their product 4·A·f  →  A·(4d + 2q + 2kv + 4f) + 4h + 8 (q = d in a Llama).
// Qwen3's q_norm and k_norm (model.qk_norm) keep their inputs and a statistic per head row:
// + A·(q + kv) + 4·(h + kv heads), where the block is not checkpointed or op-SAC (their
// recompute makes them again).
// Eager, MPT/GELU: the same attention half, fc1 output and gelu output 2·A·f.
// Compile (AOTAutograd's min_cut_rematerialization_partition with torch/_functorch/config.py's
// defaults): a node a non-fusible backward op reads is banned from recompute
// (ban_recompute_materialized_backward = True: "Bans recomputation of nodes that must be
// materialized in the backwards pass (used by a non-fusible node)"), so the matmul inputs —
// both norm outputs and the SwiGLU product, read by the weight-gradient GEMMs — are kept as in
// eager, and the norm statistics (reductions: ban_recompute_reductions) too. Only silu(w1·x),
// a pointwise node whose users in backward are pointwise, is recomputed: −A·f (SwiGLU);
// MPT's gelu output feeds fc2's weight gradient and is kept.
// selective_op (torchtitan _save_list = {mm, SDPA}, every second mm recomputed): the block
// input A·d (checkpoint's input), wq → A·q, wv → A·kv, SDPA → A·q + 4h, w1 → A·f, w2 → A·d;
// MPT: input, Wqkv A·(d + 2kv), SDPA, fc1 A·f.
double block_kept_bytes(const ModelSpec& m, double T, int A, BlockAc ac, bool compile, bool gqa_repeated,
                        bool sac_attention_saved) {
  const double d = m.d_model, q = double(m.q_dim()), kv = double(m.kv_dim()), f = double(m.ffn_dim), h = m.n_heads;
  // K and V as attention keeps them (op-SAC keeps wv's output, before any copy).
  const double kv_kept = gqa_repeated ? q : kv;
  const bool swiglu = m.mlp_type == MlpType::swiglu;
  switch (ac) {
    case BlockAc::checkpointed:
      return T * A * d;
    case BlockAc::selective_op: {
      const double kept = swiglu ? T * (A * (2 * d + 2 * q + kv + f) + 4 * h) : T * (A * (d + 2 * q + 2 * kv + f) + 4 * h);
      return sac_attention_saved ? kept : kept - T * (A * q + 4 * h);  // SDPA's output and log-sum-exp
    }
    case BlockAc::none:
      break;
  }
  const double ffn = swiglu ? 4 * f : 2 * f;
  double per_token = A * (4 * d + 2 * q + 2 * kv_kept + ffn) + 4 * h + 8;
  if (m.qk_norm) per_token += A * (q + kv) + 4.0 * (h + m.n_kv_heads);
  if (compile && swiglu) per_token -= A * f;
  return T * per_token;
}

double qkv_output_extra_saved_per_token(const ModelSpec& m, int A, bool qkv_output_kept) {
  const bool rope = m.mlp_type == MlpType::swiglu;  // Llama family (ops.cpp: the rope op)
  if (!qkv_output_kept || !rope || m.n_kv_heads != m.n_heads) return 0.0;
  return double(A) * double(m.q_dim() + m.kv_dim());
}

double fp8_input_saving_per_token(const ModelSpec& m, int A, bool fp8_input_saved) {
  if (!fp8_input_saved || A <= 1) return 0.0;
  const double d = m.d_model, f = double(m.ffn_dim);
  return double(A - 1) * (2.0 * d + f) - d;
}

std::vector<double> selective_op_recompute_shares(const ModelSpec& m, const std::vector<Op>& ops, bool attention_saved) {
  const double q = double(m.q_dim()), kv = double(m.kv_dim());
  const bool swiglu = m.mlp_type == MlpType::swiglu;
  // Index of the last elementwise op (the second residual add): not recomputed.
  int last_elementwise = -1;
  for (int i = 0; i < int(ops.size()); ++i)
    if (ops[i].kind == OpKind::elementwise) last_elementwise = i;
  std::vector<double> shares(ops.size(), 0.0);
  for (int i = 0; i < int(ops.size()); ++i) {
    const Op& op = ops[i];
    double share = 0;  // fraction of the op recomputed
    if (op.kind == OpKind::elementwise) {
      share = i == last_elementwise ? 0.0 : 1.0;
    } else if (op.kind == OpKind::matmul) {
      if (std::strcmp(op.name, "wqkv") == 0) share = swiglu ? kv / (q + 2 * kv) : 0.0;  // wk / Wqkv saved
      else if (std::strcmp(op.name, "wo") == 0) share = 1.0;                           // wo / out_proj
      else if (std::strcmp(op.name, "w1_w3") == 0) share = 0.5;                        // w3
      // fc1, w2, fc2: saved or not needed
    } else if (op.kind == OpKind::attention) {
      share = attention_saved ? 0.0 : 1.0;
    }
    shares[size_t(i)] = share;
  }
  return shares;
}

SacRecompute selective_op_recompute(const ModelSpec& m, const std::vector<Op>& ops, const ComputeContext& c,
                                    bool attention_saved) {
  const std::vector<double> shares = selective_op_recompute_shares(m, ops, attention_saved);
  SacRecompute r;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (shares[i] <= 0) continue;
    r.time_s += shares[i] * op_forward_time(ops[i], c);
    r.flops += shares[i] * ops[i].flops * (ops[i].kind == OpKind::attention ? c.attention_work : 1.0);
  }
  return r;
}

int checkpointed_recompute_end(const std::vector<Op>& ops, bool early_stop) {
  int last_gemm = -1;
  for (int i = 0; i < int(ops.size()); ++i)
    if (ops[i].kind == OpKind::matmul) last_gemm = i;
  return early_stop && last_gemm >= 0 ? last_gemm : int(ops.size());
}

double checkpointed_recompute_time(const std::vector<Op>& ops, const ComputeContext& c, bool early_stop) {
  const int end = checkpointed_recompute_end(ops, early_stop);
  double t = 0;
  for (int i = 0; i < end; ++i) t += op_forward_time(ops[i], c);
  return t;
}

}  // namespace shardcast::planner
