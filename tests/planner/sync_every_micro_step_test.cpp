// parallelism.sync_every_micro_step through the runtime profile into the plan: shardcast-train
// follows the key (unset: true), the other runtimes keep their fixed value and refuse a given
// value they cannot run, and the memory of both ways on a 70B plan (FSDP2's per-micro-step
// reduce-scatter against FSDP1 no_sync's unsharded gradient sum).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

#include "planner/model/memory_model.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "shared/errors.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::component;
using test::make_config;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// llama3-70b on 128 H100-80GB (16 nodes of 8), full_shard, bf16 parameters, fp32 reduction,
// full activation checkpointing, micro-batch 1 × 8192 tokens, grad_accum 8 (torchtitan's 70B
// recipe shape with accumulation).
TrainConfig llama70b_ga8() {
  TrainConfig c = make_config("llama3-70b", "H100-80GB-SXM", 128, ShardingStrategy::full_shard, AcMode::full, 1,
                              8192, 8);
  c.precision.param_dtype = "bf16";
  c.precision.reduce_dtype = "fp32";
  return c;
}

Prediction plan_resolved(const TrainConfig& c, const HardwareSpec& hw) {
  return plan(c, hw, resolve_plan_options(c, hw));
}

TEST(SyncEveryMicroStep, ShardcastTrainFollowsTheKeyUnsetIsTrue) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = llama70b_ga8();
  ASSERT_EQ(c.runtime, "shardcast-train");
  EXPECT_TRUE(load_runtime("shardcast-train").terms.follows_config("sync_every_micro_step"));
  EXPECT_TRUE(resolve_plan_options(c, hw).sync_every_micro_step);  // unset: true
  c.parallelism.sync_every_micro_step = false;
  EXPECT_FALSE(resolve_plan_options(c, hw).sync_every_micro_step);
  c.parallelism.sync_every_micro_step = true;
  EXPECT_TRUE(resolve_plan_options(c, hw).sync_every_micro_step);
}

TEST(SyncEveryMicroStep, FixedRuntimesKeepTheirValueAndRefuseAnotherByName) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  struct Fixed {
    const char* runtime;
    bool value;
  };
  for (const Fixed f : {Fixed{"torchtitan", true}, Fixed{"fms-fsdp", true}, Fixed{"llm-foundry", true},
                        Fixed{"accelerate", false}}) {
    TrainConfig c = llama70b_ga8();
    c.runtime = f.runtime;
    if (f.runtime == std::string("accelerate")) c.precision.reduce_dtype = "bf16";  // it reduces in param_dtype
    EXPECT_FALSE(load_runtime(f.runtime).terms.follows_config("sync_every_micro_step")) << f.runtime;
    EXPECT_EQ(resolve_plan_options(c, hw).sync_every_micro_step, f.value) << f.runtime;  // unset: the runtime's
    c.parallelism.sync_every_micro_step = f.value;  // asking for what it does is fine
    EXPECT_EQ(resolve_plan_options(c, hw).sync_every_micro_step, f.value) << f.runtime;
    c.parallelism.sync_every_micro_step = !f.value;  // never silently replaced
    try {
      resolve_plan_options(c, hw);
      ADD_FAILURE() << f.runtime << " accepted sync_every_micro_step = " << !f.value;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("parallelism.sync_every_micro_step"), std::string::npos) << what;
      EXPECT_NE(what.find(f.runtime), std::string::npos) << what;
    }
    EXPECT_NE(runtime_refusal(runtime_preset(f.runtime), c, hw), "") << f.runtime;
  }
}

// The memory difference on the plan the issue names. With sync (FSDP2, torchtitan) each unit's
// unsharded gradient lives from its backward to its reduce-scatter, and the fp32 gradient
// shard is the only gradient state: 4·N/128 bytes. Without sync every unit keeps its
// unsharded gradient sum from the first micro-step to the last one's reduction: the whole
// model's gradient, in shardcast-train's fp32 (FlatUnit::acc) N·4 bytes, on top of everything
// else; FSDP1's no_sync (accelerate) keeps it in param_dtype, N·2 bytes in bf16.
TEST(SyncEveryMicroStep, Llama70bOn128H100WithGradAccum8FitsOnlyWithSync) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig on = llama70b_ga8(), off = llama70b_ga8();
  on.parallelism.sync_every_micro_step = true;
  off.parallelism.sync_every_micro_step = false;
  const Prediction p_on = plan_resolved(on, hw), p_off = plan_resolved(off, hw);
  const int64_t N = on.model.total_params();
  const std::vector<int64_t> units = on.model.fsdp_unit_params();
  ASSERT_EQ(std::accumulate(units.begin(), units.end(), int64_t(0)), N);
  const int64_t largest_unit = *std::max_element(units.begin(), units.end());

  // The gradient state is what the shard accounting says: fp32, N/128 per rank. shardcast-train
  // releases the shards between steps (grads_freed_between_steps): with sync they exist from the
  // first micro-step's reductions, so at the peak (a later micro-step) all of them; without sync
  // they come back at the final micro-step's reductions, after its peak (every unit's fp32 sum
  // held, the head's backward), so none at the peak.
  EXPECT_DOUBLE_EQ(component(p_on, "sharded_gradients"), state_memory(N, 128, 4, 4).gradients);
  EXPECT_DOUBLE_EQ(component(p_on, "sharded_gradients"), 4.0 * double(N) / 128);
  EXPECT_DOUBLE_EQ(component(p_off, "sharded_gradients"), 0.0);

  // Sync: at most a few units' unsharded bf16 gradients are alive at once (the one whose
  // reduce-scatter is in flight and the one being computed).
  const double ug_on = component(p_on, "unsharded_gradients");
  EXPECT_GT(ug_on, 0.0);
  EXPECT_LE(ug_on, 2.0 * 2.0 * double(largest_unit));
  // No sync: every unit's unsharded fp32 sum, N·4 bytes, at the peak.
  const double ug_off = component(p_off, "unsharded_gradients");
  EXPECT_DOUBLE_EQ(ug_off, 4.0 * double(N));
  // accelerate (FSDP1 no_sync, reduces in param_dtype): the same sum in bf16, N·2 bytes.
  TrainConfig acc = llama70b_ga8();
  acc.runtime = "accelerate";
  acc.precision.reduce_dtype = "bf16";
  const Prediction p_acc = plan_resolved(acc, hw);
  EXPECT_DOUBLE_EQ(component(p_acc, "unsharded_gradients"), 2.0 * double(N));
  EXPECT_FALSE(p_acc.fits);

  EXPECT_TRUE(p_on.fits) << p_on.mem_device_total_bytes / kGiB << " GiB";
  EXPECT_FALSE(p_off.fits) << p_off.mem_device_total_bytes / kGiB << " GiB";
  // The peaks differ by the unsharded sum less what the synced plan keeps of it.
  EXPECT_NEAR(p_off.mem_peak_bytes - p_on.mem_peak_bytes, ug_off - ug_on, 0.05 * ug_off);
  std::printf("[sync_every_micro_step] llama3-70b, 128 H100, full_shard, GA 8: N %.4g; sharded gradients "
              "%.2f GiB; unsharded gradients %.2f GiB (true) vs %.2f GiB (false); allocated peak %.2f vs %.2f "
              "GiB; device total %.2f vs %.2f GiB of %.2f; accelerate (bf16 sum) unsharded gradients %.2f GiB\n",
              double(N), component(p_on, "sharded_gradients") / kGiB, ug_on / kGiB, ug_off / kGiB,
              p_on.mem_peak_bytes / kGiB, p_off.mem_peak_bytes / kGiB, p_on.mem_device_total_bytes / kGiB,
              p_off.mem_device_total_bytes / kGiB, hw.gpu.hbm_bytes / kGiB,
              component(p_acc, "unsharded_gradients") / kGiB);
}

// Communication: a synced micro-step reduce-scatters every unit, so grad_accum 8 reduces
// 8 times as much gradient as the unsynced way (one reduction per step); the step is never
// faster with sync. no_shard follows the runtime as well (an all-reduce every micro-step).
TEST(SyncEveryMicroStep, SyncedAccumulationNeverShortensTheStep) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (auto s : {ShardingStrategy::full_shard, ShardingStrategy::no_shard}) {
    TrainConfig on = make_config("llama3-8b", "H100-80GB-SXM", 16, s, AcMode::full, 1, 4096, 4);
    TrainConfig off = on;
    on.parallelism.sync_every_micro_step = true;
    off.parallelism.sync_every_micro_step = false;
    const Prediction a = plan_resolved(on, hw), b = plan_resolved(off, hw);
    EXPECT_GE(a.step_time_s, b.step_time_s * (1 - 1e-12)) << to_string(s);
    EXPECT_GT(a.comm_s, b.comm_s) << to_string(s);
  }
}

}  // namespace
}  // namespace shardcast::planner
