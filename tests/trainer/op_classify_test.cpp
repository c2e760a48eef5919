// The torch-free parts of the per-op profile: the op-name table (trainer/profile/op_classify.h)
// — real names that LibTorch 1.13 / 2.x record in a step of the trainer (ATen ops, autograd
// nodes of backward, the trainer's scopes), each with its category, exact — and the summary,
// JSON and plan reader of op_profile_report.h.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/profile/op_classify.h"
#include "trainer/profile/op_profile_report.h"

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
      {"shardcast::swiglu", OpCategory::elementwise},
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

// op_profile.json's summary (trainer/profile/op_profile_report.h) against values computed by
// hand from two synthetic steps: medians (the mean of the two middle values for an even
// count), other = step − counted per step, top ops by mean seconds per step. Exact up to
// double rounding of sums of a few terms (1e-15).
namespace shardcast::trainer {
namespace {

StepOpTimes step(double step_s, double mm, double wait) {
  StepOpTimes st;
  st.step_s = step_s;
  st.seconds[size_t(OpCategory::matmul)] = mm;
  st.count[size_t(OpCategory::matmul)] = 2;
  st.ops[{OpCategory::matmul, "aten::linear"}] = {OpCategory::matmul, 0.25 * mm, 1};
  st.ops[{OpCategory::matmul, "MmBackward0"}] = {OpCategory::matmul, 0.75 * mm, 1};
  st.seconds[size_t(OpCategory::communication)] = wait;
  st.count[size_t(OpCategory::communication)] = 1;
  st.ops[{OpCategory::communication, "shardcast::collective_wait"}] = {OpCategory::communication, wait, 1};
  return st;
}

TEST(OpProfileReport, SummaryJsonAndPlanFile) {
  OpProfile p;
  p.steps = {step(1.0, 0.6, 0.1), step(2.0, 0.8, 0.3)};
  p.planned = std::array<double, kOpCategories>{};
  (*p.planned)[size_t(OpCategory::matmul)] = 0.5;
  const OpProfileSummary s = summarize(p);
  const double eps = 1e-15;
  EXPECT_NEAR(s.step_s, 1.5, eps);
  EXPECT_NEAR(s.seconds[size_t(OpCategory::matmul)], 0.7, eps);
  EXPECT_NEAR(s.seconds[size_t(OpCategory::communication)], 0.2, eps);
  EXPECT_NEAR(s.seconds[size_t(OpCategory::other)], (0.3 + 0.9) / 2, eps);  // 1 − 0.7, 2 − 1.1
  ASSERT_EQ(s.top_ops[size_t(OpCategory::matmul)].size(), 2u);
  EXPECT_EQ(s.top_ops[size_t(OpCategory::matmul)][0].first, "MmBackward0");
  EXPECT_NEAR(s.top_ops[size_t(OpCategory::matmul)][0].second, 0.75 * 0.7, eps);
  const nlohmann::json j = op_profile_json(p);
  EXPECT_NEAR(j["categories"]["matmul"]["measured_over_planned"].get<double>(), 0.7 / 0.5, eps);
  EXPECT_FALSE(j["categories"]["norm"].contains("measured_over_planned"));  // planned 0: no ratio
  EXPECT_EQ(j["categories"].size(), size_t(kOpCategories));
  EXPECT_NE(format_op_profile(p).find("matmul"), std::string::npos);

  // The plan file: time.ops_s of every category, or an error naming the file and the key.
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = dir + name;
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    return path;
  };
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& c : op_categories()) ops[std::string(c.name)] = 0.001 * (int(c.category) + 1);
  const auto good = read_planned_ops(write("good_plan.json", nlohmann::json{{"time", {{"ops_s", ops}}}}.dump()));
  EXPECT_DOUBLE_EQ(good[size_t(OpCategory::attention)], 0.002);
  ops.erase("copy");
  try {
    read_planned_ops(write("short_plan.json", nlohmann::json{{"time", {{"ops_s", ops}}}}.dump()));
    ADD_FAILURE() << "no error for a plan without time.ops_s.copy";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("short_plan.json: time.ops_s.copy is missing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardcast::trainer
