// emit for the trainers as they are now: every key written for torchtitan is one of that
// generation's keys (tests/planner/data/torchtitan_keys_{v0.2,current}.txt, read from
// pytorch/torchtitan at the commits named in those files); the float8 converter's registered
// name; float32 reductions only; torchtitan's files follow the generation asked for and its
// refusal, and the current generation refuses the float8 recipe it cannot express (tensorwise);
// launch scripts set both allocator variables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "planner/emit/emit.h"
#include "planner/emit/emit_ecosystem.h"
#include "planner/evidence/import/torchtitan_config.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "tests/planner/test_util.h"

namespace shardcast::planner {
namespace {

std::set<std::string> key_list(const std::string& name) {
  std::ifstream in(std::string(SHARDCAST_TEST_DATA_DIR) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::set<std::string> keys;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') keys.insert(line);
  return keys;
}

void toml_keys(const toml::table& t, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [k, v] : t) {
    const std::string key = prefix + std::string(k.str());
    if (const auto* sub = v.as_table())
      toml_keys(*sub, key + ".", out);
    else
      out.push_back(key);
  }
}

// The attribute paths torchtitan_recipe.py sets, in the key list's spelling.
std::vector<std::string> recipe_keys(const std::string& py) {
  std::vector<std::string> keys;
  const std::regex assign(R"(^    config\.([A-Za-z_.]+) = (.*)$)");
  std::istringstream in(py);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, assign)) continue;
    const std::string key = m[1], value = m[2];
    if (key == "activation_checkpoint") {
      if (value.rfind("None", 0) == 0) keys.push_back("activation-checkpoint:none");
      else if (value.rfind("SelectiveAC.Config()", 0) == 0) keys.push_back("activation-checkpoint:selective");
      else if (value.rfind("FullAC.Config()", 0) == 0) keys.push_back("activation-checkpoint:full");
      else keys.push_back("activation_checkpoint=" + value);  // unknown: fails the lookup
    } else if (key == "compile") {
      // config.compile = CompileConfig(enable=..., components=[...]): its fields.
      if (value.rfind("CompileConfig(", 0) != 0) keys.push_back("compile=" + value);  // fails the lookup
      for (const char* f : {"enable", "components", "enable_async_tensor_parallel", "backend"})
        if (value.find(std::string(f) + "=") != std::string::npos) keys.push_back(std::string("compile.") + f);
    } else if (key == "model_spec") {
      // Each converter's class and the Config fields it is given, in the key list's spelling.
      for (const auto& [cls, name] : {std::pair<std::string, std::string>{"Float8LinearConverter", "float8"},
                                      {"MXFP8LinearConverter", "mxfp8"},
                                      {"NVFP4LinearConverter", "nvfp4"}}) {
        const size_t at = value.find(cls + ".Config(");
        if (at == std::string::npos || (at > 0 && std::isalnum((unsigned char)value[at - 1]))) continue;
        keys.push_back("quantize.linear." + name);
        // A keyword argument as a whole word (fqns= is not filter_fqns=).
        for (const char* f : {"recipe_name", "fqns", "filter_fqns", "model_compile_enabled"})
          if (std::regex_search(value.substr(at), std::regex(std::string("(^|[^A-Za-z0-9_])") + f + "=")))
            keys.push_back("quantize.linear." + name + "." + f);
      }
    } else {
      keys.push_back(key);
    }
  }
  if (py.find("ParamGroupConfig(") != std::string::npos)
    for (const char* k : {"pattern", "optimizer_name", "optimizer_kwargs"})
      if (py.find(std::string(k) + "=") != std::string::npos) keys.push_back(std::string("optimizer.param_groups[].") + k);
  return keys;
}

std::vector<TrainConfig> configs() {
  std::vector<TrainConfig> out;
  for (auto s : {ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op, ShardingStrategy::hybrid_shard,
                 ShardingStrategy::no_shard})
    for (auto ac : {AcMode::none, AcMode::selective, AcMode::full, AcMode::selective_op})
      for (bool extras : {false, true}) {
        TrainConfig c = test::make_config(extras ? "llama2-7b" : "llama3.1-8b", "H100-80GB-SXM", 32, s, ac, 2, 4096, 3);
        c.parallelism.hsdp_shard_size = s == ShardingStrategy::hybrid_shard ? 8 : 0;
        c.activation_checkpointing.ratio = ac == AcMode::selective ? 0.5 : 1.0;
        c.precision.compile = extras;
        c.precision.fp8 = extras ? Fp8Recipe::rowwise : Fp8Recipe::none;
        if (extras) {
          c.checkpoint.dir = "ckpt";
          c.checkpoint.interval = 50;
          c.lr_schedule.decay = "constant";
        }
        out.push_back(c);
      }
  return out;
}

TEST(EmitTorchtitan, V02KeysAreTorchtitanKeys) {
  const std::set<std::string> known = key_list("torchtitan_keys_v0.2.txt");
  ASSERT_GT(known.size(), 100u);
  for (const TrainConfig& c : configs()) {
    const std::string text = render_torchtitan_toml(c);
    const toml::table t = toml::parse(text);
    std::vector<std::string> keys;
    toml_keys(t, "", keys);
    for (const auto& k : keys) EXPECT_TRUE(known.count(k)) << "not a torchtitan v0.2 key: " << k;
    EXPECT_EQ(t["training"]["mixed_precision_reduce"].value_or(std::string()), "float32");
    if (c.precision.fp8_on()) {
      ASSERT_TRUE(t["model"]["converters"].as_array());
      EXPECT_EQ((*t["model"]["converters"].as_array())[0].value_or(std::string()), "quantize.linear.float8");
    }
    EXPECT_EQ(text.find("float8_all_gather"), std::string::npos);
    // The overrides are the same keys; tyro takes a boolean as a flag, without a value.
    const std::string overrides = render_torchtitan_overrides(c);
    for (const auto& [key, value] : test::parse_args(overrides, /*tyro=*/true))
      EXPECT_TRUE(known.count(key)) << "not a torchtitan v0.2 key: " << key;
    EXPECT_EQ(overrides.find("=true"), std::string::npos) << overrides;
    EXPECT_EQ(overrides.find("=false"), std::string::npos) << overrides;
  }
}

// pipeline_parallel_layers_per_stage as torchtitan reads it: ceil((layers + 2) / value) stages
// (pipeline_parallel.py, the embedding and the output one layer each), which must be pp times the
// plan's stages per rank. The schedule's own stages per rank need no value (torchtitan splits the
// model itself); 3 per rank of the 70B's 80 layers over pp 2 need 14 (ceil(82 / 14) = 6); 4 per
// rank over pp 4 (16 stages) no value makes (6 gives 14, 5 gives 17), and emit refuses it by
// name. (The value once written,
// layers / stages = 20 for 4 stages, made torchtitan count 5 and refuse the file.)
TEST(EmitTorchtitan, PipelineLayersPerStageMakeThePlansStages) {
  TrainConfig c = test::make_config("llama3-70b", "H100-80GB-SXM", 64, ShardingStrategy::full_shard, AcMode::full, 4, 8192);
  c.runtime = "torchtitan";
  c.parallelism.tp = 8;
  c.parallelism.pp = 2;
  c.parallelism.pp_schedule = PpSchedule::interleaved_1f1b;
  validate_or_throw(c);
  auto layers_per_stage = [](const std::string& text) {
    return toml::parse(text)["parallelism"]["pipeline_parallel_layers_per_stage"].value<int64_t>();
  };
  EXPECT_FALSE(layers_per_stage(render_torchtitan_toml(c)));  // 2 per rank: torchtitan's default
  EXPECT_EQ(render_torchtitan_recipe(c).find("pipeline_parallel_layers_per_stage"), std::string::npos);
  c.parallelism.pp_virtual_stages = 3;
  validate_or_throw(c);
  const std::string text = render_torchtitan_toml(c);
  ASSERT_TRUE(layers_per_stage(text));
  const int64_t lps = *layers_per_stage(text);
  EXPECT_EQ(lps, 14);
  EXPECT_EQ((80 + 2 + lps - 1) / lps, 2 * 3);  // torchtitan's count
  EXPECT_NE(render_torchtitan_recipe(c).find("config.parallelism.pipeline_parallel_layers_per_stage = 14"),
            std::string::npos);
  // torchtitan's reader of the file (the importer's rule) finds the plan's stages per rank.
  const TorchtitanJob j = parse_torchtitan_job_toml(text, "torchtitan.toml");
  ASSERT_TRUE(j.pp_layers_per_stage);
  EXPECT_EQ((80 + 2 + *j.pp_layers_per_stage - 1) / *j.pp_layers_per_stage / 2, 3);
  c.parallelism.pp = 4;
  c.parallelism.pp_virtual_stages = 4;
  c.cluster.nodes = 16;  // 128 GPUs: dp_shard 4 x tp 8 x pp 4
  validate_or_throw(c);
  try {
    render_torchtitan_toml(c);
    ADD_FAILURE() << "16 stages of 80 layers were written";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("parallelism.pp_virtual_stages"), std::string::npos) << e.what();
  }
}

// The current generation's batch keys with a pipeline: its data loader's micro-batch is one
// pipeline micro-batch, num_pp_microbatches of which make the rank's micro-step, and torchtitan
// refuses a step that is not a whole number of those over the data-parallel ranks (trainer.py
// @b5bcd76c6). Async TP is a CompileConfig field: written into the CompileConfig the recipe sets,
// not before it (which would reset it). (Both found by an audit: the micro-batch key carried the
// whole micro-batch, and async TP was set, then replaced with the compile config.)
TEST(EmitTorchtitan, CurrentRecipeKeepsThePipelinesBatchAndAsyncTp) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::none, 8, 4096);
  c.runtime = "torchtitan";
  c.parallelism.pp = 4;
  c.parallelism.pp_microbatch = 1;
  c.parallelism.pp_schedule = PpSchedule::interleaved_1f1b;
  validate_or_throw(c);
  const std::string py = render_torchtitan_recipe(c);
  auto value = [&](const std::string& key) {
    const std::regex re("\\n    config\\." + key + " = ([0-9]+)");
    std::smatch m;
    EXPECT_TRUE(std::regex_search(py, m, re)) << key;
    return m.size() > 1 ? std::stoll(m[1]) : 0LL;
  };
  const long long micro = value("training\\.num_tokens_per_microbatch_per_dp_rank");
  const long long step = value("training\\.num_tokens_per_train_step");
  const long long n = value("parallelism\\.num_pp_microbatches");
  EXPECT_EQ(micro, 4096);  // one sequence a pipeline micro-batch
  EXPECT_EQ(n, 8);
  EXPECT_EQ(step, 8LL * 4096 * 4);  // micro_batch 8 x 4096 x the 4 data-parallel ranks
  EXPECT_EQ(step % (micro * n * 4), 0);  // torchtitan's check
  TrainConfig t = test::make_config("llama3-8b", "H100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::full, 2, 8192);
  t.runtime = "torchtitan";
  t.precision.compile = true;
  t.parallelism.tp = 4;
  t.parallelism.tp_async = true;
  validate_or_throw(t);
  const std::string tpy = render_torchtitan_recipe(t);
  EXPECT_NE(tpy.find("config.compile = CompileConfig(enable=True, components=[\"model\", \"loss\"], "
                     "enable_async_tensor_parallel=True)"),
            std::string::npos)
      << tpy;
  EXPECT_EQ(tpy.find("config.compile.enable_async_tensor_parallel"), std::string::npos);
}

// float8 keeps the LM head bf16 as the plan does: torchtitan's float8 converter filters nothing by
// default (filter_fqns = [] at v0.2.1 and b5bcd76c6), so emit names the head: "output" in v0.2,
// "lm_head" in the current generation.
TEST(EmitTorchtitan, Float8FiltersTheHeadAsPlanned) {
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  c.runtime = "torchtitan";
  c.precision.compile = true;
  c.precision.fp8 = Fp8Recipe::rowwise;
  validate_or_throw(c);
  const toml::table t = toml::parse(render_torchtitan_toml(c));
  const toml::array* f = t["quantize"]["linear"]["float8"]["filter_fqns"].as_array();
  ASSERT_TRUE(f);
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].value_or(std::string()), "output");
  EXPECT_NE(render_torchtitan_recipe(c).find("filter_fqns=[\"lm_head\"]"), std::string::npos);
}

TEST(EmitTorchtitan, CurrentKeysAreTorchtitanKeys) {
  const std::set<std::string> known = key_list("torchtitan_keys_current.txt");
  ASSERT_GT(known.size(), 80u);
  for (const TrainConfig& c : configs()) {
    SCOPED_TRACE(std::string(to_string(c.parallelism.sharding_strategy)) + " " + to_string(c.activation_checkpointing.mode));
    const std::string py = render_torchtitan_recipe(c);
    const auto keys = recipe_keys(py);
    ASSERT_GT(keys.size(), 10u);
    for (const auto& k : keys) EXPECT_TRUE(known.count(k)) << "not a current torchtitan key: " << k;
    EXPECT_EQ(py.find("all_gather"), std::string::npos);  // float8 all-gather removed upstream
    EXPECT_NE(py.find("config.training.mixed_precision_reduce = \"float32\""), std::string::npos);
    // Token-count batch keys: micro_batch 2 x seq_len 4096, x grad_accum 3 x 32 ranks.
    EXPECT_NE(py.find("config.training.num_tokens_per_microbatch_per_dp_rank = 8192"), std::string::npos);
    EXPECT_NE(py.find("config.training.num_tokens_per_train_step = 786432"), std::string::npos);
    EXPECT_NE(py.find("config.training.max_context_length = 4096"), std::string::npos);
    EXPECT_NE(py.find("optimizer_name=\"AdamW\""), std::string::npos);
  }
}

// Each float8 recipe as the generation asked for writes it: v0.2 TOML [quantize.linear.float8]
// recipe_name (unset for tensorwise, torchao's default, which FSDP's float8 all-gather needs);
// the current Float8LinearConverter.Config(recipe_name=...), which has no tensorwise (#3127).
TEST(EmitTorchtitan, EachFp8RecipeInEachGeneration) {
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::selective_op,
                                    1, 8192, 1);
  c.precision.compile = true;
  for (Fp8Recipe r : {Fp8Recipe::none, Fp8Recipe::tensorwise, Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp}) {
    SCOPED_TRACE(to_string(r));
    c.precision.fp8 = r;
    const toml::table t = toml::parse(render_torchtitan_toml(c));
    const auto* converters = t["model"]["converters"].as_array();
    const auto recipe = t["quantize"]["linear"]["float8"]["recipe_name"].value<std::string>();
    if (r == Fp8Recipe::none) {
      EXPECT_EQ(converters, nullptr);
      EXPECT_FALSE(recipe.has_value());
    } else {
      ASSERT_NE(converters, nullptr);
      EXPECT_EQ((*converters)[0].value_or(std::string()), "quantize.linear.float8");
      if (r == Fp8Recipe::tensorwise) EXPECT_FALSE(recipe.has_value());
      else EXPECT_EQ(recipe.value_or(""), to_string(r));
    }
    if (r == Fp8Recipe::tensorwise) {
      try {
        render_torchtitan_recipe(c);
        ADD_FAILURE() << "tensorwise written for the current generation";
      } catch (const ConfigError& e) {
        EXPECT_EQ(e.key(), "precision.fp8");
        EXPECT_NE(std::string(e.what()).find("rowwise | rowwise_with_gw_hp"), std::string::npos) << e.what();
      }
      continue;
    }
    const std::string py = render_torchtitan_recipe(c);
    if (r == Fp8Recipe::none)
      EXPECT_EQ(py.find("Float8LinearConverter"), std::string::npos);
    else
      EXPECT_NE(py.find(std::string("Float8LinearConverter.Config(recipe_name=\"") + to_string(r) + "\""),
                std::string::npos)
          << py;
  }
}

TEST(EmitTorchtitan, Bf16ReductionIsNotWrittenAsFloat32) {
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  c.precision.reduce_dtype = "bf16";
  EXPECT_THROW(render_torchtitan_toml(c), ConfigError);
  EXPECT_THROW(render_torchtitan_recipe(c), ConfigError);
}

// Full bf16 training (torchtitan e99e16c91: training.dtype = "bfloat16"; precision.master_dtype =
// "bf16"): both generations' files say it, and import reads it back from the v0.2 TOML.
TEST(EmitTorchtitan, FullBf16IsWrittenAndReadBack) {
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  EXPECT_EQ(render_torchtitan_recipe(c).find("training.dtype"), std::string::npos);  // the default, float32
  c.precision.master_dtype = "bf16";
  EXPECT_NE(render_torchtitan_recipe(c).find("    config.training.dtype = \"bfloat16\""), std::string::npos);
  const std::string toml_text = render_torchtitan_toml(c);
  EXPECT_EQ(toml::parse(toml_text)["training"]["dtype"].value_or(std::string()), "bfloat16");
  const std::string path = ::testing::TempDir() + "full_bf16_job.toml";
  std::ofstream(path) << toml_text;
  EXPECT_EQ(read_torchtitan_job_toml(path).master_dtype.value_or(""), "bf16");
  // And `plan` runs it for the generations from 2025-10, not before e99e16c91 (2025-09-16).
  for (const char* rt : {"torchtitan-2025-10", "torchtitan-2026-06", "torchtitan"}) {
    c.runtime = rt;
    EXPECT_EQ(runtime_refusal(runtime_preset(rt), c, load_hardware("H100-80GB-SXM")), "") << rt;
  }
  c.runtime = "torchtitan-2025-07";
  EXPECT_NE(runtime_refusal(runtime_preset("torchtitan-2025-07"), c, load_hardware("H100-80GB-SXM")), "");
}

// emit writes torchtitan's files of the generation asked for, exactly when `plan` accepts
// torchtitan as the runtime (emit_targets: the runtime's refusal).
TEST(EmitTorchtitan, TargetsFollowVersionAndRefusal) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (const char* reduce : {"fp32", "bf16"})
    for (auto v : {TorchtitanVersion::v0_2, TorchtitanVersion::current}) {
      TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard,
                                        AcMode::selective_op, 1, 8192);
      c.precision.reduce_dtype = reduce;
      for (const EmitTarget& t : emit_targets(c, hw, v)) {
        if (t.runtime != torchtitan_generation(v)) continue;  // v0.2: torchtitan-2025-10
        const std::vector<std::string> want =
            v == TorchtitanVersion::v0_2 ? std::vector<std::string>{"torchtitan.toml", "torchtitan_overrides.txt"}
                                         : std::vector<std::string>{"torchtitan_recipe.py"};
        EXPECT_EQ(t.files, want);
        TrainConfig r = c;
        r.runtime = torchtitan_generation(v);
        bool plan_accepts = true;
        try {
          resolve_plan_options(r, hw);
        } catch (const ConfigError&) {
          plan_accepts = false;
        }
        EXPECT_EQ(t.refusal.empty(), plan_accepts) << reduce;
        EXPECT_EQ(plan_accepts, std::string(reduce) == "fp32");
      }
    }
}

// A float8 recipe the generation cannot express refuses that generation's file alone (the
// other runtimes' files are still written, emit_files' `skipped` says why); v0.2 expresses all.
TEST(EmitTorchtitan, CurrentGenerationRefusesTensorwiseAsATarget) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard,
                                    AcMode::selective_op, 1, 8192);
  c.precision.compile = true;
  for (Fp8Recipe r : {Fp8Recipe::none, Fp8Recipe::tensorwise, Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp})
    for (auto v : {TorchtitanVersion::v0_2, TorchtitanVersion::current}) {
      SCOPED_TRACE(std::string(to_string(r)) + (v == TorchtitanVersion::current ? " current" : " 0.2"));
      c.precision.fp8 = r;
      const bool expressible = !(r == Fp8Recipe::tensorwise && v == TorchtitanVersion::current);
      EXPECT_EQ(torchtitan_version_refusal(c, v).empty(), expressible);
      const std::vector<Fp8Recipe> ok = torchtitan_fp8_recipes(v);
      EXPECT_EQ(r == Fp8Recipe::none || std::find(ok.begin(), ok.end(), r) != ok.end(), expressible);
      for (const EmitTarget& t : emit_targets(c, hw, v)) {
        if (t.runtime == torchtitan_generation(v)) {
          EXPECT_EQ(t.refusal.empty(), expressible) << t.refusal;
          if (!expressible) {
            EXPECT_NE(t.refusal.find("rowwise | rowwise_with_gw_hp"), std::string::npos) << t.refusal;
          }
        } else {
          // fms-fsdp (no float8) is refused for its own reason; the current generation's rule
          // touches torchtitan's files only.
          EXPECT_EQ(t.refusal.find("torchtitan's current generation"), std::string::npos) << t.refusal;
        }
      }
    }
}

TEST(EmitTorchtitan, LaunchScriptsSetBothAllocatorVariables) {
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  const Prediction p = plan(c, load_hardware("H100-80GB-SXM"));
  for (const std::string& script : {render_torchrun(c), render_sbatch(c, p)}) {
    EXPECT_NE(script.find("PYTORCH_ALLOC_CONF=expandable_segments:True"), std::string::npos);
    EXPECT_NE(script.find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"), std::string::npos);
  }
}

// The current recipe starts from the flavor's registered config (config_registry.py
// @b5bcd76c6) and sets back everything of it the plan does not have: 70B and 405B register
// tensor parallelism 8 (an FSDP-only plan's degrees would not multiply to the world size),
// 405B float8 and async-TP compile (a bf16 plan would run float8), every flavor a profiler.
TEST(EmitTorchtitan, CurrentRecipeUndoesTheBaseConfigsOtherChoices) {
  for (const char* model : {"llama3-8b", "llama3-70b", "llama3.1-405b"}) {
    SCOPED_TRACE(model);
    TrainConfig c = test::make_config(model, "H100-80GB-SXM", 512, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
    const std::string py = render_torchtitan_recipe(c);
    const std::string flavor = torchtitan_flavor(c.model, TorchtitanVersion::current);
    EXPECT_NE(py.find("    config.model_spec = model_registry(\"" + flavor + "\")  # bf16 matmuls: no converters\n"),
              std::string::npos)
        << py;
    EXPECT_EQ(py.find("Float8LinearConverter"), std::string::npos);
    for (const char* dim : {"tensor", "pipeline", "context", "expert"})
      EXPECT_NE(py.find(std::string("    config.parallelism.") + dim + "_parallel_degree = 1"), std::string::npos) << dim;
    EXPECT_NE(py.find("    config.parallelism.data_parallel_shard_degree = 512\n"), std::string::npos);
    EXPECT_NE(py.find("    config.compile = CompileConfig(enable=False, components=[\"model\", \"loss\"])\n"),
              std::string::npos);
    EXPECT_NE(py.find("    config.profiler.enable_profiling = False\n"), std::string::npos);
    // 64 nodes: run_train.sh starts one node only; torchrun on each, with the allocator setting.
    EXPECT_NE(py.find("torchrun --nnodes 64 --nproc_per_node 8"), std::string::npos) << py;
    EXPECT_NE(py.find("PYTORCH_ALLOC_CONF=expandable_segments:True"), std::string::npos);
    // The recipe's module is found on every node as on one: the same PYTHONPATH.
    EXPECT_NE(py.find("#   PYTHONPATH=/path/to/this/dir PYTORCH_ALLOC_CONF=expandable_segments:True"), std::string::npos)
        << py;
    // What it plans is written (the chunked loss, CUDA graphs: f84224af0) and what it cannot
    // express is said (the data's document lengths), and what the plan counts that no setting holds (the
    // graphs' memory pool).
    EXPECT_NE(py.find("    config.loss.num_chunks = 8"), std::string::npos);
    EXPECT_NE(py.find("    config.training.disable_cuda_graphs = False"), std::string::npos);
    EXPECT_NE(py.find("# the graphs' private memory pool, whole cudaMalloc segments"), std::string::npos);
    EXPECT_NE(py.find("data.mean_doc_len: 0, dense causal work"), std::string::npos) << py;
  }
  // One node: run_train.sh.
  TrainConfig one = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  EXPECT_NE(render_torchtitan_recipe(one).find("MODULE=torchtitan_recipe CONFIG=shardcast_plan NGPU=8 ./run_train.sh\n"),
            std::string::npos);
  EXPECT_NE(render_torchtitan_toml(one).find("CONFIG_FILE=torchtitan.toml NGPU=8 ./run_train.sh\n"), std::string::npos);
}

// llama3.2-1b is a flavor of the current generation ("1B", tied embeddings) but not of v0.2.
TEST(EmitTorchtitan, CurrentGenerationHasThe1BFlavor) {
  TrainConfig c = test::make_config("llama3.2-1b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 4, 8192);
  const std::string py = render_torchtitan_recipe(c);
  EXPECT_NE(py.find("model_registry(\"1B\")"), std::string::npos) << py;
  EXPECT_EQ(py.find("no torchtitan llama3 flavor"), std::string::npos);
  EXPECT_NE(render_torchtitan_toml(c).find("no torchtitan llama3 flavor"), std::string::npos);
}

// What one generation cannot be told refuses its file (found by an emit audit): v0.2's llama3
// has no weight tying, so a tied Llama (llama3.2-1b) is written for the current generation
// only; the current generation has no CP rotate-method setting, so cp_rotate = "alltoall" is
// written for v0.2 only (before: dropped with a comment while the plan was for alltoall).
TEST(EmitTorchtitan, EachGenerationRefusesWhatItCannotBeTold) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  auto torchtitan_refusal = [&](const TrainConfig& c, TorchtitanVersion v) {
    for (const EmitTarget& t : emit_targets(c, hw, v))
      if (t.runtime == torchtitan_generation(v)) return t.refusal;
    ADD_FAILURE() << "no torchtitan target";
    return std::string();
  };
  TrainConfig tied = test::make_config("llama3.2-1b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 4, 8192);
  ASSERT_TRUE(tied.model.tied_embeddings);
  EXPECT_NE(torchtitan_refusal(tied, TorchtitanVersion::v0_2).find("cannot tie"), std::string::npos);
  EXPECT_EQ(torchtitan_refusal(tied, TorchtitanVersion::current), "");
  tied.model.tied_embeddings = false;
  EXPECT_EQ(torchtitan_refusal(tied, TorchtitanVersion::v0_2), "");

  TrainConfig cp = test::make_config("llama3.1-8b", "H100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::full, 1,
                                     131072);
  cp.runtime = "torchtitan";
  cp.parallelism.cp = 8;
  for (CpRotate r : {CpRotate::allgather, CpRotate::alltoall}) {
    cp.parallelism.cp_rotate = r;
    const std::string cur = torchtitan_refusal(cp, TorchtitanVersion::current);
    EXPECT_EQ(cur.empty(), r == CpRotate::allgather) << cur;
    if (r == CpRotate::alltoall) {
      EXPECT_NE(cur.find("cp_rotate = \"alltoall\""), std::string::npos) << cur;
    }
    EXPECT_EQ(torchtitan_refusal(cp, TorchtitanVersion::v0_2), "");
  }
}

// Settings the plan has that v0.2 and the current generation both take: AdamW's betas (v0.2's
// default beta2 is 0.95), the training collective timeout (not the start-up's), the
// checkpoint's async mode and initial weights.
TEST(EmitTorchtitan, OptimizerTimeoutAndCheckpointSettingsReachBothGenerations) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  c.optimizer.beta2 = 0.999;
  c.comm.timeout_seconds = 600;
  c.checkpoint.dir = "ckpt";
  c.checkpoint.async_mode = "async";
  c.checkpoint.initial_load_path = "/weights/llama3-8b";
  const toml::table t = toml::parse(render_torchtitan_toml(c));
  EXPECT_DOUBLE_EQ(t["optimizer"]["beta1"].value_or(0.0), 0.9);
  EXPECT_DOUBLE_EQ(t["optimizer"]["beta2"].value_or(0.0), 0.999);
  EXPECT_EQ(t["comm"]["train_timeout_seconds"].value_or(0), 600);
  EXPECT_FALSE(t["comm"]["init_timeout_seconds"]);
  EXPECT_EQ(t["checkpoint"]["async_mode"].value_or(std::string()), "async");
  EXPECT_EQ(t["checkpoint"]["initial_load_path"].value_or(std::string()), "/weights/llama3-8b");
  EXPECT_TRUE(t["checkpoint"]["initial_load_in_hf"].value_or(false));
  const std::string py = render_torchtitan_recipe(c);
  for (const char* line : {"\"betas\": (0.9, 0.999)", "config.comm.train_timeout_seconds = 600",
                           "config.checkpoint.async_mode = \"async\"",
                           "config.checkpoint.initial_load_path = \"/weights/llama3-8b\"",
                           "config.checkpoint.initial_load_in_hf = True"})
    EXPECT_NE(py.find(line), std::string::npos) << line;
}

// torchtitan's generations before v0.2.0 read keys of their own time, torchtitan-2026-06 has no
// training.disable_cuda_graphs, and each version's files are one generation's
// (torchtitan_generation): emit writes no torchtitan file for another, says why, and still
// writes the others.
TEST(EmitTorchtitan, EarlierGenerationsGetNoTorchtitanFile) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  for (const char* rt : {"torchtitan-2024-04", "torchtitan-2024-10", "torchtitan-2025-07", "torchtitan-2025-10",
                         "torchtitan-2026-06"})
    for (auto v : {TorchtitanVersion::v0_2, TorchtitanVersion::current}) {
      SCOPED_TRACE(std::string(rt) + (v == TorchtitanVersion::current ? " current" : " 0.2"));
      c.runtime = rt;
      const auto targets = emit_targets(c, hw, v);
      ASSERT_EQ(targets.front().runtime, rt);
      if (rt == std::string(torchtitan_generation(v))) {  // v0.2's own generation: written
        EXPECT_EQ(targets.front().refusal, "");
        continue;
      }
      EXPECT_NE(targets.front().refusal.find("whose config keys emit does not write"), std::string::npos)
          << targets.front().refusal;
      const bool before_v02 = runtime_preset(rt).until_date <= "2025-10-09";
      EXPECT_EQ(targets.front().refusal.find("a torchtitan generation before v0.2.0") != std::string::npos, before_v02)
          << targets.front().refusal;
      EXPECT_EQ(targets.front().prediction.runtime, rt);  // still predicted: emit prints it
      for (size_t i = 1; i < targets.size(); ++i) EXPECT_NE(targets[i].runtime.rfind("torchtitan", 0), 0u);
    }
}

// MXFP8 and NVFP4 as the current generation writes them: the converter on the blocks the plan
// converts (MXFP8: fqns ["layers."], the LM head bf16 as planned; NVFP4: torchtitan's own
// bf16-tail helper), every attribute a key of torchtitan @b5bcd76c6, and refused for v0.2.
TEST(EmitTorchtitan, BlockScaledFormatsInTheCurrentGeneration) {
  const std::set<std::string> known = key_list("torchtitan_keys_current.txt");
  TrainConfig c = test::make_config("llama3.1-8b", "B200", 8, ShardingStrategy::full_shard, AcMode::selective_op, 1, 8192, 1);
  c.precision.compile = true;
  for (Fp8Recipe r : {Fp8Recipe::mxfp8, Fp8Recipe::nvfp4}) {
    SCOPED_TRACE(to_string(r));
    c.precision.fp8 = r;
    const std::string py = render_torchtitan_recipe(c);
    for (const auto& k : recipe_keys(py)) EXPECT_TRUE(known.count(k)) << "not a current torchtitan key: " << k;
    if (r == Fp8Recipe::mxfp8) {
      EXPECT_NE(py.find("converters=[MXFP8LinearConverter.Config(fqns=[\"layers.\"], model_compile_enabled=True)]"),
                std::string::npos) << py;
      EXPECT_NE(py.find("from torchtitan.components.quantization import MXFP8LinearConverter\n"), std::string::npos);
    } else {
      EXPECT_NE(py.find("NVFP4LinearConverter.Config(fqns=nvfp4_bf16_tail_fqns(32, 0.15), model_compile_enabled=True)"),
                std::string::npos) << py;
      EXPECT_NE(py.find("from torchtitan.components.quantization.nvfp4 import nvfp4_bf16_tail_fqns\n"), std::string::npos);
      EXPECT_NE(py.find("config.parallelism.spmd_backend = \"spmd_types\""), std::string::npos);
    }
    EXPECT_EQ(py.find("Float8LinearConverter"), std::string::npos);
    EXPECT_NE(py.find("config.loss.num_chunks = 8"), std::string::npos);
    EXPECT_NE(py.find("config.training.disable_cuda_graphs = False"), std::string::npos);
    EXPECT_FALSE(torchtitan_version_refusal(c, TorchtitanVersion::current).size());
    const std::string why = torchtitan_version_refusal(c, TorchtitanVersion::v0_2);
    if (r == Fp8Recipe::mxfp8) {
      EXPECT_EQ(why, "");
      continue;
    }
    EXPECT_NE(why.find(std::string("precision.fp8 = \"") + to_string(r) + "\""), std::string::npos) << why;
    EXPECT_THROW(render_torchtitan_toml(c), ConfigError);
    EXPECT_THROW(render_torchtitan_overrides(c), ConfigError);
  }
}

// MXFP8 in torchtitan v0.2's files: the MX converter by its registered name, recipe mxfp8_cublas
// and the LM head filtered out (bf16, as planned); every key one of v0.2's, the TOML parsed back
// by toml++ and the overrides in v0.2's list rule (one comma-separated value).
TEST(EmitTorchtitan, Mxfp8InVersion02) {
  const std::set<std::string> known = key_list("torchtitan_keys_v0.2.txt");
  TrainConfig c = test::make_config("llama3.1-8b", "B200", 8, ShardingStrategy::full_shard, AcMode::selective_op, 1, 8192, 1);
  c.runtime = "torchtitan-2025-10";
  c.precision.compile = true;
  c.precision.fp8 = Fp8Recipe::mxfp8;
  const toml::table t = toml::parse(render_torchtitan_toml(c));
  EXPECT_EQ(t["model"]["converters"][0].value_or(std::string()), "quantize.linear.mx");
  EXPECT_EQ(t["quantize"]["linear"]["mx"]["recipe_name"].value_or(std::string()), "mxfp8_cublas");
  EXPECT_EQ(t["quantize"]["linear"]["mx"]["filter_fqns"][0].value_or(std::string()), "output");
  EXPECT_FALSE(t["quantize"]["linear"]["float8"]);
  for (const char* k : {"quantize.linear.mx.recipe_name", "quantize.linear.mx.filter_fqns", "model.converters"})
    EXPECT_TRUE(known.count(k)) << k;
  const std::string o = render_torchtitan_overrides(c);
  EXPECT_NE(o.find("--model.converters=quantize.linear.mx"), std::string::npos) << o;
  EXPECT_NE(o.find("--quantize.linear.mx.recipe_name=mxfp8_cublas"), std::string::npos) << o;
  EXPECT_EQ(parse_torchtitan_job_toml(render_torchtitan_toml(c), "emitted.toml").fp8, "mxfp8");  // import reads it back
}

}  // namespace
}  // namespace shardcast::planner
