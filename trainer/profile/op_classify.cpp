// The op-name table. See op_classify.h.
#include "trainer/profile/op_classify.h"

#include <array>

namespace shardcast::trainer {

namespace {

struct Rule {
  std::string_view pattern;  // exact name, or a prefix when it ends in '*'
  OpCategory category;
};

using C = OpCategory;

// ATen op names (LibTorch 1.13 and 2.x), autograd node names (torch/csrc/autograd/generated,
// "<Op>Backward0"), and the trainer's scopes. Order does not matter: names are disjoint.
constexpr std::array kRules{
    // matmul
    Rule{"aten::mm", C::matmul}, Rule{"aten::addmm", C::matmul}, Rule{"aten::linear", C::matmul},
    Rule{"aten::matmul", C::matmul}, Rule{"aten::bmm", C::matmul}, Rule{"aten::baddbmm", C::matmul},
    Rule{"aten::addbmm", C::matmul}, Rule{"aten::_scaled_mm", C::matmul}, Rule{"aten::_addmm_activation", C::matmul},
    Rule{"MmBackward0", C::matmul}, Rule{"AddmmBackward0", C::matmul}, Rule{"BmmBackward0", C::matmul},
    Rule{"BaddbmmBackward0", C::matmul}, Rule{"MatmulBackward0", C::matmul},
    // attention
    Rule{op_scope::attention, C::attention}, Rule{"aten::scaled_dot_product_attention", C::attention},
    Rule{"aten::_scaled_dot_product_flash_attention*", C::attention},
    Rule{"aten::_scaled_dot_product_efficient_attention*", C::attention},
    Rule{"aten::_scaled_dot_product_cudnn_attention*", C::attention},
    Rule{"aten::_efficient_attention*", C::attention}, Rule{"aten::_flash_attention*", C::attention},
    Rule{"ScaledDotProductFlashAttentionBackward*", C::attention},
    Rule{"ScaledDotProductEfficientAttentionBackward*", C::attention},
    Rule{"ScaledDotProductCudnnAttentionBackward*", C::attention},
    Rule{"aten::softmax", C::attention}, Rule{"aten::_softmax", C::attention}, Rule{"SoftmaxBackward0", C::attention},
    // norm
    Rule{op_scope::rms_norm, C::norm}, Rule{"aten::rms_norm", C::norm}, Rule{"aten::_fused_rms_norm*", C::norm},
    Rule{"aten::layer_norm", C::norm}, Rule{"aten::native_layer_norm", C::norm},
    Rule{"NativeLayerNormBackward0", C::norm}, Rule{"FusedRmsNormBackward*", C::norm},
    // elementwise: activations, residual adds, RoPE, casts and layout ops inside the model
    Rule{op_scope::rope, C::elementwise}, Rule{op_scope::swiglu, C::elementwise},
    Rule{"aten::add", C::elementwise}, Rule{"aten::add_", C::elementwise}, Rule{"aten::sub", C::elementwise},
    Rule{"aten::mul", C::elementwise}, Rule{"aten::div", C::elementwise}, Rule{"aten::neg", C::elementwise},
    Rule{"aten::silu", C::elementwise}, Rule{"aten::gelu", C::elementwise}, Rule{"aten::cat", C::elementwise},
    Rule{"aten::to", C::elementwise}, Rule{"aten::_to_copy", C::elementwise}, Rule{"aten::copy_", C::elementwise},
    Rule{"aten::clone", C::elementwise}, Rule{"aten::contiguous", C::elementwise},
    Rule{"aten::reshape", C::elementwise}, Rule{"aten::repeat_interleave", C::elementwise},
    Rule{"aten::view", C::elementwise}, Rule{"aten::transpose", C::elementwise},
    Rule{"aten::narrow", C::elementwise}, Rule{"aten::slice", C::elementwise},
    Rule{"aten::_reshape_alias", C::elementwise}, Rule{"aten::_unsafe_view", C::elementwise},
    Rule{"AddBackward0", C::elementwise}, Rule{"SubBackward0", C::elementwise}, Rule{"MulBackward0", C::elementwise},
    Rule{"DivBackward0", C::elementwise}, Rule{"NegBackward0", C::elementwise}, Rule{"SiluBackward0", C::elementwise},
    Rule{"GeluBackward0", C::elementwise}, Rule{"CatBackward0", C::elementwise},
    Rule{"ToCopyBackward0", C::elementwise}, Rule{"CloneBackward0", C::elementwise},
    Rule{"IndexSelectBackward0", C::elementwise}, Rule{"ViewBackward0", C::elementwise},
    Rule{"TransposeBackward0", C::elementwise}, Rule{"UnsafeViewBackward0", C::elementwise},
    Rule{"ReshapeAliasBackward0", C::elementwise}, Rule{"SliceBackward0", C::elementwise},
    // embedding
    Rule{"aten::embedding", C::embedding}, Rule{"aten::embedding_backward", C::embedding},
    Rule{"aten::embedding_dense_backward", C::embedding}, Rule{"EmbeddingBackward0", C::embedding},
    // loss
    Rule{op_scope::lm_loss, C::loss}, Rule{"aten::cross_entropy_loss", C::loss}, Rule{"aten::log_softmax", C::loss},
    Rule{"aten::_log_softmax", C::loss}, Rule{"aten::nll_loss", C::loss}, Rule{"aten::nll_loss_nd", C::loss},
    Rule{"aten::nll_loss_forward", C::loss}, Rule{"LogSoftmaxBackward0", C::loss}, Rule{"NllLossBackward0", C::loss},
    // optimizer
    Rule{op_scope::adamw, C::optimizer}, Rule{op_scope::clip_grad_norm, C::optimizer},
    Rule{"aten::_fused_adamw_", C::optimizer}, Rule{"aten::_foreach_*", C::optimizer},
    // communication: the trainer's collective scopes, and c10d's own records (2.x) should a
    // collective be reached outside them
    Rule{op_scope::all_gather, C::communication}, Rule{op_scope::reduce_scatter, C::communication},
    Rule{op_scope::all_reduce, C::communication}, Rule{op_scope::broadcast, C::communication},
    Rule{op_scope::barrier, C::communication}, Rule{op_scope::collective_wait, C::communication},
    Rule{"c10d::*", C::communication}, Rule{"nccl:*", C::communication}, Rule{"gloo:*", C::communication},
    // copy: FSDP's buffers
    Rule{op_scope::fsdp_cast, C::copy}, Rule{op_scope::fsdp_unit_views, C::copy},
    Rule{op_scope::fsdp_grad_add, C::copy}, Rule{op_scope::zero_grad, C::copy},
};

constexpr std::array<std::string_view, 3> kTransparentPrefixes{
    "torch::autograd::CppNode<",            // custom autograd Functions (FSDP's GatherFn, CheckpointFn)
    "autograd::engine::evaluate_function",  // the engine's wrapper around a node and its hooks
    "torch::autograd::GraphRoot",
};

bool matches(std::string_view pattern, std::string_view name) {
  if (!pattern.empty() && pattern.back() == '*') {
    pattern.remove_suffix(1);
    return name.substr(0, pattern.size()) == pattern;
  }
  return name == pattern;
}

}  // namespace

OpClassification classify_op(std::string_view name) {
  for (std::string_view p : kTransparentPrefixes)
    if (name.substr(0, p.size()) == p) return {OpClass::transparent, OpCategory::other};
  for (const Rule& r : kRules)
    if (matches(r.pattern, name)) return {OpClass::counted, r.category};
  return {};
}

}  // namespace shardcast::trainer
