// Attention shapes other than a Llama's (model.head_dim, model.qk_norm: Qwen3): a head width
// equal to d_model / n_heads plans exactly as the derived one; a wider one is planned with its own
// weights and attention work; the trainer and every emitter refuse what they cannot build.
#include <gtest/gtest.h>

#include <string>

#include "planner/emit/emit.h"
#include "planner/emit/emit_ecosystem.h"
#include "planner/evidence/import/torchtitan_config.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/trainer_checks.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::component;
using test::make_config;

Prediction predict_config(const TrainConfig& c) {
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  return plan(c, hw, resolve_plan_options(c, hw));
}

// Before vs after the key: the same model written two ways. Tolerance 0 (bit-identical): the
// query width q = n_heads · head_dim equals d_model here, so every term computes the same
// products.
TEST(ModelShape, HeadDimEqualToTheDerivedOnePlansTheSame) {
  for (int tp : {1, 2}) {
    TrainConfig a = make_config("llama3-8b", "H100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::none, 1, 8192);
    a.runtime = "torchtitan";
    a.parallelism.tp = tp;
    TrainConfig b = a;
    b.model.explicit_head_dim = 128;
    const Prediction pa = predict_config(a), pb = predict_config(b);
    EXPECT_EQ(pa.step_time_s, pb.step_time_s) << "tp " << tp;
    EXPECT_EQ(pa.tokens_per_s_per_gpu, pb.tokens_per_s_per_gpu) << "tp " << tp;
    EXPECT_EQ(pa.mem_peak_bytes, pb.mem_peak_bytes) << "tp " << tp;
    EXPECT_EQ(pa.mem_reserved_bytes, pb.mem_reserved_bytes) << "tp " << tp;
  }
}

// Qwen3-32B against the same dimensions with d_model / n_heads = 80-wide heads and no q/k norms
// (what the planner made of these rows before model.head_dim): its parameters and sharded state
// grow by exactly the parameter ratio (the same per-parameter bytes over the same ranks), and
// its step takes longer.
TEST(ModelShape, Qwen3IsPlannedWithItsOwnWeights) {
  TrainConfig q = make_config("qwen3-32b", "H100-80GB-SXM", 32, ShardingStrategy::full_shard, AcMode::full, 2, 4096);
  q.runtime = "torchtitan";
  TrainConfig narrow = q;
  narrow.model.explicit_head_dim = 0;
  narrow.model.qk_norm = false;
  const double ratio = double(q.model.total_params()) / double(narrow.model.total_params());
  EXPECT_NEAR(ratio, 32.76 / 30.50, 0.01);  // 2.26 B more (64 layers x 35.4 M)
  const Prediction pq = predict_config(q), pn = predict_config(narrow);
  EXPECT_NEAR(component(pq, "sharded_parameters") / component(pn, "sharded_parameters"), ratio, 1e-3);
  EXPECT_GT(pq.step_time_s, pn.step_time_s * 1.04);
  EXPECT_GT(pq.mem_peak_bytes, pn.mem_peak_bytes);
}

TEST(ModelShape, TheTrainerRefusesBothKeysByName) {
  // Qwen3-32B's heads (128) are not d_model / n_heads = 80; Qwen3-8B's are (4096 / 32).
  TrainConfig c = make_config("qwen3-32b", "cpu", 1, ShardingStrategy::full_shard, AcMode::none, 1, 128);
  bool head = false, norm = false;
  for (const auto& r : trainer_refusals(c, /*nccl_compiled=*/false)) {
    head = head || r.key == "model.head_dim";
    norm = norm || r.key == "model.qk_norm";
  }
  EXPECT_TRUE(head);
  EXPECT_TRUE(norm);
  c.model = load_model("qwen3-8b");  // head_dim 128 = d_model / n_heads: refused for its norms only
  for (const auto& r : trainer_refusals(c, false)) EXPECT_NE(r.key, "model.head_dim");
}

// Every emitter builds a Llama but torchtitan v0.2's files, which write its qwen3 model: a Qwen3
// shape is written there (name "qwen3", its flavor) and read back by import as the same preset;
// every other emitter refuses it by key, never writing it as a Llama.
TEST(ModelShape, OnlyTorchtitanV02WritesAQwen3Shape) {
  TrainConfig c = make_config("qwen3-32b", "H100-80GB-SXM", 32, ShardingStrategy::full_shard, AcMode::full, 1, 4096);
  c.runtime = "torchtitan";
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (TorchtitanVersion tv : {TorchtitanVersion::v0_2, TorchtitanVersion::current}) {
    const std::vector<EmitTarget> targets = emit_targets(c, hw, tv);
    ASSERT_FALSE(targets.empty());
    for (const EmitTarget& t : targets) {
      const std::string runtime_why = runtime_refusal(runtime_preset(t.runtime), t.ran, hw);
      if (!runtime_why.empty()) {
        EXPECT_EQ(t.refusal, runtime_why);  // refused first for its runtime
      } else if (t.runtime == "torchtitan-2025-10" && tv == TorchtitanVersion::v0_2) {
        EXPECT_EQ(t.refusal, "") << t.runtime;
      } else if (runtime_preset(t.runtime).framework == "torchtitan" && tv == TorchtitanVersion::current) {
        EXPECT_NE(t.refusal.find("--torchtitan-version 0.2"), std::string::npos) << t.runtime << ": " << t.refusal;
      } else if (runtime_preset(t.runtime).framework != "torchtitan") {
        EXPECT_NE(t.refusal.find("model.head_dim = 128"), std::string::npos) << t.runtime << ": " << t.refusal;
      }
    }
  }
  const std::string toml = render_torchtitan_toml(c);
  EXPECT_NE(toml.find("name = \"qwen3\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("flavor = \"32B\""), std::string::npos) << toml;
  EXPECT_EQ(parse_torchtitan_job_toml(toml, "emitted.toml").model_preset, "qwen3-32b");
  // qk_norm on Llama dimensions: no qwen3 flavor has them, and no emitter writes it as llama3.
  c.model = load_model("llama3-8b");
  c.model.qk_norm = true;
  EXPECT_EQ(torchtitan_flavor(c.model, TorchtitanVersion::v0_2), "");
  for (const EmitTarget& t : emit_targets(c, hw, TorchtitanVersion::v0_2))
    if (runtime_preset(t.runtime).framework != "torchtitan" && runtime_refusal(runtime_preset(t.runtime), t.ran, hw).empty()) {
      EXPECT_NE(t.refusal.find("model.qk_norm = true"), std::string::npos) << t.runtime << ": " << t.refusal;
    }
}

}  // namespace
}  // namespace shardcast::planner
