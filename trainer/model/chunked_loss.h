// Chunked cross-entropy: the mean token cross-entropy of lm_loss (model/llama.h), computed over
// the vocabulary a chunk of tokens at a time, so that no fp32 copy of all logits exists at once.
//
// What it is: an autograd Function. Forward: for each chunk of `chunk_tokens` rows of the
// (N,V) logits (N = B·T), the rows cast to fp32 and shifted by their max (z = row − max), then
// log Σ exp(z) and z[target]; loss = Σ (log Σ exp(z) − z[target]) / N, summed in fp64. Backward:
// per chunk again, softmax = exp(z − log Σ exp(z)) in fp32, minus one at the target, times
// grad / N, written into the logits' gradient (N,V) in the logits' dtype. Saved for backward: the
// logits themselves (in their dtype, the head's output) and two fp32 floats per row (max, log Σ
// exp): no (N,V) fp32 tensor is saved, and the transients are one chunk's fp32 rows
// (chunk_tokens·V·4 bytes, two or three at once). On fp32 logits (the CPU path) the saved bytes
// are those of the reference's fp32 log-probabilities (4·N·V); the peak loses the reference's
// (N,V) log-probabilities beside the logits in forward. Both directions are timed under the
// op profile's `shardcast::lm_loss` scope (category loss).
// What it is not: the reference (lm_loss, logits.to(fp32) then at::cross_entropy_loss, kept as
// this path's oracle: tests/trainer/chunked_loss_test.cpp), nor the vocab-parallel loss of
// tensor parallel (model/tensor_parallel.h). Targets must lie in [0, V) (no ignore index).
// Threading: none of its own; called from the rank's thread (backward on autograd's).
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace shardcast::trainer {

// Tokens per chunk: 1024 rows of a 128k vocabulary are 0.5 GiB of fp32 per temporary.
inline constexpr int64_t kLossChunkTokens = 1024;

// logits (B,T,V) in any float dtype, targets (B,T) int64 -> mean loss, fp32 scalar.
at::Tensor chunked_lm_loss(const at::Tensor& logits, const at::Tensor& targets,
                           int64_t chunk_tokens = kLossChunkTokens);

}  // namespace shardcast::trainer
