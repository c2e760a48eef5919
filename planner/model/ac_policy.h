// Activation-checkpointing and compile policies of one transformer block: which tensors a
// block keeps from forward to backward, what its backward recomputes, and what that costs.
//
// What it is: the per-block activation model for
//   - no checkpointing, eager PyTorch (every op keeps what autograd saves; formulas.md §2.4),
//   - no checkpointing under torch.compile (AOTAutograd's min-cut partitioner recomputes
//     pointwise outputs in backward unless a non-fusible backward op reads them: the GEMM
//     inputs (norm outputs, the SwiGLU product) stay saved, silu(w1·x) is recomputed),
//   - whole-block checkpointing (`full`, block-level `selective`): only the block input,
//   - torchtitan's op-level selective checkpointing (`selective_op`, selective_ac_option="op"):
//     the outputs of the matmuls, except every second one, and of SDPA are kept; the rest of
//     the block is recomputed in backward up to the last tensor backward needs.
// Bytes are counted per tensor from the model shape (not from the op list) so that the eager
// count can be checked against the ops' own saved bytes (ops.h) in tests.
// What it is not: the timeline (simulator.h) or the op costs themselves (ops.h).
// Pure functions, thread-safe.
#pragma once

#include <vector>

#include "planner/model/ops.h"
#include "shared/model_spec.h"

namespace shardcast::planner {

enum class BlockAc {
  none,          // every op keeps what it saves
  checkpointed,  // whole block recomputed: keeps its input only
  selective_op,  // torchtitan op-level SAC
};

// Bytes a block keeps from forward to backward for `tokens` tokens. gqa_repeated (runtime term
// `gqa = "repeated"`): grouped-query K and V are copied to n_heads width before attention
// (torchtitan's repeat_kv, transformers' repeat_kv, litgpt's expand + reshape), so attention
// keeps them at width d instead of kv.  // bytes
// sac_attention_saved = false (selective_op on a save list without the SDPA op that runs,
// runtime term sac_saves_cudnn_attention): attention's output and log-sum-exp are not kept.
double block_kept_bytes(const ModelSpec& m, double tokens, int act_bytes, BlockAc ac, bool compile,
                        bool gqa_repeated = false, bool sac_attention_saved = true);

// torchtitan op SAC: matmuls of a block in forward order and which are saved. Llama: wq, wk,
// wv, wo, w1, w3, w2 → the 1st, 3rd, 5th and 7th (wq, wv, w1, w2) are saved; MPT/GELU:
// Wqkv, out_proj, fc1, fc2 → Wqkv and fc1 saved.
struct SacRecompute {
  double time_s = 0;   // recomputed forward time inside the block's backward  // s
  double flops = 0;    // recomputed GEMM FLOPs  // FLOP
};
// Recompute time of a whole checkpointed block (one micro-batch), given its forward ops.
// Without early stop it is the whole forward. With the early stop of non-reentrant
// torch.utils.checkpoint (torch >= 2.1, pytorch/pytorch#96866: "non-reentrant checkpoint stops
// recomputation as soon as it has computed all needed Tensors"), the recompute ends when the
// last tensor the forward saved is packed again: the inputs of the block's last GEMM (w2 / fc2)
// are packed before that GEMM runs, so it and the residual add after it are not recomputed.  // s
double checkpointed_recompute_time(const std::vector<Op>& ops, const ComputeContext& c, bool early_stop);
// The ops [0, end) of `ops` that checkpointed_recompute_time recomputes.
int checkpointed_recompute_end(const std::vector<Op>& ops, bool early_stop);

// Recompute cost of selective_op for the block's op listing (block_forward_ops): the GEMMs
// that are not saved (wk, wo, w3 / out_proj) and every elementwise op before the last one
// (checkpoint's early stop: nothing after w2's input is needed). Attention is saved, unless
// attention_saved = false (its save list lacks the SDPA op that runs): then its forward runs again.
SacRecompute selective_op_recompute(const ModelSpec& m, const std::vector<Op>& ops, const ComputeContext& c,
                                    bool attention_saved = true);
// Bytes per token a plain block keeps beyond block_kept_bytes when one fused GEMM makes q, k and
// v and attention saves v as a view of its output (runtime term qkv_output_kept): the output
// then stays alive whole, its q and k parts (A·(d + kv)) beside the rotated copies attention
// saves. Only with RoPE (q and k are new tensors; MPT's views of Wqkv are all of it) and K/V at
// n_heads (grouped K/V are expanded and reshaped into a copy, which drops the view). Eager and
// compiled alike: under AOTAutograd's partitioner v's base is the saved tensor (views are
// recomputed from it) and the rotated q and k feed the non-fusible attention backward
// (ban_recompute_materialized_backward), so both are kept.
double qkv_output_extra_saved_per_token(const ModelSpec& m, int A, bool qkv_output_kept);

// Bytes per token a plain block keeps less than block_kept_bytes when each Linear saves its
// input cast to fp8 (1 byte) for backward instead of the input (runtime term fp8_input_saved:
// torchao's tensorwise Float8Linear, e1aee6354 … c6de9b42a). An input no other op keeps is
// then freed after the cast: the two norm outputs (the q/k/v and the w1/w3 or fc1 GEMMs' input)
// and the down-projection's input (SwiGLU's product, GELU's output), (A − 1)·(2d + f) less.
// The attention output, wo's input, is kept by attention itself: its fp8 copy is d more.
// Eager and compiled alike (the fp8 cast's output is what the weight-gradient GEMM reads; the
// partitioner keeps it, not the wider input it was cast from). 0 when A = 1.
double fp8_input_saving_per_token(const ModelSpec& m, int A, bool fp8_input_saved);

// The fraction of each op of `ops` that selective_op recomputes (what selective_op_recompute
// weighs each op's forward time and FLOPs by).
std::vector<double> selective_op_recompute_shares(const ModelSpec& m, const std::vector<Op>& ops,
                                                  bool attention_saved = true);

}  // namespace shardcast::planner
