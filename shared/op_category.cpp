// The op-category table. See op_category.h.
#include "shared/op_category.h"

namespace shardcast {

const std::array<OpCategoryInfo, kOpCategories>& op_categories() {
  static const std::array<OpCategoryInfo, kOpCategories> table{{
      {OpCategory::matmul, "matmul", "GEMMs of the Linear layers and the LM head, forward and backward"},
      {OpCategory::attention, "attention", "softmax(q·kᵀ/√d)·v: SDPA kernels, or eager scores, softmax and bmm"},
      {OpCategory::norm, "norm", "RMSNorm / LayerNorm, forward and backward"},
      {OpCategory::elementwise, "elementwise",
       "RoPE, SwiGLU/GELU activation, residual adds, casts and layout copies inside the model"},
      {OpCategory::embedding, "embedding", "token embedding lookup and its backward"},
      {OpCategory::loss, "loss", "cross-entropy (log-softmax + NLL, fp32 up-cast of the logits)"},
      {OpCategory::optimizer, "optimizer", "AdamW update and gradient-norm clipping"},
      {OpCategory::communication, "communication",
       "collective calls and waits (GPU: time the compute stream waits on collectives)"},
      {OpCategory::copy, "copy", "FSDP parameter/gradient casts, flat-buffer copies, gradient-shard adds"},
      {OpCategory::other, "other", "the rest of the step: host work, autograd engine, step − sum"},
  }};
  return table;
}

std::string_view to_string(OpCategory c) { return op_categories()[size_t(c)].name; }

std::optional<OpCategory> parse_op_category(std::string_view name) {
  for (const auto& c : op_categories())
    if (c.name == name) return c.category;
  return std::nullopt;
}

}  // namespace shardcast
