// The precision a config leaves unset is the runtime's own (planner/model/runtime.h
// take_runtime_precision): every shipped runtime plans its own defaults without a refusal,
// a given key is never replaced, and search starts from the same values plan takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "planner/decide/search.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::make_config;

TrainConfig llama2_7b_on_h100(const std::string& runtime) {
  TrainConfig c = make_config("llama2-7b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 4096);
  c.runtime = runtime;
  return c;
}

TEST(RuntimePrecision, EveryRuntimeRunsItsOwnDefaults) {
  // Every shipped profile (configs/runtimes/, not a list kept by hand): with no precision key
  // given, the config is one the runtime runs, and its keys are the profile's defaults.
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  int n = 0;
  for (const std::string& name : list_runtime_presets()) {
    TrainConfig c = llama2_7b_on_h100(name);
    const RuntimeSpec& rt = runtime_preset(name);
    take_runtime_precision(c, rt, hw, {});
    const RuntimeTerms& t = rt.terms_for(true);
    EXPECT_EQ(c.precision.reduce_dtype, t.reduce_dtype_is_param_dtype ? "bf16" : t.reduce_dtype_default) << name;
    EXPECT_EQ(c.precision.master_dtype, t.master_dtype_default) << name;
    EXPECT_EQ(runtime_refusal(rt, c, hw), "") << name;
    EXPECT_NO_THROW(plan(c, hw, resolve_plan_options(c, hw))) << name;
    ++n;
  }
  EXPECT_GE(n, 20);
}

TEST(RuntimePrecision, AGivenKeyIsNeverReplaced) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = llama2_7b_on_h100("litgpt");
  c.precision.reduce_dtype = "fp32";
  c.precision.master_dtype = "fp32";
  take_runtime_precision(c, runtime_preset("litgpt"), hw, {true, true});
  EXPECT_EQ(c.precision.reduce_dtype, "fp32");
  EXPECT_EQ(c.precision.master_dtype, "fp32");
  // ... and the runtime refuses what it cannot run, by key.
  EXPECT_NE(runtime_refusal(runtime_preset("litgpt"), c, hw).find("precision.reduce_dtype = \"fp32\""),
            std::string::npos);
  // One key given, the other the runtime's: litgpt reduces bf16 parameters in bf16.
  TrainConfig d = llama2_7b_on_h100("litgpt");
  d.precision.master_dtype = "fp32";
  take_runtime_precision(d, runtime_preset("litgpt"), hw, {false, true});
  EXPECT_EQ(d.precision.reduce_dtype, "bf16");
  EXPECT_EQ(d.precision.master_dtype, "fp32");
}

TEST(RuntimePrecision, ProfilesThatDifferFromTheTrainersDefaults) {
  // Values read from the profiles' sources (configs/runtimes/*.toml [sources]): fms-fsdp reduces
  // in bf16 (its MixedPrecision policy), kempnerforge keeps bf16 masters and reduces in fp32,
  // accelerate reduces in the parameters' dtype (fp16 parameters: fp16).
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig f = llama2_7b_on_h100("fms-fsdp");
  take_runtime_precision(f, runtime_preset("fms-fsdp"), hw, {});
  EXPECT_EQ(f.precision.reduce_dtype, "bf16");
  EXPECT_EQ(f.precision.master_dtype, "fp32");
  TrainConfig k = llama2_7b_on_h100("kempnerforge");
  take_runtime_precision(k, runtime_preset("kempnerforge"), hw, {});
  EXPECT_EQ(k.precision.reduce_dtype, "fp32");
  EXPECT_EQ(k.precision.master_dtype, "bf16");
  TrainConfig a = llama2_7b_on_h100("accelerate");
  a.precision.param_dtype = "fp16";
  take_runtime_precision(a, runtime_preset("accelerate"), hw, {});
  EXPECT_EQ(a.precision.reduce_dtype, "fp16");
  // fms-fsdp's 16-bit reduction follows its parameters' 16-bit dtype (fpSixteen with fp16).
  TrainConfig h = llama2_7b_on_h100("fms-fsdp");
  h.precision.param_dtype = "fp16";
  take_runtime_precision(h, runtime_preset("fms-fsdp"), hw, {});
  EXPECT_EQ(h.precision.reduce_dtype, "fp16");
}

TEST(RuntimePrecision, MixedPrecisionOnlyOver16BitParameters) {
  // fp32 parameters cannot have bf16 masters (validate): the key stays fp32, and a runtime that
  // runs pure bf16 only refuses the configuration by name rather than planning another one.
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = llama2_7b_on_h100("lightning-thunder");
  c.precision.param_dtype = "fp32";
  take_runtime_precision(c, runtime_preset("lightning-thunder"), hw, {});
  EXPECT_EQ(c.precision.master_dtype, "fp32");
  EXPECT_NE(runtime_refusal(runtime_preset("lightning-thunder"), c, hw).find("precision.master_dtype"),
            std::string::npos);
  // Nor is there a narrower reduction over fp32 parameters: fms-fsdp's bf16 default is its
  // mixed-precision policy's.
  TrainConfig f = llama2_7b_on_h100("fms-fsdp");
  f.precision.param_dtype = "fp32";
  take_runtime_precision(f, runtime_preset("fms-fsdp"), hw, {});
  EXPECT_EQ(f.precision.reduce_dtype, "fp32");
}

TEST(RuntimePrecision, RunTomlTellsGivenKeysFromAbsentOnes) {
  const std::string with = "runtime = \"litgpt\"\n[model]\npreset = \"llama2-7b\"\n[precision]\nreduce_dtype = \"bf16\"\n";
  const std::string without = "runtime = \"litgpt\"\n[model]\npreset = \"llama2-7b\"\n";
  const std::vector<std::string> keys{"precision.reduce_dtype", "precision.master_dtype"};
  EXPECT_EQ(train_config_text_sets(with, "with.toml", keys), (std::vector<bool>{true, false}));
  EXPECT_EQ(train_config_text_sets(without, "without.toml", keys), (std::vector<bool>{false, false}));
}

TEST(RuntimePrecision, SearchRefusesAMasterDtypeItsRuntimeCannotRun) {
  // plan refuses kempnerforge with fp32 masters; search, asked the same base, refuses it too
  // instead of ranking configurations the runtime cannot run.
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  SearchSpace s;
  s.model = load_model("llama2-7b");
  s.model_preset = "llama2-7b";
  s.hardware = "H100-80GB-SXM";
  s.gpus = 8;
  s.seq_len = 4096;
  s.threads = 1;
  s.base.runtime = "kempnerforge";
  s.base.precision.master_dtype = "fp32";
  try {
    search(s, hw);
    ADD_FAILURE() << "search ranked fp32-master configurations for kempnerforge";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("kempnerforge cannot run precision.master_dtype = \"fp32\""),
              std::string::npos)
        << e.what();
  }
  // With the runtime's own master dtype every ranked candidate is pure bf16, as plan takes it.
  take_runtime_precision(s.base, runtime_preset("kempnerforge"), hw, {});
  const SearchResult r = search(s, hw);
  ASSERT_FALSE(r.ranked.empty());
  for (const Candidate& c : r.ranked) EXPECT_EQ(c.config.precision.master_dtype, "bf16");
}

}  // namespace
}  // namespace shardcast::planner
