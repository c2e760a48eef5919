// plan(): properties of the whole model on the real presets, and hand-computed terms.
#include "planner/evidence/predict.h"
#include "planner/model/plan.h"

#include <gtest/gtest.h>

#include "planner/model/memory_model.h"
#include "shared/errors.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::component;
using test::make_config;


double state(const Prediction& p) {
  return component(p, "sharded_parameters") + component(p, "sharded_gradients") +
         component(p, "optimizer_states");
}

TEST(Plan, StateMemoryIsSixteenBytesPerParameterOverShards) {
  const auto c = make_config("llama2-7b", "A100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 1, 4096);
  const Prediction p = plan(c, load_hardware("A100-80GB-SXM"));
  EXPECT_DOUBLE_EQ(state(p), 16.0 * double(c.model.total_params()) / 8);
}

TEST(Plan, FullShardStateFallsAsOneOverN) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const auto c8 = make_config("llama2-13b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 4096);
  for (int n : {16, 64, 256, 1024}) {
    const auto cn = make_config("llama2-13b", "H100-80GB-SXM", n, ShardingStrategy::full_shard, AcMode::full, 1, 4096);
    EXPECT_NEAR(state(plan(cn, hw)) * n, state(plan(c8, hw)) * 8, 1e-3 * state(plan(c8, hw)) * 8);
  }
}

TEST(Plan, FullCheckpointingNeverRaisesActivationMemory) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  for (const char* model : {"llama2-7b", "llama3-8b", "mpt-7b", "tiny-2l"}) {
    for (int mb : {1, 2, 4}) {
      for (int s : {512, 2048, 8192}) {
        auto none = make_config(model, "A100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::none, mb, s);
        auto full = none;
        full.activation_checkpointing.mode = AcMode::full;
        const Prediction pn = plan(none, hw), pf = plan(full, hw);
        EXPECT_LE(pf.mem_peak_bytes, pn.mem_peak_bytes) << model << " mb " << mb << " s " << s;
        // Recompute never makes a step faster; when communication-bound it hides under the
        // all-gathers and both step times are the comm lane's, equal up to rounding.
        EXPECT_GE(pf.step_time_s, pn.step_time_s * (1 - 1e-12)) << "recompute costs time";
      }
    }
  }
}

TEST(Plan, ShardGradOpNeverUsesLessMemoryThanFullShard) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (const char* model : {"llama2-7b", "llama2-70b", "mpt-30b"}) {
    for (int gpus : {8, 64, 512}) {
      auto fs = make_config(model, "H100-80GB-SXM", gpus, ShardingStrategy::full_shard, AcMode::full, 1, 2048);
      auto sgo = fs;
      sgo.parallelism.sharding_strategy = ShardingStrategy::shard_grad_op;
      EXPECT_GE(plan(sgo, hw).mem_peak_bytes, plan(fs, hw).mem_peak_bytes) << model << " " << gpus;
    }
  }
}

TEST(Plan, MoreBandwidthNeverSlowsAStep) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  for (auto strategy : {ShardingStrategy::full_shard, ShardingStrategy::hybrid_shard,
                        ShardingStrategy::shard_grad_op, ShardingStrategy::no_shard}) {
    auto c = make_config("llama2-7b", "A100-80GB-SXM", 128, strategy, AcMode::none, 2, 4096);
    double prev = 1e30;
    for (double gbps : {100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0, 12800.0}) {
      c.cluster.inter_node_gbps = gbps;
      const double t = plan(c, hw).step_time_s;
      EXPECT_LE(t, prev * (1 + 1e-12)) << to_string(strategy) << " at " << gbps;
      prev = t;
    }
  }
}

TEST(Plan, ThroughputAndMfuFollowFromStepTime) {
  const auto c = make_config("llama2-7b", "A100-80GB-SXM", 128, ShardingStrategy::hybrid_shard, AcMode::none, 2, 4096, 3);
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  const Prediction p = plan(c, hw);
  EXPECT_NEAR(p.tokens_per_s_per_gpu, 2.0 * 4096 * 3 / p.step_time_s, 1e-9 * p.tokens_per_s_per_gpu);
  EXPECT_NEAR(p.mfu, p.tokens_per_s_per_gpu * c.model.flops_per_token(4096) / 312e12, 1e-9);
  EXPECT_DOUBLE_EQ(p.hfu, p.mfu);  // no recompute
  EXPECT_GT(p.exposed_comm_s, 0.0);
  EXPECT_LE(p.exposed_comm_s, p.step_time_s);
  // The band is evidence about the model, applied after it (evidence/predict.h): it says what it comes from.
  EXPECT_TRUE(p.error_band_note.empty());
  EXPECT_NE(predict(c, hw).error_band_note.find("runs"), std::string::npos);
}

TEST(Plan, HfuCountsRecompute) {
  const auto c = make_config("llama2-7b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 2, 4096);
  const Prediction p = plan(c, load_hardware("H100-80GB-SXM"));
  EXPECT_NEAR(p.hfu / p.mfu, c.model.hardware_flops_per_token(4096, 1.0) / c.model.flops_per_token(4096), 1e-9);
}

TEST(Plan, SeventyBOnEightUnshardedDoesNotFit) {
  const auto c = make_config("llama2-70b", "A100-80GB-SXM", 8, ShardingStrategy::no_shard, AcMode::full, 1, 4096);
  const Prediction p = plan(c, load_hardware("A100-80GB-SXM"));
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.overflow_component, "optimizer_states");
}

TEST(Plan, TimelineOnlyWhenAsked) {
  const auto c = make_config("tiny-2l", "H100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::none, 1, 256);
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  EXPECT_TRUE(plan(c, hw).timeline.empty());
  PlanOptions opt;
  opt.timeline = true;
  const Prediction p = plan(c, hw, opt);
  ASSERT_FALSE(p.timeline.empty());
  double end = 0;
  for (const auto& e : p.timeline) end = std::max(end, e.start_s + e.duration_s);
  EXPECT_NEAR(end + hw.efficiency.at("step_overhead_s"), p.step_time_s, 1e-9);
}

TEST(Plan, MissingEfficiencyKeyIsAConfigError) {
  const auto c = make_config("tiny-2l", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 1, 256);
  HardwareSpec hw = load_hardware("H100-80GB-SXM");
  hw.efficiency.erase("matmul_eff");
  EXPECT_THROW(plan(c, hw), ConfigError);
}

TEST(Plan, CpuPresetComputesInFp32) {
  auto c = make_config("tiny-2l", "cpu", 2, ShardingStrategy::full_shard, AcMode::none, 2, 128);
  c.precision.param_dtype = "fp32";
  c.precision.reduce_dtype = "fp32";
  const Prediction p = plan(c, load_hardware("cpu"));
  EXPECT_GT(p.tokens_per_s_per_gpu, 0.0);
  c.precision.param_dtype = "bf16";  // the CPU profile has no bf16 peak
  EXPECT_THROW(plan(c, load_hardware("cpu")), ConfigError);
}

}  // namespace
}  // namespace shardcast::planner

namespace shardcast::planner {
namespace {

// Several nodes on a profile without an inter-node network is a config error naming the key,
// never a hang or an infinite step time.
TEST(Plan, MultiNodeWithoutNetworkIsAConfigError) {
  auto c = test::make_config("tiny-2l", "cpu", 4, ShardingStrategy::full_shard, AcMode::none, 1, 128);
  c.precision.param_dtype = c.precision.reduce_dtype = "fp32";  // the cpu profile has no bf16
  c.cluster.nodes = 2;
  c.cluster.gpus_per_node = 2;
  try {
    plan(c, load_hardware("cpu"));
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "node.inter_node_gbps");
  }
  c.cluster.inter_node_gbps = 10;  // with a network it plans
  EXPECT_GT(plan(c, load_hardware("cpu")).step_time_s, 0);
}

}  // namespace
}  // namespace shardcast::planner

namespace shardcast::planner {
namespace {

// Runtime term host_time = "hidden": the plan is the one of a hardware profile whose host-time
// keys are zero (two ways of removing the same terms; equal to the last bit).
TEST(Plan, HiddenHostTimeIsTheFitWithoutHostTime) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  HardwareSpec no_host = hw;
  no_host.efficiency["unit_overhead_s"] = 0;
  no_host.efficiency["step_overhead_s"] = 0;
  const auto c = make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 2, 4096);
  PlanOptions hidden;
  hidden.host_time_hidden = true;
  const Prediction a = plan(c, hw, hidden), b = plan(c, no_host, PlanOptions{}), fitted = plan(c, hw, PlanOptions{});
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_LT(a.step_time_s, fitted.step_time_s);  // the preset's fitted host time is > 0
}

// A world of one with a reduce_dtype cast: the reduction is the cast (read param_dtype, write
// reduce_dtype) and the copy into the output (read and write reduce_dtype), 2 + 4 + 4 + 4 = 14
// bytes per parameter over HBM, where the optimizer moves 4 bytes per access it makes
// (optimizer_step.h; docs/cost-model.md §2.2, §5.4): the comm lane's time is 14/(4·accesses) of
// the optimizer's, whatever the model and GPU.
TEST(Plan, OneRankReductionIsADeviceCopy) {
  for (const char* gpu : {"H100-80GB-SXM", "H200-141GB-SXM"}) {
    const HardwareSpec hw = load_hardware(gpu);
    auto c = make_config("llama3.2-1b", gpu, 1, ShardingStrategy::full_shard, AcMode::none, 2, 2048);
    c.precision.param_dtype = "bf16";
    c.precision.reduce_dtype = "fp32";
    const Prediction p = plan(c, hw);
    ASSERT_GT(p.optimizer_s, 0) << gpu;
    const PlanOptions o;
    EXPECT_NEAR(p.comm_s / p.optimizer_s, 14.0 / (4.0 * optimizer_accesses(o.adamw_update, o.grad_clip)), 1e-9) << gpu;
    // Same dtypes, no copy buffer: nothing to reduce on one rank.
    c.precision.reduce_dtype = "bf16";
    EXPECT_EQ(plan(c, hw).comm_s, 0) << gpu;
  }
  // shardcast-train's CPU path takes a group of one as the identity, buffers or not.
  auto c = make_config("tiny-2l", "cpu", 1, ShardingStrategy::full_shard, AcMode::none, 2, 128);
  c.precision.param_dtype = "fp32";
  c.precision.reduce_dtype = "fp32";
  PlanOptions o;
  o.reduce_copies_gradient = true;
  o.reduce_output_buffer = true;
  EXPECT_EQ(plan(c, load_hardware("cpu"), o).comm_s, 0);
}

// Runtime term adamw_state = "with_model" (shardcast-train): no optimizer temporaries (the
// allocated peak can only fall), and the moments are there from the start (the same static state
// either way).
TEST(Plan, FusedAdamwHasNoTemporaries) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (AcMode ac : {AcMode::none, AcMode::full}) {
    const auto c = make_config("llama2-7b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, ac, 1, 4096);
    PlanOptions fused;
    fused.adamw_state_at_init = true;
    const Prediction f = plan(c, hw, fused), t = plan(c, hw, PlanOptions{});
    EXPECT_LE(f.mem_peak_bytes, t.mem_peak_bytes);
    EXPECT_EQ(component(f, "optimizer_states"), component(t, "optimizer_states"));
  }
}

}  // namespace
}  // namespace shardcast::planner

namespace shardcast::planner {
namespace {

// A node of another size than the preset's has as many NIC rails as GPUs: with no
// inter_node_gbps, 4-GPU nodes of H200 plan exactly as with half the preset's 8-GPU figure given
// (the same number reaches the comm model two ways: exact), a given figure wins over the rule,
// and a node of the preset's size keeps the preset's figure.
TEST(Plan, NicBandwidthPerNodeFollowsGpusPerNode) {
  const HardwareSpec hw = load_hardware("H200-141GB-SXM");
  ASSERT_EQ(hw.node.gpus_per_node, 8);
  const double preset_gbps = hw.node.inter_node_bandwidth * 8 / 1e9;
  auto c = test::make_config("llama2-13b", "H200-141GB-SXM", 32, ShardingStrategy::full_shard, AcMode::full, 2, 4096);
  c.cluster.gpus_per_node = 4;
  c.cluster.nodes = 8;
  EXPECT_DOUBLE_EQ(effective_inter_node_bandwidth(c, hw), hw.node.inter_node_bandwidth / 2);
  auto given = c;
  given.cluster.inter_node_gbps = preset_gbps / 2;
  EXPECT_EQ(plan(c, hw).step_time_s, plan(given, hw).step_time_s);
  given.cluster.inter_node_gbps = preset_gbps;  // a stated figure is never scaled
  EXPECT_DOUBLE_EQ(effective_inter_node_bandwidth(given, hw), hw.node.inter_node_bandwidth);
  EXPECT_LE(plan(given, hw).step_time_s, plan(c, hw).step_time_s);
  auto eight = test::make_config("llama2-13b", "H200-141GB-SXM", 32, ShardingStrategy::full_shard, AcMode::full, 2, 4096);
  ASSERT_EQ(eight.cluster.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(effective_inter_node_bandwidth(eight, hw), hw.node.inter_node_bandwidth);
}

}  // namespace
}  // namespace shardcast::planner
