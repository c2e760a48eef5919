// ModelSpec: the architecture of a Llama-family decoder (also MPT's GELU variant).
//
// What it is: the fields that define the shapes, and the quantities derived from them that
// both the planner and the trainer need (parameter counts, FSDP unit sizes, FLOPs per token).
// What it is not: weights or a module; no LibTorch here. Plain value type, thread-safe.
//
// FLOPs convention (the one of configs/published/README.md, PaLM App. B, torchtitan):
//   flops_per_token(s) = 6·N + 12·L·q·s,   q = n_heads · head_dim (= d_model unless head_dim is set)
// where N = total_params() (all parameters, embeddings and head included, tied counted once),
// L = n_layers, s = seq_len (PaLM App. B writes 12·L·H·Q·T). Attention is counted as a full (non-causal) s×s product and the
// flash-attention recompute is not counted. This is the *model* FLOPs used for MFU; HFU adds
// the recomputed forward (see hardware_flops_per_token).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardcast {

enum class MlpType { swiglu, gelu };

// The largest model a ModelSpec may describe (validate_model): 2,500 x Llama 3.1 405B, and small
// enough that parameter, byte (x 16 bytes of state per parameter) and FLOP counts stay exact in
// int64 / double.
inline constexpr double kMaxModelParams = 1e15;
// The widest attention head model.head_dim (and a kernel table's head_dim column) may state:
// FlashAttention-2 runs head dimensions up to 256 (Dao-AILab/flash-attention README "all head
// dimensions up to 256"); 1024 rejects a mistyped number without refusing a future kernel.
inline constexpr int kMaxHeadDim = 1024;
// A head width model.head_dim may state: even (RoPE rotates pairs) and in [2, kMaxHeadDim]; the
// one rule for the key and for a published row's head_dim column.
inline bool head_dim_allowed(int head_dim) { return head_dim >= 2 && head_dim <= kMaxHeadDim && head_dim % 2 == 0; }

struct ModelSpec {
  std::string name;              // preset name or free text
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;            // grouped-query attention; == n_heads for MHA
  int64_t ffn_dim = 0;           // SwiGLU hidden width, or the GELU MLP width (4·d for MPT)
  int64_t vocab = 0;
  int max_seq_len = 0;
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  bool tied_embeddings = false;
  MlpType mlp_type = MlpType::swiglu;
  // model.head_dim: the width of one attention head when it is not d_model / n_heads (Qwen3-32B:
  // 128 with d_model 5120 and 64 heads, so wq is 5120 x 8192); 0 = d_model / n_heads (Llama).
  int explicit_head_dim = 0;
  // model.qk_norm: an RMSNorm of head_dim over each query and key head before RoPE (Qwen3:
  // torchtitan experiments/qwen3/model/model.py @d66b72a6a q_norm, k_norm); false = none (Llama).
  bool qk_norm = false;

  int head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : d_model / n_heads; }
  int64_t q_dim() const { return int64_t(n_heads) * head_dim(); }      // query (and attention output) width
  int64_t kv_dim() const { return int64_t(n_kv_heads) * head_dim(); }  // K (or V) width

  // Parameter counts (elements). Llama blocks have no biases; RMSNorm has one weight vector.
  int64_t attention_params() const;      // q, k, v, o projections (+ q_norm, k_norm weights)
  int64_t mlp_params() const;            // 3·d·f (swiglu) or 2·d·f (gelu)
  int64_t block_params() const;          // attention + mlp + 2 norms
  int64_t block_norm_params() const;     // a block's norm weights: 2·d_model (+ 2·head_dim with qk_norm)
  int64_t embedding_params() const;      // vocab·d
  int64_t head_params() const;           // vocab·d if untied, else 0
  int64_t final_norm_params() const;     // d
  int64_t total_params() const;
  int64_t non_embedding_params() const;  // total − embedding (head counted if untied)
  // Parameter tensors: the embedding, per block q, k, v, o and the three SwiGLU weights (Llama)
  // or Wqkv, out_proj, fc1 and fc2 (MPT) and the two norm weights, the final norm, an untied
  // head. What an optimizer over per-parameter shards (FSDP2) iterates over.
  int64_t parameter_tensors() const;

  // FSDP units in execution order: [embedding, block 0 .. block L−1, final norm + head].
  // Elements per unit (the trainer and planner both wrap this way).
  std::vector<int64_t> fsdp_unit_params() const;
  int n_fsdp_units() const { return n_layers + 2; }

  // FLOPs per token, model convention above.   // FLOP
  double flops_per_token(int seq_len) const;
  // FLOPs per token as torchtitan counts them for its logged MFU and tflops:
  //   6·(N − embedding params) + 12·L·d_model·s   (untied; tied embeddings: 6·N + 12·L·d·s)
  // (pytorch/torchtitan@b5bcd76c6 torchtitan/models/utils.py get_dense_model_nparams_and_flops;
  // the same count since torchtitan's first releases; its Qwen3 args.py @d66b72a6a counts
  // 12·L·n_heads·(dim // n_heads)·s too, whatever head_dim is). Smaller than flops_per_token() by
  // 6·vocab·d_model for an untied model with head_dim = d_model / n_heads.   // FLOP
  double flops_per_token_torchtitan(int seq_len) const;
  // Attention-score FLOPs per token alone: 12·L·q·s.  // FLOP
  double attention_flops_per_token(int seq_len) const;
  // Hardware FLOPs per token: model FLOPs plus one extra forward of the recomputed fraction
  // of blocks (recompute_fraction in [0, 1]; 1 = full checkpointing of every block).
  double hardware_flops_per_token(int seq_len, double recompute_fraction) const;
};

const char* to_string(MlpType t);
// The TOML spelling of model.mlp_type; std::nullopt for an unknown name.
std::optional<MlpType> parse_mlp_type(const std::string& s);
// Every MlpType, in the order of the table to_string and parse read (choice lists).
std::vector<MlpType> all_mlp_types();
inline const char* kMlpTypeNames = "swiglu | gelu";

}  // namespace shardcast
