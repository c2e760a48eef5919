// The optimizer step's kernels as each implementation runs them (planner/model/optimizer_step.h), and
// the plan's optimizer lane against that count.
#include "planner/model/optimizer_step.h"

#include <gtest/gtest.h>

#include "planner/model/plan.h"
#include "shared/hardware_spec.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

// Counted by hand from the calls (torch/optim/adamw.py, torch/nn/utils/clip_grad.py):
// fused: read p, g, m, v, write p, m, v = 7; foreach and for-loop: eight passes
// (2 + 3 + 2 + 3 + 2 + 2 + 2 + 4) = 20; clipping: norm 1, scale 2.
TEST(OptimizerStep, AccessesCountedByHand) {
  EXPECT_EQ(optimizer_accesses(AdamwUpdate::fused, GradClip::none), 7);
  EXPECT_EQ(optimizer_accesses(AdamwUpdate::fused, GradClip::norm_in_update), 8);
  EXPECT_EQ(optimizer_accesses(AdamwUpdate::fused, GradClip::norm_and_scale), 10);
  EXPECT_EQ(optimizer_accesses(AdamwUpdate::foreach, GradClip::none), 20);
  EXPECT_EQ(optimizer_accesses(AdamwUpdate::foreach, GradClip::norm_and_scale), 23);
  EXPECT_EQ(optimizer_accesses(AdamwUpdate::for_loop, GradClip::norm_and_scale), 23);
}

// optimizer_accesses sums the tables without building the list: the list's own sum is its
// reference, for every implementation and clipping (exact: integers).
TEST(OptimizerStep, AccessesAreTheListsSum) {
  for (AdamwUpdate u : {AdamwUpdate::fused, AdamwUpdate::foreach, AdamwUpdate::for_loop})
    for (GradClip c : {GradClip::none, GradClip::norm_and_scale, GradClip::norm_in_update}) {
      int n = 0;
      for (const auto& k : optimizer_kernels(u, c)) n += k.reads + k.writes;
      EXPECT_EQ(optimizer_accesses(u, c), n) << to_string(u) << " " << int(c);
    }
}

// Clipping's calls come first and the update's follow; the kernel counts are the lists'.
TEST(OptimizerStep, KernelListsInOrder) {
  const auto k = optimizer_kernels(AdamwUpdate::foreach, GradClip::norm_and_scale);
  ASSERT_EQ(k.size(), 10u);
  EXPECT_NE(std::string(k[0].call).find("_foreach_norm"), std::string::npos);
  EXPECT_NE(std::string(k[1].call).find("_foreach_mul_(grads"), std::string::npos);
  EXPECT_NE(std::string(k.back().call).find("_foreach_addcdiv_"), std::string::npos);
  EXPECT_EQ(optimizer_kernels(AdamwUpdate::fused, GradClip::none).size(), 1u);
  EXPECT_EQ(optimizer_kernels(AdamwUpdate::fused, GradClip::norm_in_update).size(), 2u);
}

TEST(OptimizerStep, ParseRefusesOtherNames) {
  AdamwUpdate u{};
  GradClip c{};
  EXPECT_TRUE(parse_adamw_update("for_loop", u));
  EXPECT_EQ(u, AdamwUpdate::for_loop);
  EXPECT_FALSE(parse_adamw_update("for-loop", u));  // torch's spelling is not the term's
  EXPECT_FALSE(parse_adamw_update("Fused", u));
  EXPECT_TRUE(parse_grad_clip("norm_in_update", c));
  EXPECT_EQ(c, GradClip::norm_in_update);
  EXPECT_FALSE(parse_grad_clip("norm", c));
  // torchtitan's spelling, both ways (emit writes it, import reads it); the term's is not torchtitan's.
  for (AdamwUpdate v : {AdamwUpdate::fused, AdamwUpdate::foreach, AdamwUpdate::for_loop}) {
    AdamwUpdate back{};
    EXPECT_TRUE(parse_torchtitan_implementation(torchtitan_name(v), back)) << torchtitan_name(v);
    EXPECT_EQ(back, v);
  }
  EXPECT_STREQ(torchtitan_name(AdamwUpdate::for_loop), "for-loop");
  EXPECT_FALSE(parse_torchtitan_implementation("for_loop", u));
}

// The plan's optimizer lane is the count times the shard's bytes over one bandwidth: two
// implementations' times are in the ratio of their counts, exactly (the same shard, dtype and
// copy bandwidth; tolerance rounding only).
TEST(OptimizerStep, PlanChargesTheCount) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const auto c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  PlanOptions fused, foreach;
  fused.adamw_update = AdamwUpdate::fused;
  fused.grad_clip = GradClip::norm_in_update;
  foreach.adamw_update = AdamwUpdate::foreach;
  foreach.grad_clip = GradClip::norm_and_scale;
  const Prediction a = plan(c, hw, fused), b = plan(c, hw, foreach);
  ASSERT_GT(a.optimizer_s, 0);
  EXPECT_NEAR(b.optimizer_s / a.optimizer_s, 23.0 / 8.0, 1e-12);
  // Memory does not follow the implementation (plan.cpp: one shard of temporaries for
  // torch.optim either way): the same peak.
  EXPECT_EQ(b.mem_peak_bytes, a.mem_peak_bytes);
}

}  // namespace
}  // namespace shardcast::planner
