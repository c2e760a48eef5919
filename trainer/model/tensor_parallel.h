// Tensor parallelism with sequence parallelism (Megatron-LM's SP; torchtitan's TP plan) over one
// tp process group: the autograd Functions that move activations between sequence shards and
// the whole sequence, the vocab-parallel embedding, and the vocab-parallel ("loss parallel")
// cross-entropy.
//
// What it is: the plan torchtitan applies to Llama (pytorch/torchtitan@018740b7
// torchtitan/models/llama3/infra/parallelize.py apply_tp): wq/wk/wv/w1/w3 column-wise (split on the output
// dimension), wo/w2 row-wise (split on the input dimension), norms on sequence shards
// (SequenceParallel), tok_embeddings row-wise (vocab rows split; partial sums reduce-scattered
// to sequence shards), output column-wise on the vocab with loss parallel (logits stay
// vocab-sharded; the cross-entropy reduces max, sum-exp and the target logit over the group).
//   gather   (B,T/tp,D) -> (B,T,D): all-gather along the sequence; backward reduce-scatter.
//   scatter  (B,T,D) partial -> (B,T/tp,D) summed: reduce-scatter; backward all-gather.
// Rank t of the group holds sequence positions [t·T/tp, (t+1)·T/tp).
// What it is not: the weights' layout (model/llama.h unit_param_infos splits them) or FSDP
// (fsdp/ shards each tp rank's pieces over the data-parallel group and sums the replicated norm
// weights' gradients over tp). No async TP (collectives are not overlapped with the GEMMs).
// Threading: the rank's thread (and the autograd engine's for backward); every rank of the tp
// group issues the same collectives in the same order, as the same program does.
#pragma once

#include <cstdint>
#include <memory>

#include <ATen/ATen.h>

#include "trainer/comm/collectives.h"
#include "trainer/model/llama.h"

namespace shardcast::trainer {

// The gather/scatter pair of `tp` (kept alive by the closures) for model/llama.h block_forward.
SeqParallel make_seq_parallel(std::shared_ptr<Collectives> tp);

// Vocab-parallel embedding: tokens (B,T) int64 looked up in this rank's rows [v0, v0+V/tp) of
// the table (V/tp, D); tokens outside read zeros. Returns the partial (B,T,D) (sum over the group
// = the embedding); callers scatter it to sequence shards.
at::Tensor vocab_parallel_embedding(const at::Tensor& tokens, const at::Tensor& embed_piece, int64_t v0);

// Mean token cross-entropy of vocab-sharded logits (B,T,V/tp) (this rank's vocab [v0, v0+V/tp))
// against targets (B,T): the same scalar (fp32) on every rank of the group, lm_loss's value.
// Forward: an all-reduce max and one all-reduce sum (sum-exp and target logit) of B·T values;
// backward needs no communication (softmax − one-hot on this rank's vocab).
at::Tensor vocab_parallel_loss(const at::Tensor& logits_piece, const at::Tensor& targets, int64_t v0,
                               const std::shared_ptr<Collectives>& tp);

}  // namespace shardcast::trainer
