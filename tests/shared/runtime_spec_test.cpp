// Runtime presets (configs/runtimes/): every shipped preset parses, states every term of the
// schema with a source, and the parser refuses what the schema does not allow.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "shared/trainer_checks.h"

namespace shardcast {
namespace {

TEST(RuntimeSpec, EveryShippedPresetStatesEveryTermWithASource) {
  const auto names = list_runtime_presets();
  for (const char* n : {"shardcast-train", "torchtitan", "fms-fsdp", "llm-foundry", "accelerate"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const auto& n : names) {
    const RuntimeSpec rt = load_runtime(n);
    EXPECT_EQ(rt.name, n);
    EXPECT_FALSE(rt.description.empty()) << n;
    for (const auto& term : kRuntimeTerms) {
      ASSERT_TRUE(rt.sources.count(term.key)) << n << ": " << term.key;
      EXPECT_GT(rt.sources.at(term.key).size(), 10u) << n << ": " << term.key;
    }
  }
}

TEST(RuntimeSpec, ShardcastTrainDiffersOnGpuOnlyWhereItsCodeDoes) {
  const RuntimeSpec rt = load_runtime("shardcast-train");
  EXPECT_EQ(rt.terms_for(false).attention, "eager");  // LibTorch 1.13 CPU: eager softmax
  ASSERT_TRUE(rt.gpu_terms.has_value());
  EXPECT_EQ(rt.terms_for(true).attention, "flash");   // LibTorch >= 2.0 CUDA: SDPA
  EXPECT_EQ(rt.terms_for(true).cross_entropy, rt.terms_for(false).cross_entropy);
  EXPECT_EQ(rt.terms_for(true).sync_every_micro_step, rt.terms_for(false).sync_every_micro_step);
  // Gloo's composed reduce-scatter receives into a buffer of the unsharded gradient's size;
  // NCCL's native one does not (trainer/comm/collectives.cpp).
  EXPECT_TRUE(rt.terms_for(false).reduce_copies_gradient);
  EXPECT_FALSE(rt.terms_for(true).reduce_copies_gradient);
}

std::string minimal(const std::string& extra_terms, const std::string& extra_sources) {
  std::string t = "name = \"x\"\ndescription = \"d\"\n[terms]\n";
  std::string s = "[sources]\n";
  const char* values[][2] = {{"attention", "\"flash\""}, {"cross_entropy", "\"native\""},
                             {"reduce_dtypes", "[\"fp32\"]"}, {"reduce_dtype_default", "\"fp32\""},
                             {"collective_buffers", "\"rate_limited\""}};
  for (const auto& term : kRuntimeTerms) {
    std::string v = "false";
    for (const auto& kv : values)
      if (std::string(kv[0]) == term.key) v = kv[1];
    t += std::string(term.key) + " = " + v + "\n";
    s += std::string(term.key) + " = \"a public source\"\n";
  }
  return t + extra_terms + s + extra_sources;
}

TEST(RuntimeSpec, ParserRefusesWhatTheSchemaDoesNotAllow) {
  EXPECT_NO_THROW(parse_runtime_toml(minimal("", ""), "x.toml"));
  // An unknown term, with the closest known one suggested.
  try {
    parse_runtime_toml(minimal("atention = \"flash\"\n", ""), "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "terms.atention");
    EXPECT_NE(std::string(e.what()).find("attention"), std::string::npos);
  }
  // A value outside the allowed set.
  std::string bad = minimal("", "");
  bad.replace(bad.find("\"flash\""), 7, "\"fused\"");
  EXPECT_THROW(parse_runtime_toml(bad, "x.toml"), ConfigError);
  // A term without its source.
  std::string nosrc = minimal("", "");
  nosrc.erase(nosrc.find("attention = \"a public source\"\n"), std::string("attention = \"a public source\"\n").size());
  try {
    parse_runtime_toml(nosrc, "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "sources.attention");
  }
  // A missing term.
  std::string noterm = minimal("", "");
  noterm.erase(noterm.find("root_unit = false\n"), std::string("root_unit = false\n").size());
  EXPECT_THROW(parse_runtime_toml(noterm, "x.toml"), ConfigError);
  // A [gpu] override needs its own source.
  std::string gpu = minimal("", "");
  gpu.insert(gpu.find("[sources]"), "[gpu]\nroot_unit = true\n");
  try {
    parse_runtime_toml(gpu, "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "sources.gpu.root_unit");
  }
  EXPECT_TRUE(parse_runtime_toml(gpu + "[sources.gpu]\nroot_unit = \"a public source\"\n", "x.toml").terms_for(true).root_unit);
}

TEST(RuntimeSpec, UnknownNameListsTheAllowedOnes) {
  try {
    load_runtime("torchtitn");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'torchtitan'"), std::string::npos) << e.what();
  }
}

TEST(TrainerChecks, ListsEveryReasonTheTrainerRefuses) {
  TrainConfig c;
  c.model.name = "m";
  c.precision.param_dtype = "bf16";
  c.precision.compile = true;
  const auto r = trainer_refusals(c, false);
  std::vector<std::string> keys;
  for (const auto& x : r) keys.push_back(x.key);
  EXPECT_NE(std::find(keys.begin(), keys.end(), "precision"), keys.end());          // bf16 on Gloo
  EXPECT_NE(std::find(keys.begin(), keys.end(), "precision.compile"), keys.end());  // no compiler
  EXPECT_NE(std::find(keys.begin(), keys.end(), "data.path"), keys.end());          // empty
  // On an NCCL build the 16-bit run is fine; the rest stays.
  const auto g = trainer_refusals(c, true);
  for (const auto& x : g) EXPECT_NE(x.key, "precision");
}

}  // namespace
}  // namespace shardcast
