// optimizer.state_dtype through the config, the runtime profiles, the plan, emit and import:
// bf16 AdamW moments beside fp32 master weights (torchtitan's optimizer.implementation =
// "fused_opt_states_bf16", 0610235bb) halve the moments' bytes in memory, in a checkpoint and in
// the update's accesses; runtimes that do not run them refuse by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "planner/decide/goodput.h"
#include "planner/emit/emit_ecosystem.h"
#include "planner/evidence/import/torchtitan_config.h"
#include "planner/model/memory_model.h"
#include "planner/model/optimizer_step.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "shared/trainer_checks.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::component;
using test::make_config;

// llama3-8b on 8 H100-80GB under the current torchtitan: full_shard, op-level SAC, 2 x 8192.
TrainConfig titan_8b(const std::string& state_dtype) {
  TrainConfig c = make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::selective_op, 2, 8192);
  c.runtime = "torchtitan";
  c.precision.param_dtype = "bf16";
  c.optimizer.state_dtype = state_dtype;
  return c;
}

TEST(OptimizerStateDtype, ConfigAcceptsMasterAndBf16OverFp32Masters) {
  TrainConfig c = titan_8b("bf16");
  EXPECT_TRUE(validate(c).empty());
  c.optimizer.state_dtype = "fp16";
  auto e = validate(c);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("optimizer.state_dtype"), std::string::npos) << e[0];
  EXPECT_NE(e[0].find("allowed: master | bf16"), std::string::npos) << e[0];
  // Over pure bf16 masters the moments are bf16 already: "bf16" is refused, "master" said instead.
  c.optimizer.state_dtype = "bf16";
  c.precision.master_dtype = "bf16";
  e = validate(c);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("set \"master\""), std::string::npos) << e[0];
}

TEST(OptimizerStateDtype, RoundTripsThroughRunToml) {
  TrainConfig c = titan_8b("bf16");
  const std::string text = write_train_config(c);
  EXPECT_NE(text.find("state_dtype = \"bf16\""), std::string::npos) << text;
  EXPECT_EQ(parse_train_config(text, "run.toml").optimizer.state_dtype, "bf16");
  // Absent: the stated default, the master dtype's moments; a dtype outside the list: the key named.
  auto without = [&](const std::string& replacement) {
    std::string s = text;
    const size_t at = s.find("state_dtype = \"bf16\"");
    return s.replace(at, std::string("state_dtype = \"bf16\"").size(), replacement);
  };
  EXPECT_EQ(parse_train_config(without(""), "run.toml").optimizer.state_dtype, "master");
  try {
    parse_train_config(without("state_dtype = \"fp8\""), "run.toml");
    FAIL() << "fp8 moments accepted";
  } catch (const ConfigErrors& err) {  // validate()'s list, the key named
    EXPECT_NE(std::string(err.what()).find("optimizer.state_dtype"), std::string::npos) << err.what();
  }
}

TEST(OptimizerStateDtype, Bf16MomentsHalveTheMomentsAndTheirTraffic) {
  // Two ways to the same state: the plan's components and the closed form P/Ns × (4 + 4 + 2·2)
  // against P/Ns × (4 + 4 + 2·4). Exact: the same products.
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const TrainConfig fp = titan_8b("master"), bf = titan_8b("bf16");
  const PlanOptions o = resolve_plan_options(fp, hw);
  const Prediction a = plan(fp, hw, o), b = plan(bf, hw, o);
  const double P = double(bf.model.total_params()) / 8;
  EXPECT_DOUBLE_EQ(component(a, "optimizer_states"), 8 * P);
  EXPECT_DOUBLE_EQ(component(b, "optimizer_states"), 4 * P);
  EXPECT_DOUBLE_EQ(component(b, "sharded_parameters"), component(a, "sharded_parameters"));
  EXPECT_DOUBLE_EQ(state_memory(bf.model.total_params(), 8, 4, 2).total(), 12 * P);
  // The step: clip_grad_norm_ (norm: g read; scale: g read and written) then the fused update
  // (p, g, m, v read; p, m, v written): 6 accesses at 4 bytes and 4 at the moments' bytes, 32 B
  // against 40 B per element. The current torchtitan has no measured kernel table (torch
  // "unstated"), so both are timed by the accesses: the ratio is exact but for rounding.
  EXPECT_NEAR(b.optimizer_s / a.optimizer_s, 32.0 / 40.0, 1e-12);
  EXPECT_LT(b.mem_peak_bytes, a.mem_peak_bytes);
  EXPECT_LT(b.mem_reserved_bytes, a.mem_reserved_bytes);
  // A checkpoint holds the parameters and the moments: 4 + 2·2 against 4 + 2·4 bytes.
  EXPECT_DOUBLE_EQ(checkpoint_size(bf).per_rank_bytes, (8.0 / 12.0) * checkpoint_size(fp).per_rank_bytes);
}

TEST(OptimizerStateDtype, BytesPerElementAreTheKernelListsAccesses) {
  // With equal bytes the weighted sum is the plain count times the bytes (the reference);
  // the moments are at most all of the accesses.
  for (AdamwUpdate u : {AdamwUpdate::fused, AdamwUpdate::foreach, AdamwUpdate::for_loop})
    for (GradClip g : {GradClip::none, GradClip::norm_and_scale, GradClip::norm_in_update}) {
      EXPECT_DOUBLE_EQ(optimizer_bytes_per_element(u, g, 4, 4), 4.0 * optimizer_accesses(u, g));
      EXPECT_DOUBLE_EQ(optimizer_bytes_per_element(u, g, 2, 2), 2.0 * optimizer_accesses(u, g));
      int moments = 0;
      for (const OptimizerKernel& k : optimizer_kernels(u, g)) {
        EXPECT_LE(k.moment_accesses, k.reads + k.writes) << k.call;
        moments += k.moment_accesses;
      }
      EXPECT_DOUBLE_EQ(optimizer_bytes_per_element(u, g, 4, 2), 4.0 * optimizer_accesses(u, g) - 2.0 * moments);
    }
  // The fused kernel: m and v each read and written once.
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element(AdamwUpdate::fused, GradClip::none, 4, 2), 3 * 4 + 4 * 2);
}

TEST(OptimizerStateDtype, RuntimesThatDoNotRunBf16MomentsRefuseByName) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (const std::string& name : list_runtime_presets()) {
    SCOPED_TRACE(name);
    const RuntimeSpec rt = runtime_preset(name);
    const RuntimeTerms& t = rt.terms_for(true);
    // Every runtime runs the moments torch.optim makes: the default config is never refused for them.
    EXPECT_NE(std::find(t.optimizer_state_dtypes.begin(), t.optimizer_state_dtypes.end(), "master"),
              t.optimizer_state_dtypes.end());
    TrainConfig c = titan_8b("bf16");
    c.runtime = name;
    const bool runs = std::find(t.optimizer_state_dtypes.begin(), t.optimizer_state_dtypes.end(), "bf16") !=
                      t.optimizer_state_dtypes.end();
    const std::string why = optimizer_state_dtype_refusal(rt, t, c);
    EXPECT_EQ(why.empty(), runs) << why;
    if (!runs) {
      EXPECT_NE(why.find("optimizer.state_dtype = \"bf16\""), std::string::npos) << why;
    }
  }
  // The generations from 0610235bb (2026-04-15) on: torchtitan-2026-06 and torchtitan run it;
  // torchtitan-2025-10 began before it, and the others never had it.
  for (const char* name : {"torchtitan", "torchtitan-2026-06"})
    EXPECT_EQ(optimizer_state_dtype_refusal(runtime_preset(name), runtime_preset(name).terms, titan_8b("bf16")), "")
        << name;
  for (const char* name : {"torchtitan-2025-10", "shardcast-train", "deepspeed", "fms-fsdp"}) {
    TrainConfig c = titan_8b("bf16");
    c.runtime = name;
    EXPECT_NE(runtime_refusal(runtime_preset(name), c, hw).find("optimizer.state_dtype"), std::string::npos) << name;
  }
}

TEST(OptimizerStateDtype, TheTrainerRefusesBf16MomentsByName) {
  TrainConfig c = make_config("llama3.2-1b", "cpu", 2, ShardingStrategy::full_shard, AcMode::none, 1, 64);
  c.precision.param_dtype = "fp32";
  c.precision.reduce_dtype = "fp32";
  c.runtime = "shardcast-train";
  for (const TrainerRefusal& r : trainer_refusals(c, false)) EXPECT_NE(r.key, "optimizer.state_dtype") << r.detail;
  c.optimizer.state_dtype = "bf16";
  bool named = false;
  for (const TrainerRefusal& r : trainer_refusals(c, false)) named = named || r.key == "optimizer.state_dtype";
  EXPECT_TRUE(named);
}

TEST(OptimizerStateDtype, EmitWritesTheImplementationImportReadsIt) {
  // The current recipe sets torchtitan's own name for it (torchtitan_recipes/tests/features.py
  // llama3_debugmodel_optimizer_bf16_states writes the same attribute) only when planned.
  TrainConfig bf = titan_8b("bf16"), fp = titan_8b("master");
  validate_or_throw(bf);
  EXPECT_NE(render_torchtitan_recipe(bf).find("config.optimizer.implementation = \"fused_opt_states_bf16\""),
            std::string::npos);
  EXPECT_EQ(render_torchtitan_recipe(fp).find("fused_opt_states_bf16"), std::string::npos);
  // A job TOML naming it is refused: torchtitan's TOML configs (v0.2.x) never held the value
  // (it came after they were removed); the error says how to import such a run.
  try {
    parse_torchtitan_job_toml(
        "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[optimizer]\nimplementation = \"fused_opt_states_bf16\"\n",
        "job.toml");
    FAIL() << "fused_opt_states_bf16 accepted in a TOML";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("--state-dtype bf16"), std::string::npos) << err.what();
  }
  const TorchtitanJob j = parse_torchtitan_job_toml(
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[optimizer]\nimplementation = \"fused\"\n", "job.toml");
  ASSERT_TRUE(j.adamw_update.has_value());
  EXPECT_EQ(*j.adamw_update, AdamwUpdate::fused);
}

// bf16 moments run only in the fused update: a runtime listing them beside another update is
// refused when its profile is read, and a published row whose adamw_update column names another
// update is skipped naming both.
TEST(OptimizerStateDtype, Bf16MomentsNeedTheFusedUpdate) {
  std::string text = read_text(config_dir() / "runtimes" / "torchtitan.toml");
  const size_t at = text.find("adamw_update = \"fused\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("adamw_update = \"fused\"").size(), "adamw_update = \"foreach\"");
  try {
    parse_runtime_toml(text, "tt.toml");
    FAIL() << "bf16 moments beside foreach accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("terms.optimizer_state_dtypes"), std::string::npos) << err.what();
  }
  TrainConfig c = titan_8b("bf16");
  EXPECT_EQ(bf16_moments_update_refusal("torchtitan", c, "fused"), "");
  EXPECT_NE(bf16_moments_update_refusal("torchtitan", c, "foreach").find("only in the fused update"), std::string::npos);
  c.optimizer.state_dtype = "master";
  EXPECT_EQ(bf16_moments_update_refusal("torchtitan", c, "foreach"), "");
}

}  // namespace
}  // namespace shardcast::planner
