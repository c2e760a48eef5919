// The op-name table of the per-op profile (trainer/profile/op_classify.h): real names that
// LibTorch 1.13 / 2.x record in a step of the trainer — ATen ops, autograd nodes of backward,
// the trainer's scopes — each with its category. Exact.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "trainer/profile/op_classify.h"

namespace shardcast::trainer {
namespace {

TEST(OpClassify, RealNamesGetTheirCategory) {
  const std::vector<std::pair<std::string, OpCategory>> cases{
      {"aten::linear", OpCategory::matmul},
      {"aten::mm", OpCategory::matmul},
      {"aten::addmm", OpCategory::matmul},
      {"aten::matmul", OpCategory::matmul},
      {"aten::bmm", OpCategory::matmul},
      {"MmBackward0", OpCategory::matmul},
      {"AddmmBackward0", OpCategory::matmul},
      {"aten::scaled_dot_product_attention", OpCategory::attention},
      {"aten::_scaled_dot_product_flash_attention", OpCategory::attention},
      {"aten::_scaled_dot_product_efficient_attention", OpCategory::attention},
      {"aten::_efficient_attention_forward", OpCategory::attention},
      {"aten::_efficient_attention_backward", OpCategory::attention},
      {"ScaledDotProductFlashAttentionBackward0", OpCategory::attention},
      {"ScaledDotProductEfficientAttentionBackward0", OpCategory::attention},
      {"SoftmaxBackward0", OpCategory::attention},
      {"shardcast::attention", OpCategory::attention},
      {"shardcast::rms_norm", OpCategory::norm},
      {"aten::native_layer_norm", OpCategory::norm},
      {"NativeLayerNormBackward0", OpCategory::norm},
      {"shardcast::rope", OpCategory::elementwise},
      {"aten::silu", OpCategory::elementwise},
      {"SiluBackward0", OpCategory::elementwise},
      {"aten::add", OpCategory::elementwise},
      {"AddBackward0", OpCategory::elementwise},
      {"MulBackward0", OpCategory::elementwise},
      {"aten::_to_copy", OpCategory::elementwise},
      {"aten::embedding", OpCategory::embedding},
      {"EmbeddingBackward0", OpCategory::embedding},
      {"shardcast::lm_loss", OpCategory::loss},
      {"aten::cross_entropy_loss", OpCategory::loss},
      {"LogSoftmaxBackward0", OpCategory::loss},
      {"NllLossBackward0", OpCategory::loss},
      {"shardcast::adamw", OpCategory::optimizer},
      {"shardcast::clip_grad_norm", OpCategory::optimizer},
      {"aten::_fused_adamw_", OpCategory::optimizer},
      {"aten::_foreach_mul_", OpCategory::optimizer},
      {"shardcast::all_gather", OpCategory::communication},
      {"shardcast::reduce_scatter", OpCategory::communication},
      {"shardcast::collective_wait", OpCategory::communication},
      {"c10d::allreduce_", OpCategory::communication},
      {"nccl:all_reduce", OpCategory::communication},
      {"shardcast::fsdp_cast", OpCategory::copy},
      {"shardcast::fsdp_unit_views", OpCategory::copy},
      {"shardcast::fsdp_grad_add", OpCategory::copy},
      {"shardcast::zero_grad", OpCategory::copy},
  };
  for (const auto& [name, cat] : cases) {
    const OpClassification k = classify_op(name);
    EXPECT_EQ(k.cls, OpClass::counted) << name;
    EXPECT_EQ(k.category, cat) << name << " -> " << to_string(k.category);
  }
}

TEST(OpClassify, ContainersAreTransparentAndUnknownNamesUnclassified) {
  for (const char* n : {"torch::autograd::CppNode<shardcast::trainer::(anonymous namespace)::GatherFn>",
                        "autograd::engine::evaluate_function: MmBackward0", "torch::autograd::GraphRoot"})
    EXPECT_EQ(classify_op(n).cls, OpClass::transparent) << n;
  // Near misses of table names and ops the table leaves to what is nested in them.
  for (const char* n : {"aten::mm_", "aten::linear_backward", "MmBackward1x", "aten::empty", "aten::item",
                        "aten::zeros", "shardcast::something_else", ""})
    EXPECT_EQ(classify_op(n).cls, OpClass::unclassified) << n;
}

TEST(OpCategory, NamesRoundTrip) {
  for (const auto& c : op_categories()) {
    EXPECT_EQ(parse_op_category(c.name), c.category);
    EXPECT_EQ(to_string(c.category), c.name);
  }
  EXPECT_FALSE(parse_op_category("matmuls").has_value());
}

}  // namespace
}  // namespace shardcast::trainer
