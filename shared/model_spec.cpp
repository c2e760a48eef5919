#include "shared/model_spec.h"

#include "shared/enum_names.h"

namespace shardcast {

int64_t ModelSpec::attention_params() const {
  const int64_t d = d_model, q = q_dim();
  const int64_t qk_norms = qk_norm ? 2 * int64_t(head_dim()) : 0;  // q_norm, k_norm weights
  return d * q /*q*/ + 2 * d * kv_dim() /*k, v*/ + q * d /*o*/ + qk_norms;
}

int64_t ModelSpec::mlp_params() const {
  const int64_t mats = mlp_type == MlpType::swiglu ? 3 : 2;  // gate, up, down | up, down
  return mats * int64_t(d_model) * ffn_dim;
}

int64_t ModelSpec::block_params() const {
  return attention_params() + mlp_params() + 2 * int64_t(d_model);  // + 2 RMSNorm weights
}

int64_t ModelSpec::block_norm_params() const {
  return 2 * int64_t(d_model) + (qk_norm ? 2 * int64_t(head_dim()) : 0);
}

int64_t ModelSpec::embedding_params() const { return vocab * d_model; }
int64_t ModelSpec::head_params() const { return tied_embeddings ? 0 : vocab * d_model; }
int64_t ModelSpec::final_norm_params() const { return d_model; }

int64_t ModelSpec::total_params() const {
  return embedding_params() + int64_t(n_layers) * block_params() + final_norm_params() +
         head_params();
}

int64_t ModelSpec::non_embedding_params() const { return total_params() - embedding_params(); }

int64_t ModelSpec::parameter_tensors() const {
  const int64_t per_block = (mlp_type == MlpType::swiglu ? 4 + 3 + 2 : 2 + 2 + 2) + (qk_norm ? 2 : 0);
  return 1 + int64_t(n_layers) * per_block + 1 + (tied_embeddings ? 0 : 1);
}

std::vector<int64_t> ModelSpec::fsdp_unit_params() const {
  std::vector<int64_t> units;
  units.reserve(n_fsdp_units());
  units.push_back(embedding_params());
  for (int i = 0; i < n_layers; ++i) units.push_back(block_params());
  units.push_back(final_norm_params() + head_params());
  return units;
}

double ModelSpec::attention_flops_per_token(int seq_len) const {
  return 12.0 * n_layers * double(q_dim()) * seq_len;
}

double ModelSpec::flops_per_token(int seq_len) const {
  return 6.0 * double(total_params()) + attention_flops_per_token(seq_len);
}

double ModelSpec::flops_per_token_torchtitan(int seq_len) const {
  const int64_t matmul_params = tied_embeddings ? total_params() : non_embedding_params();
  return 6.0 * double(matmul_params) + 12.0 * n_layers * double(d_model) * seq_len;  // dim // n_heads heads
}

double ModelSpec::hardware_flops_per_token(int seq_len, double recompute_fraction) const {
  // One extra forward (a third of 6·N_block + the attention term) for recomputed blocks.
  const double block_fwd =
      2.0 * double(n_layers) * double(block_params()) + attention_flops_per_token(seq_len) / 3.0;
  return flops_per_token(seq_len) + recompute_fraction * block_fwd;
}

namespace {
// One table (shared/enum_names.h); kMlpTypeNames (model_spec.h) lists the same names in order.
constexpr EnumName<MlpType> kMlpTypes[] = {{MlpType::swiglu, "swiglu"}, {MlpType::gelu, "gelu"}};
}  // namespace

const char* to_string(MlpType t) { return enum_name(kMlpTypes, t); }
std::optional<MlpType> parse_mlp_type(const std::string& s) { return enum_parse(kMlpTypes, s); }
std::vector<MlpType> all_mlp_types() { return enum_values(kMlpTypes); }

}  // namespace shardcast
