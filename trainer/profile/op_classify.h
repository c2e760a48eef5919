// Which op category (shared/op_category.h) a recorded op of the trainer belongs to, by the
// name LibTorch's RecordFunction gives it: an ATen op ("aten::mm"), an autograd node of
// backward ("MmBackward0"), or one of the trainer's own scopes (op_scope below, opened with
// RECORD_USER_SCOPE in the model, FSDP, the optimizer and the collectives).
//
// What it is: the name table and the scope names, so the code that opens a scope and the
// profile that classifies it use the same string. What it is not: the timing
// (op_recorder.h) — which also maps a backward node to the category of the forward op that
// created it (autograd sequence numbers) before falling back to this table. No LibTorch.
// Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "shared/op_category.h"

namespace shardcast::trainer {

// The trainer's own record scopes. A scope's time is its category's; ops inside it are not
// counted again.
namespace op_scope {
inline constexpr const char* rms_norm = "shardcast::rms_norm";              // norm
inline constexpr const char* rope = "shardcast::rope";                      // elementwise
inline constexpr const char* swiglu = "shardcast::swiglu";                  // elementwise
inline constexpr const char* attention = "shardcast::attention";            // attention
inline constexpr const char* lm_loss = "shardcast::lm_loss";                // loss
inline constexpr const char* adamw = "shardcast::adamw";                    // optimizer
inline constexpr const char* clip_grad_norm = "shardcast::clip_grad_norm";  // optimizer (its all-reduce apart)
inline constexpr const char* all_gather = "shardcast::all_gather";          // communication (issue)
inline constexpr const char* reduce_scatter = "shardcast::reduce_scatter";  // communication (issue)
inline constexpr const char* all_reduce = "shardcast::all_reduce";          // communication (issue)
inline constexpr const char* broadcast = "shardcast::broadcast";            // communication
inline constexpr const char* barrier = "shardcast::barrier";                // communication
inline constexpr const char* collective_wait = "shardcast::collective_wait";  // communication (wait)
inline constexpr const char* fsdp_cast = "shardcast::fsdp_cast";            // copy: shard -> param_dtype send buffer, grad -> reduce_dtype
inline constexpr const char* fsdp_unit_views = "shardcast::fsdp_unit_views";  // copy: the flat buffer's per-weight views (backward: their concatenation)
inline constexpr const char* fsdp_grad_add = "shardcast::fsdp_grad_add";    // copy: reduced gradient into the fp32 shard / accumulator
inline constexpr const char* zero_grad = "shardcast::zero_grad";            // copy: gradient shards zeroed
}  // namespace op_scope

// What a recorded name is to the profile.
enum class OpClass {
  counted,      // its time is `category`'s; nested ops are not counted again
  unclassified, // not in the table: the classified ops nested in it are counted instead
  transparent,  // a container that must never take a category (custom autograd Function
                // nodes, the engine's evaluate_function wrapper, the graph root): nested ops count
};
struct OpClassification {
  OpClass cls = OpClass::unclassified;
  OpCategory category = OpCategory::other;  // valid when cls == counted
};

OpClassification classify_op(std::string_view name);

}  // namespace shardcast::trainer
