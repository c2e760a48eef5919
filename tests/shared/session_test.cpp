// Session files: round trip of every run.toml field and of a custom hardware profile, and the
// errors a bad file gets (wrong format, newer schema, unknown key, bad config value with its
// key path).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shared/session.h"
#include "shared/config_io.h"
#include "shared/errors.h"

using namespace shardcast;
using namespace shardcast::session;

namespace {

TrainConfig sample_config() {
  TrainConfig c;
  c.model_preset = "llama3-8b";
  c.model = load_model("llama3-8b");
  c.cluster.hardware = "H100-80GB-SXM";
  c.cluster.nodes = 2;
  c.cluster.gpus_per_node = 8;
  c.cluster.inter_node_gbps = 1600;
  c.parallelism.sharding_strategy = ShardingStrategy::hybrid_shard;
  c.parallelism.hsdp_shard_size = 8;
  c.training.micro_batch = 2;
  c.training.seq_len = 4096;
  c.training.grad_accum = 4;
  c.training.steps = 123;
  c.activation_checkpointing.mode = AcMode::selective;
  c.activation_checkpointing.ratio = 0.25;
  c.precision.reduce_dtype = "bf16";
  c.precision.compile = true;
  c.precision.fp8 = Fp8Recipe::rowwise;
  c.optimizer.lr = 1.5e-4;
  c.metrics.dir = "runs/x";
  return c;
}

}  // namespace

TEST(Session, RoundTripKeepsEveryConfigField) {
  Session s;
  s.config = sample_config();
  s.validation_sources = {"/tmp/run1", "/tmp/published.csv"};
  const std::string text = write_session(s);
  const Session back = parse_session(text, "mem.json");
  // write_train_config is the canonical serialisation: equal text = equal config.
  EXPECT_EQ(write_train_config(back.config), write_train_config(s.config));
  EXPECT_EQ(back.validation_sources, s.validation_sources);
  EXPECT_FALSE(back.custom_hardware.has_value());
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["format"], "shardcast-session");
  EXPECT_EQ(j["schema"], 2);
  EXPECT_EQ(j["config"]["training"]["micro_batch"], 2);
  EXPECT_EQ(j["config"]["parallelism"]["sharding_strategy"], "hybrid_shard");
}

TEST(Session, CustomModelAndHardwareRoundTrip) {
  Session s;
  s.config = sample_config();
  s.config.model_preset.clear();
  s.config.model.name = "my-model";
  s.config.model.n_layers = 7;
  HardwareSpec h = load_hardware("A100-80GB-SXM");
  h.name = "custom";
  h.gpu.hbm_bytes = 96.0 * (1ull << 30);
  h.gpu.bf16_flops = 400e12;
  h.file.clear();
  s.custom_hardware = h;
  s.config.cluster.hardware = "custom";
  const Session back = parse_session(write_session(s), "mem.json");
  EXPECT_EQ(write_train_config(back.config), write_train_config(s.config));
  ASSERT_TRUE(back.custom_hardware.has_value());
  const HardwareSpec& b = *back.custom_hardware;
  EXPECT_EQ(b.name, "custom");
  // Unit conversions (bytes <-> GiB, FLOP/s <-> TFLOP/s) round to within a few ulps.
  EXPECT_NEAR(b.gpu.hbm_bytes, h.gpu.hbm_bytes, 1e-9 * h.gpu.hbm_bytes);
  EXPECT_NEAR(b.gpu.bf16_flops, h.gpu.bf16_flops, 1e-9 * h.gpu.bf16_flops);
  EXPECT_NEAR(b.node.inter_node_bandwidth, h.node.inter_node_bandwidth, 1e-9 * h.node.inter_node_bandwidth);
  EXPECT_NEAR(b.node.intra_node_latency, h.node.intra_node_latency, 1e-9 * h.node.intra_node_latency);
  EXPECT_EQ(b.efficiency, h.efficiency);
  EXPECT_EQ(session_hardware(back).name, "custom");
}

TEST(Session, PredictionIsWrittenButNotRead) {
  Session s;
  s.config = sample_config();
  Prediction p;
  p.step_time_s = 1.25;
  p.timeline.push_back({"fwd 1", "compute", 0, 1, 1});
  s.prediction = p;
  const auto j = nlohmann::json::parse(write_session(s));
  EXPECT_DOUBLE_EQ(j["prediction"]["time"]["step_time_s"].get<double>(), 1.25);
  EXPECT_FALSE(j["prediction"].contains("timeline"));  // a summary, not the events
  EXPECT_FALSE(parse_session(j.dump(), "x").prediction.has_value());
}

TEST(Session, RejectsOtherFormatsAndNewerSchemas) {
  Session s;
  s.config = sample_config();
  auto j = nlohmann::json::parse(write_session(s));
  auto expect_input_error = [](const nlohmann::json& doc, const std::string& needle) {
    try {
      parse_session(doc.dump(), "s.json");
      FAIL() << "accepted: " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto other = j;
  other["format"] = "fsdp-planner-session";
  expect_input_error(other, "format");
  auto newer = j;
  newer["schema"] = kSchema + 1;
  expect_input_error(newer, "newer");
  auto unknown = j;
  unknown["validation_source"] = nlohmann::json::array();
  expect_input_error(unknown, "did you mean \"validation_sources\"");
  EXPECT_THROW(parse_session("{not json", "s.json"), InputError);
  // A number JSON can spell but not hold (found by tests/fuzz/fuzz_session.cpp): InputError
  // naming the file, not nlohmann's out_of_range escaping the parser.
  try {
    parse_session(R"({"format": "shardcast-session", "schema": 2, "config": {"x": 1e999}})", "big.json");
    FAIL() << "accepted 1e999";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("big.json: not valid JSON"), std::string::npos) << e.what();
  }
  // An unsigned integer past int64 is refused as written, not wrapped to -1.
  auto huge = j;
  huge["config"]["training"]["seed"] = uint64_t(18446744073709551615ull);
  try {
    parse_session(huge.dump(), "s.json");
    FAIL() << "accepted seed 2^64 - 1";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "training.seed");
    EXPECT_NE(std::string(e.what()).find("18446744073709551615 is not allowed"), std::string::npos) << e.what();
  }
  huge["config"]["training"]["seed"] = uint64_t(9223372036854775807ull);  // the largest int64: kept
  EXPECT_EQ(parse_session(huge.dump(), "s.json").config.training.seed, 9223372036854775807ull);
}

// Schema 1 wrote precision.fp8 as a boolean: read as tensorwise / none. Schema 2 names the recipe
// and a boolean there is the config's own error.
TEST(Session, Schema1Fp8BooleanIsReadAsItsRecipe) {
  Session s;
  s.config = sample_config();
  s.config.precision.fp8 = Fp8Recipe::rowwise;
  auto j = nlohmann::json::parse(write_session(s));
  EXPECT_EQ(j["schema"], 2);
  EXPECT_EQ(j["config"]["precision"]["fp8"], "rowwise");
  EXPECT_EQ(parse_session(j.dump(), "s.json").config.precision.fp8, Fp8Recipe::rowwise);
  auto old = j;
  old["schema"] = 1;
  old["config"]["precision"]["fp8"] = true;
  EXPECT_EQ(parse_session(old.dump(), "s.json").config.precision.fp8, Fp8Recipe::tensorwise);
  old["config"]["precision"]["fp8"] = false;
  EXPECT_EQ(parse_session(old.dump(), "s.json").config.precision.fp8, Fp8Recipe::none);
  auto bad = j;
  bad["config"]["precision"]["fp8"] = true;
  try {
    parse_session(bad.dump(), "s.json");
    FAIL() << "a boolean fp8 in a schema-2 session was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "precision.fp8");
    EXPECT_NE(std::string(e.what()).find("rowwise_with_gw_hp"), std::string::npos) << e.what();
  }
}

TEST(Session, BadConfigValueNamesItsKeyPath) {
  Session s;
  s.config = sample_config();
  auto j = nlohmann::json::parse(write_session(s));
  j["config"]["training"]["micro_batchh"] = 3;
  try {
    parse_session(j.dump(), "s.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("micro_batchh"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("s.json"), std::string::npos) << e.what();
  }
  auto k = nlohmann::json::parse(write_session(s));
  k["config"]["training"]["micro_batch"] = 0;
  try {
    parse_session(k.dump(), "s.json");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("training.micro_batch"), std::string::npos) << e.what();
  }
}

TEST(Session, CustomHardwareNameMustMatchCluster) {
  Session s;
  s.config = sample_config();
  HardwareSpec h = load_hardware("A100-80GB-SXM");
  h.name = "custom";
  s.custom_hardware = h;  // config.cluster.hardware still names H100-80GB-SXM
  EXPECT_THROW(parse_session(write_session(s), "s.json"), ConfigError);
}
