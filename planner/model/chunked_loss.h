// The memory of torchtitan's chunked loss (runtime term cross_entropy = "chunked_lm_head").
//
// What it is: the bytes ChunkedLossWrapper holds while it runs (pytorch/torchtitan@b5bcd76c6
// torchtitan/components/loss.py; the registered llama3 / qwen3 configs' loss from 9530a874d,
// 2026-06-26). The decoder returns its hidden states [T, d] (the LM head skipped); the wrapper
// copies them into `num_chunks` detached contiguous chunks, keeps an fp32 GradAccumulator of
// [T, d], and for each chunk in turn runs lm_head, CrossEntropyLoss (F.cross_entropy on
// pred.float(), reduction sum) and that chunk's backward at once, so no tensor of all T·V
// logits exists and nothing of the loss is kept for the decoder's backward. The LM head stays
// unsharded across the chunks with gradient sync off but for the last one: FSDP2 accumulates
// its unsharded gradient in reduce_dtype (FSDPParam.to_accumulated_grad_if_needed).
// What it is not: the loss's time (the head's GEMMs and the cross-entropy passes are those of
// the whole sequence, ops.h head_forward_ops) or the decoder's memory. Pure functions.
#pragma once

namespace shardcast::planner {

// ChunkedLossWrapper.Config.num_chunks (torchtitan @b5bcd76c6 components/loss.py: 8; no
// registered llama3 / qwen3 config sets another).
inline constexpr int kChunkedLossChunks = 8;

// One chunk's logits while its forward and backward run, per chunk, in bytes, for `tokens` rows
// of `vocab` logits in act_bytes: the logits (A, held by the loop's `logits` until the next
// chunk), the fp32 copy's log-softmax output (4, saved), the gradient of that output (4) and
// log_softmax_backward's output (4) at the peak of its backward: (A + 12) · tokens · vocab / chunks.
double chunked_loss_chunk_bytes(double tokens, double vocab, int act_bytes, int chunks = kChunkedLossChunks);

// Bytes the wrapper holds besides one chunk's logits while it runs, at its peak:
// - the detached hidden-state chunks (A · T · d) and the fp32 GradAccumulator (4 · T · d), the
//   whole call long;
// - per chunk, that chunk's gradient of its hidden states (A · T · d / chunks) and the LM head's
//   unsharded gradient: the chunk's (A · V · d) and FSDP2's accumulated one in reduce_dtype
//   (reduce_bytes · V · d);
// - at the end, accumulated_grad = buffer.to(hidden dtype) (A · T · d) beside the buffer;
// held + the larger of the last two groups (the chunk phase adds chunked_loss_chunk_bytes).
// `vocab_shards`: under TP's loss parallel each rank's LM head and logits are a 1/tp vocabulary
// shard while its hidden states stay whole (torchtitan @b5bcd76c6 components/loss.py: "each TP
// rank computes partial CE on its V/tp slice"; decoder_sharding.py all-gathers the hidden states
// to Replicate before the wrapper): the V-sized terms divide, the T·d ones do not.
double chunked_loss_held_bytes(double tokens, double d_model, double vocab, int act_bytes, int reduce_bytes,
                               int chunks = kChunkedLossChunks, int vocab_shards = 1);

// The loss's transient at its peak (chunk phase or final cast), in bytes: what the head unit's
// forward holds while the wrapper runs. Nothing is kept for backward and the head's backward
// has already run inside the wrapper.
double chunked_loss_peak_bytes(double tokens, double d_model, double vocab, int act_bytes, int reduce_bytes,
                               int chunks = kChunkedLossChunks, int vocab_shards = 1);

}  // namespace shardcast::planner
