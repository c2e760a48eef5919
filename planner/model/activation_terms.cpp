// Activation and transient bytes of one micro-step: every formula of what a block keeps from
// forward to backward, what its forward and backward hold besides, the loss and the model's
// output the loop keeps, each with its source. Stages of plan() (plan_stages.h).
#include <algorithm>
#include <array>
#include <cmath>

#include "planner/model/ac_policy.h"
#include "planner/model/allocator/block_tensor_sequence.h"
#include "planner/model/chunked_loss.h"
#include "planner/model/memory_model.h"
#include "planner/model/ops.h"
#include "planner/model/plan_stages.h"
#include "shared/causal_blocks.h"

namespace shardcast::planner {

// The d_model-wide fp32 tensors a token keeps in shardcast-train's block (activation_terms below):
// two RMSNorms of 3d (eager) or d (fused), q, k, v and the attention output (4d), the mid
// residual (d), the block's input (d).
double trainer_block_kept_d(NormImpl norm) { return (norm == NormImpl::fused ? 2.0 : 6.0) + 4.0 + 1.0 + 1.0; }
double trainer_block_kept_f(bool swiglu_fused) { return swiglu_fused ? 3.0 : 4.0; }

// What the trainer's final RMSNorm keeps besides its output, per token (fsdp_units.cpp).
double trainer_final_norm_extra_d(NormImpl norm) { return norm == NormImpl::fused ? 0.0 : 2.0; }

namespace {

// The head's terms: the loss's transients (chunked or up-cast), the fp32 logits and the KV cache
// the loop keeps (runtime terms fp32_logits_held, use_cache), into a.
void head_terms(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape, ActivationTerms* out) {
  const ModelSpec& m = cfg.model;
  const int param_bytes = shape.param_bytes;
  const double T = shape.tokens;
  LossMemory loss = loss_memory(opt.cross_entropy, T, double(m.vocab), param_bytes);
  // torchtitan's ChunkedLossWrapper: its hidden-state chunks, fp32 gradient buffer and the LM
  // head's unsharded gradient beside one chunk's logits (chunked_loss.h).
  // Under TP's loss parallel the LM head and the logits are a vocabulary shard, the hidden
  // states whole (chunked_loss.h): the transient is the rank's already (mesh_stage.cpp).
  const bool chunked = opt.cross_entropy == CrossEntropyImpl::chunked_lm_head;
  const int vocab_shards = shape.loss_parallel && shape.sequence_parallel && shape.mesh.tp > 1 ? shape.mesh.tp : 1;
  if (chunked)
    loss.fwd_transient = chunked_loss_peak_bytes(T, m.d_model, double(m.vocab), param_bytes,
                                                 dtype_bytes(cfg.precision.reduce_dtype), kChunkedLossChunks, vocab_shards);
  // fp32 logits the model returns and the loop keeps (runtime term fp32_logits_held): the
  // up-cast copy moves from the forward's transients to the model's output.
  const bool upcast_loss = is_fp32_upcast(opt.cross_entropy);
  const bool logits_held = opt.fp32_logits_held && upcast_loss;
  const double held_logits = logits_held ? 4.0 * T * double(m.vocab) : 0.0;
  loss.fwd_transient -= held_logits;
  // The KV cache the model returns (runtime term use_cache): every layer's K and V after the
  // rotary embedding, at n_kv_heads width (cached before any repeat_kv), in the activation dtype.
  const double kv_layer = opt.use_cache ? T * 2.0 * param_bytes * double(m.kv_dim()) : 0.0;
  // The model's output the loop keeps (SimInput::outputs_kept says how long), one block.
  const double output_bytes = held_logits + double(m.n_layers) * kv_layer;
  ActivationTerms& a = *out;
  a.loss = loss;
  a.upcast_loss = upcast_loss;
  a.logits_held = logits_held;
  a.kv_layer = kv_layer;
  a.output_bytes = output_bytes;
  a.loss_per_vocab_shard = chunked && vocab_shards > 1;
}

// What a block keeps without checkpointing, into a (kept_plain, and the scores, norms and
// trainer_block it is made of).
void plain_block_terms(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape, ActivationTerms* out) {
  const ModelSpec& m = cfg.model;
  const int b = shape.micro_batch, s = shape.seq_len, param_bytes = shape.param_bytes;
  const double T = shape.tokens;
  // Activations a block keeps (ac_policy.h): eager or compiled, plain, checkpointed or op-SAC.
  const bool compile = cfg.precision.compile;
  // The fp32 scores of eager attention (PlanOptions::attention_materialized): b·heads·s·s, or
  // the causal query blocks' share of it (attention_causal_blocks, shared/causal_blocks.h).
  const double score_elements = opt.attention_causal_blocks ? causal_block_score_elements(s) : double(s) * s;
  const double scores_bytes = opt.attention_materialized ? double(b) * m.n_heads * score_elements * 4.0 : 0.0;
  // shardcast-train's eager SwiGLU block (trainer/model/llama.cpp), counted to the byte by
  // trainer/microbench/bench_block_memory on tiny-2l, small-6l, llama3.2-1b and llama2-7b blocks
  // (with the query-block attention again on tiny-2l, small-6l and llama3.2-1b).
  // Per token, fp32: each RMSNorm keeps x², x·rsqrt(·) and its output (3d) plus the rsqrt (1)
  // with rmsnorm = eager (the trainer before its fused norm, shardcast-train-2026-11), its
  // output and the rsqrt (d + 1) with rmsnorm = fused (trainer/model/fused_ops.h; counted again
  // by bench_block_memory on tiny-2l and small-6l, 2026-12-07: 4d per token less, 25.03 and
  // 22.01 x 4d kept);
  // q's contiguous copy for the bmm, k and v at n_heads width (repeat_interleave or the bmm's
  // copy) and the attention output (4d); the mid residual (d); SwiGLU's gate, silu, up and
  // product (4f) with swiglu = eager, its gate, up and product (3f) with swiglu = fused
  // (trainer/model/fused_ops.h fused_swiglu recomputes σ in backward; bench_block_memory,
  // 2026-12-07: tiny-2l 25.03 -> 22.03 and small-6l 22.01 -> 19.01 x 4d, f = 3d). Per block:
  // the causal blocks' softmax outputs (scores_bytes). And the block's input (d), which the
  // first norm's multiply saves: bench_block_memory allocates it before its count starts, so
  // its counts (7d + 3f + 2 on the fused path, 11d + 4f + 2 on the eager one) leave it out, but in the model it is the previous unit's
  // output, kept alive by that save (measured on the whole trainer, tiny-2l on 2 ranks at 1024
  // tokens: the peak grew by T·d·4 per block, 0.25 MiB, with 2, 4 and 6 blocks; docs/validation-cpu.md "Peak memory since 4a4bb65").
  const bool trainer_block = opt.attention_causal_blocks && m.mlp_type == MlpType::swiglu && !compile &&
                             m.q_dim() == m.d_model && !m.qk_norm;  // its Llama block (trainer_checks.h)
  // An eager RMSNorm's fp32 tensors (ops.h eager_norm_extra_saved_per_token): two per block, one
  // in the head.
  const double norm_extra = T * eager_norm_extra_saved_per_token(m, param_bytes, opt.rmsnorm, compile);
  // Qwen3's q_norm and k_norm, the same RMSNorm over the q + kv width (the extra is linear in
  // the width), kept where the block keeps its norms.
  const double qk_norm_extra = m.qk_norm ? norm_extra * double(m.q_dim() + m.kv_dim()) / m.d_model : 0.0;
  // A fused q/k/v GEMM whose output attention keeps whole through v's view (runtime term
  // qkv_output_kept; ac_policy.h qkv_output_extra_saved_per_token), eager or compiled.
  const double qkv_extra = T * qkv_output_extra_saved_per_token(m, param_bytes, opt.qkv_output_kept);
  // torchao's tensorwise Float8Linear keeping its fp8-cast input instead of the input (runtime
  // term fp8_input_saved; ac_policy.h fp8_input_saving_per_token).
  const double fp8_input_saving =
      T * fp8_input_saving_per_token(m, param_bytes, opt.fp8_input_saved && cfg.precision.fp8 == Fp8Recipe::tensorwise);
  const double kept_plain =
      trainer_block ? T * 4.0 * (trainer_block_kept_d(opt.rmsnorm) * m.d_model +
                                 trainer_block_kept_f(opt.swiglu_fused) * double(m.ffn_dim) + 2.0) +
                          scores_bytes
                    : block_kept_bytes(m, T, param_bytes, BlockAc::none, compile, opt.gqa_repeated) +
                          2.0 * norm_extra + qk_norm_extra + qkv_extra + scores_bytes - fp8_input_saving;
  ActivationTerms& a = *out;
  a.scores_bytes = scores_bytes;
  a.norm_extra = norm_extra;
  a.trainer_block = trainer_block;
  a.kept_plain = kept_plain;
}

}  // namespace

ActivationTerms activation_terms(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape,
                                 const ComputeContext& cc, const std::vector<Op>& block_ops) {
  const ModelSpec& m = cfg.model;
  const int param_bytes = shape.param_bytes;
  const double T = shape.tokens;
  const bool compile = cfg.precision.compile;
  ActivationTerms a;
  head_terms(cfg, opt, shape, &a);
  plain_block_terms(cfg, opt, shape, &a);
  a.kv_repeated = opt.gqa_repeated;
  const double kept_ckpt = block_kept_bytes(m, T, param_bytes, BlockAc::checkpointed, compile);
  const double kept_sac =
      block_kept_bytes(m, T, param_bytes, BlockAc::selective_op, compile, false, opt.sac_attention_saved());
  const SacRecompute sac = selective_op_recompute(m, block_ops, cc, opt.sac_attention_saved());
  const double ckpt_recompute_s = checkpointed_recompute_time(block_ops, cc, opt.recompute_early_stop);


  // An eager Llama block tensor by tensor (block_tensor_sequence.h), per policy, where the
  // runtime runs torchtitan's block program eagerly with the ops it lists (eager norm and RoPE,
  // no fp8): its peaks are the unit's transients and the replay sees its holes. Other blocks
  // keep their lumps.
  const bool eager_program = opt.torchtitan_block_program && !compile && m.mlp_type == MlpType::swiglu && !a.trainer_block &&
                             opt.rmsnorm == NormImpl::eager && !opt.rope_fused && !opt.swiglu_fused &&
                             !opt.attention_materialized && !opt.qkv_output_kept && !cfg.precision.fp8_on() &&
                             !m.qk_norm &&  // the program lists a Llama block's tensors
                             shape.one_d();  // a mesh's blocks replay as lumps
  a.eager_program = eager_program;
  a.kept_ckpt = kept_ckpt;
  a.kept_sac = kept_sac;
  a.sac = sac;
  a.ckpt_recompute_s = ckpt_recompute_s;
  return a;
}

int block_unit_memory(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape,
                      const ActivationTerms& act, double P, bool ckpt, bool op_sac,
                      std::array<BlockTensorSequence, 3>* block_seq, SimUnit* unit) {
  const ModelSpec& m = cfg.model;
  const int b = shape.micro_batch, s = shape.seq_len, param_bytes = shape.param_bytes;
  const double T = shape.tokens;
  const double kept_plain = act.kept_plain, kept_ckpt = act.kept_ckpt, kept_sac = act.kept_sac;
  const double kv_layer = act.kv_layer, scores_bytes = act.scores_bytes;
  const bool trainer_block = act.trainer_block, eager_program = act.eager_program;
  SimUnit& u = *unit;
  int chosen = -1;
  // torchao's Float8Linear keeping each Linear's fp8-cast weight for backward (runtime term
  // fp8_weight_saved): 1 byte per Linear weight (the block's parameters but its norm
  // vectors), kept by a plain block from forward to backward and by a checkpointed or op-SAC
  // block while its recompute runs (the cast is not on torchtitan's SAC save list).
  const double fp8_weights = cfg.precision.fp8_on() && opt.fp8_weight_saved ? P - double(m.block_norm_params()) : 0.0;
  u.saved_bytes = ckpt ? kept_ckpt : (op_sac ? kept_sac : kept_plain + fp8_weights);
  // With the KV cache returned, the K and V a block saves for attention are the cache's
  // tensors, counted once, in the output: a plain block's k and v at kv width (not when
  // they are repeated to n_heads first: attention then saves the copies), an op-SAC
  // block's v (wv's output; its k after rotary is recomputed). A checkpointed block keeps
  // neither.
  if (!ckpt && !trainer_block) u.saved_bytes -= op_sac ? 0.5 * kv_layer : (opt.gqa_repeated ? 0.0 : kv_layer);
  // Backward working set: the recomputed tensors of a checkpointed / op-SAC block.
  u.bwd_transient_bytes = ckpt ? kept_plain + fp8_weights : (op_sac ? std::max(0.0, kept_plain - kept_sac) + fp8_weights : 0);
  // Forward transients beside what the block keeps.
  // - The trainer's block (bench_block_memory, fp32, s = 32..512 on small-6l, tiny-2l and
  //   llama3.2-1b): 2d per token above kept + output at the forward peak (1d with the fused
  //   RMSNorm, tiny-2l and small-6l, 2026-12-07), which falls in
  //   the MLP (a query block's scores are smaller); without grad (checkpointed) the peak
  //   is 7d + 4f per token above the output with the eager SwiGLU, 7d + 3f with the fused one. Past that, at long s one query block's
  //   scores and softmax (2·b·heads·rows·s, not measured here) can be larger: the larger
  //   of the two is taken.
  // - Other eager attention: one more (b, heads, s, s) tensor (the masked scores) beside
  //   the kept softmax output (a checkpointed block keeps neither: two such tensors).
  // In backward the softmax/scores gradients add one scores-sized tensor.
  if (eager_program) {
    const BlockAc policy = ckpt ? BlockAc::checkpointed : (op_sac ? BlockAc::selective_op : BlockAc::none);
    BlockTensorSequence& q = (*block_seq)[size_t(policy)];
    if (q.seq.empty() && q.kept_bytes == 0) {  // once per policy (refused: tried per block)
      BlockProgram prog;
      prog.tokens = T;
      prog.act_bytes = param_bytes;
      prog.ac = policy;
      prog.gqa_repeated = opt.gqa_repeated;
      prog.sac_attention_saved = opt.sac_attention_saved();
      q = eager_block_sequence(m, prog, u.saved_bytes);
    }
    if (!q.seq.empty()) {
      u.fwd_transient_bytes = q.fwd_transient;
      u.bwd_transient_bytes = q.bwd_transient;
      chosen = int(policy);
    }
  }
  if (trainer_block) {
    const double block_scores = 2.0 * b * m.n_heads * double(causal_query_block_rows(s)) * s * 4.0;
    // Above kept + output: 2d with the eager norm, 1d with the fused one (bench_block_memory,
    // tiny-2l and small-6l, 2026-12-07; unchanged by the fused SwiGLU, 2026-12-07); without
    // grad 7d + 4f with the eager SwiGLU, 7d + 3f with the fused one (its product is the one
    // (…,F) tensor it makes; tiny-2l and small-6l, 2026-12-07: 16.00 x 4d, f = 3d).
    const double fwd_d = opt.rmsnorm == NormImpl::fused ? 1.0 : 2.0;
    const double nograd_f = opt.swiglu_fused ? 3.0 : 4.0;
    u.fwd_transient_bytes =
        ckpt ? std::max(T * 4.0 * (7.0 * m.d_model + nograd_f * double(m.ffn_dim)), block_scores)
             : std::max(T * 4.0 * fwd_d * m.d_model, block_scores);
  } else if (opt.attention_materialized) {
    u.fwd_transient_bytes = (ckpt ? 2.0 : 1.0) * scores_bytes;
  }
  u.bwd_transient_bytes += scores_bytes;
  return chosen;
}

}  // namespace shardcast::planner
