// Llama in LibTorch, written functionally: every forward takes its weights as tensors.
//
// What it is: the parameter layout (Hugging Face Llama names and shapes, grouped into FSDP
// units [embedding, block 0..L-1, final norm + head]), seeded deterministic init that does
// not depend on sharding, the math of each unit (RMSNorm, RoPE as HF's rotate_half,
// grouped-query causal attention, SwiGLU — or a GELU MLP with up/down projections when
// ModelSpec::mlp_type is gelu, so MPT-sized presets train with the planner's parameter
// counts; MPT's LayerNorm and ALiBi are not modelled), the loss, and ReferenceModel — the plain
// single-process path with one leaf tensor per parameter and no sharding code, kept as the
// test oracle for FSDP.
// What it is not: an nn::Module (LibTorch modules have no hooks; FSDP needs to own the
// storage) and not a tokenizer. Functions are pure; ReferenceModel owns its tensors and is
// used from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "shared/model_spec.h"
#include "trainer/model/fused_ops.h"

namespace shardcast::trainer {

struct ParamInfo {
  std::string name;              // HF name, e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;    // this tensor-parallel rank's piece (= full_shape without tp)
  int64_t numel = 0;             // of `shape`
  double init_std = 0;           // normal(0, init_std); 0 = ones (norm weights)
  // Tensor parallel (Megatron / torchtitan's plan): the dimension split over the tp ranks — 0 for
  // column-parallel q/k/v/gate/up and the vocab-parallel embedding and head, 1 for row-parallel
  // o/down, −1 for the replicated norms — and where this rank's piece starts along it.
  std::vector<int64_t> full_shape;
  int tp_dim = -1;
  int64_t tp_offset = 0;
};

// Parameters of each FSDP unit in order. Tied embeddings: the head reuses
// model.embed_tokens.weight and the final unit holds only model.norm.weight.
// tp > 1: the pieces of tensor-parallel rank tp_rank (shapes divided along tp_dim; the caller
// checked that tp divides the heads, kv heads, ffn_dim and vocab).
std::vector<std::vector<ParamInfo>> unit_param_infos(const ModelSpec& m, int tp = 1, int tp_rank = 0);

// Deterministic init of one parameter from (seed, name): identical on every rank and for
// every sharding, so FSDP and the reference start from the same weights. A tp piece is the
// slice of the full init.  // fp32
at::Tensor init_param(const ParamInfo& p, uint64_t seed);

// Sequence parallelism's two activation collectives over the tp group (model/tensor_parallel.h
// makes them): `gather` (B,T/tp,D) -> (B,T,D) before a column-parallel Linear, `scatter`
// (B,T,D) partial sums -> (B,T/tp,D) summed after a row-parallel one; each the other's backward.
struct SeqParallel {
  int tp = 1;
  std::function<at::Tensor(const at::Tensor&)> gather, scatter;
};

// RoPE tables for positions [0, seq_len): cos, sin each (T, head_dim) fp32.
struct Rope {
  at::Tensor cos, sin;
};
Rope make_rope(const ModelSpec& m, int seq_len);

// Unit forwards. `w` are the unit's weights in unit_param_infos order (any dtype; compute
// happens in that dtype, norms and softmax in fp32).
at::Tensor embedding_forward(const at::Tensor& tokens, const at::Tensor& embed);   // (B,T) int64 -> (B,T,D)
// With `sp` (tensor parallel): x and the result are sequence shards (B,T/tp,D), w this rank's
// pieces (n_heads/tp query heads, n_kv_heads/tp kv heads, ffn_dim/tp); norms run on the shard.
// `ops`: the fused RMSNorm, rotary and SwiGLU of model/fused_ops.h (the trainer's path), or the
// reference LibTorch ops (rms_norm, rotary_reference, swiglu_reference): the oracle and
// bench_fused_ops' baseline.
enum class BlockOps { fused, reference };
at::Tensor block_forward(const ModelSpec& m, const Rope& rope, const at::Tensor& x,
                         const std::vector<at::Tensor>& w,
                         const SeqParallel* sp = nullptr,
                         BlockOps ops = BlockOps::fused);                          // (B,T,D) -> (B,T,D)
at::Tensor head_forward(const ModelSpec& m, const at::Tensor& x, const at::Tensor& norm_w,
                        const at::Tensor& head_w);                                 // (B,T,D) -> (B,T,V)
// Causal softmax(q·kᵀ/√hd)·v as block_forward computes it (causal query blocks, one baddbmm
// each for the masked, scaled scores), and the same spelled as HF's eager LlamaAttention (matmul, /√hd,
// masked_fill, softmax in fp32, matmul): the test oracle. q, k, v (B,H,T,hd) -> (B,H,T,hd).
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);
at::Tensor causal_attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);
// RMSNorm: rms_norm (the reference) and fused_rms_norm, with the rotary embedding, are in
// model/fused_ops.h; the unit forwards run the fused ones.
// Mean token cross-entropy, computed in fp32.  // scalar
at::Tensor lm_loss(const at::Tensor& logits, const at::Tensor& targets);

// The plain single-process model: one leaf fp32 tensor per parameter.
class ReferenceModel {
 public:
  ReferenceModel(const ModelSpec& m, uint64_t seed);
  at::Tensor forward(const at::Tensor& tokens);            // (B,T) int64 -> logits (B,T,V)
  const ModelSpec& spec() const { return spec_; }
  // All parameters in unit order, with their names.
  std::vector<std::pair<std::string, at::Tensor>> named_parameters() const;

 private:
  ModelSpec spec_;
  std::vector<std::vector<at::Tensor>> units_;   // per FSDP unit, unit_param_infos order
  std::vector<std::vector<ParamInfo>> infos_;
  Rope rope_;
  int rope_len_ = 0;
};

}  // namespace shardcast::trainer
