// Op categories: the one vocabulary of a training step's time by kind of work, used by the
// trainer's per-op profile (trainer/profile/, `shardcast-train profile`, op_profile.json) and
// the planner's breakdown of a predicted step (planner/model/op_breakdown.h, Prediction::op_seconds,
// `shardcast plan --json` key time.ops_s).
//
// What it is: a schema table — each category's name (the JSON key, the printed table's row
// and the docs' word) and what it covers. What it is not: the classification of a trainer op
// name (trainer/profile/op_classify.h) or of a planner op (planner/model/op_breakdown.h).
// Plain data, thread-safe.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace shardcast {

enum class OpCategory : int {
  matmul = 0,     // GEMMs of the Linear layers (q, k, v, o, gate, up, down, LM head), forward and backward
  attention,      // softmax(q·kᵀ)·v: flash/efficient SDPA, or eager scores, softmax and the two bmm
  norm,           // RMSNorm / LayerNorm
  elementwise,    // RoPE, SwiGLU/GELU activation, residual adds, casts and layout copies inside the model
  embedding,      // token embedding lookup and its scatter-add backward
  loss,           // cross-entropy (log-softmax + NLL) and its up-cast of the logits
  optimizer,      // AdamW and the gradient-norm clip
  communication,  // collective calls and the waits on them (GPU: the compute stream's wait)
  copy,           // FSDP's parameter/gradient copies: casts, flat-buffer views/splits, gradient-shard adds
  other,          // the step's time in none of the above (host work, autograd engine, step − sum)
};
inline constexpr int kOpCategories = 10;

struct OpCategoryInfo {
  OpCategory category;
  std::string_view name;         // JSON key, table row, docs
  std::string_view description;  // one line, for --help and docs
};

// In enum order.
const std::array<OpCategoryInfo, kOpCategories>& op_categories();
std::string_view to_string(OpCategory c);
std::optional<OpCategory> parse_op_category(std::string_view name);

}  // namespace shardcast
