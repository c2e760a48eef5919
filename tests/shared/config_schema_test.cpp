// The key schema (shared/config_schema.h) is the one list of run.toml and hardware-preset keys:
// docs/configuration.md lists exactly its keys, the writer writes every one of them, and the
// parser reads each plain key back.
#include "shared/config_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <toml++/toml.h>

#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The keys the key tables ("| key | ...") of one "## " section of a Markdown page list, with
// their table prefix: a bare name takes the table of its "### `[table]`" heading, or of the
// last qualified name before it when the heading names several tables ("`optimizer.beta1`,
// `beta2`"); "`[a.b]`" is the sub-table a.b.
std::set<std::string> documented_keys(const std::string& md, const std::string& section) {
  std::set<std::string> keys;
  std::istringstream in(md);
  std::string line, last_table;
  std::vector<std::string> heading_tables;
  bool in_section = false, key_table = false;
  const std::regex tick("`([^`]+)`");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_section = line.find(section) != std::string::npos;
      heading_tables.clear();
      last_table.clear();
      continue;
    }
    if (!in_section) continue;
    if (line.rfind("### ", 0) == 0) {
      heading_tables.clear();
      for (std::sregex_iterator it(line.begin(), line.end(), tick), end; it != end; ++it) {
        const std::string t = (*it)[1];
        if (t.size() > 2 && t.front() == '[') heading_tables.push_back(t.substr(1, t.size() - 2));
      }
      last_table = heading_tables.size() == 1 ? heading_tables[0] : "";
      continue;
    }
    if (line.rfind("| key |", 0) == 0) {
      key_table = true;
      continue;
    }
    if (line.rfind("|", 0) != 0) {
      key_table = false;
      continue;
    }
    if (!key_table || line.rfind("|---", 0) == 0) continue;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    for (std::sregex_iterator it(cell.begin(), cell.end(), tick), end; it != end; ++it) {
      std::string t = (*it)[1];
      if (t.front() == '[') {  // a (sub-)table named as a key, by its full path
        keys.insert(t.substr(1, t.size() - 2));
        continue;
      }
      const size_t dot = t.rfind('.');
      if (dot != std::string::npos) {
        last_table = t.substr(0, dot);
        keys.insert(t);
      } else {
        keys.insert(last_table.empty() ? t : last_table + "." + t);
      }
    }
  }
  return keys;
}

std::string docs() { return read(std::string(SHARDCAST_TEST_SOURCE_DIR) + "/docs/configuration.md"); }

TEST(ConfigSchema, DocsListExactlyTheRunTomlKeys) {
  std::set<std::string> schema;
  for (const auto& k : train_config_schema()) schema.insert(k.path);
  const std::set<std::string> documented = documented_keys(docs(), "## run.toml");
  for (const auto& k : schema) EXPECT_TRUE(documented.count(k)) << k << " is not in docs/configuration.md";
  for (const auto& k : documented)
    EXPECT_TRUE(schema.count(k)) << k << " is documented but is no key of shared/config_schema.cpp";
}

TEST(ConfigSchema, DocsListExactlyTheHardwareKeys) {
  std::set<std::string> schema{"efficiency"};  // its keys: kEfficiencyKeys, docs/cost-model.md
  for (const auto& k : hardware_schema()) schema.insert(k.path);
  const std::set<std::string> documented = documented_keys(docs(), "## Hardware presets");
  EXPECT_EQ(documented, schema);
}

TEST(ConfigSchema, CostModelDocumentsEveryEfficiencyKey) {
  const std::string md = read(std::string(SHARDCAST_TEST_SOURCE_DIR) + "/docs/cost-model.md");
  for (const char* k : kEfficiencyKeys) EXPECT_NE(md.find(std::string("`") + k + "`"), std::string::npos) << k;
}

// The writer writes every key of the schema (the [prediction] ones when a prediction is
// present), and reading its output gives back the same value for every plain key.
TEST(ConfigSchema, WriterWritesEveryKeyAndParserReadsItBack) {
  TrainConfig c = parse_train_config("[model]\npreset = \"tiny-2l\"\n[training]\nseq_len = 128\n", "t.toml");
  c.prediction.present = true;
  c.prediction.mem_components = {{"sharded_parameters", 1.0}};
  c.training.seed = 42;
  c.checkpoint.dir = "ckpt";
  c.parallelism.sync_every_micro_step = false;  // optional keys are written when given
  c.model.explicit_head_dim = 64;                // model.head_dim: written when not d_model / n_heads
  c.model.qk_norm = true;                        // model.qk_norm: written when true
  const std::string text = write_train_config(c);
  const toml::table t = toml::parse(text);
  for (const auto& k : train_config_schema())
    EXPECT_TRUE(t.at_path(k.path)) << k.path << " is not written:\n" << text;
  const TrainConfig back = parse_train_config(text, "back.toml");
  EXPECT_EQ(write_train_config(back), text);
}

// An optional key (parallelism.sync_every_micro_step) stays absent when not given: unset means
// "the runtime's behaviour", which a written default would turn into an explicit request.
TEST(ConfigSchema, AbsentOptionalKeyIsNotWritten) {
  const TrainConfig c = parse_train_config("[model]\npreset = \"tiny-2l\"\n[training]\nseq_len = 128\n", "t.toml");
  EXPECT_FALSE(c.parallelism.sync_every_micro_step.has_value());
  const std::string text = write_train_config(c);
  EXPECT_FALSE(toml::parse(text).at_path("parallelism.sync_every_micro_step")) << text;
  const TrainConfig t = parse_train_config("[model]\npreset = \"tiny-2l\"\n[training]\nseq_len = 128\n[parallelism]\nsync_every_micro_step = true\n",
                                           "t.toml");
  ASSERT_TRUE(t.parallelism.sync_every_micro_step.has_value());
  EXPECT_TRUE(*t.parallelism.sync_every_micro_step);
  EXPECT_THROW(parse_train_config("[model]\npreset = \"tiny-2l\"\n[training]\nseq_len = 128\n[parallelism]\nsync_every_micro_step = 1\n", "t.toml"),
               ConfigError);
}

TEST(ConfigSchema, HardwareWriterRoundTripsEveryPreset) {
  for (const auto& name : list_hardware_presets()) {
    const HardwareSpec h = load_hardware(name);
    const std::string text = write_hardware_toml(h);
    const toml::table t = toml::parse(text);
    for (const auto& k : hardware_schema()) EXPECT_TRUE(t.at_path(k.path)) << name << ": " << k.path;
    const HardwareSpec back = parse_hardware_toml(text, name);
    EXPECT_EQ(back.name, h.name);
    EXPECT_DOUBLE_EQ(back.gpu.bf16_flops, h.gpu.bf16_flops) << name;
    EXPECT_DOUBLE_EQ(back.node.inter_node_bandwidth, h.node.inter_node_bandwidth) << name;
    EXPECT_EQ(back.efficiency, h.efficiency) << name;
  }
}

TEST(ConfigSchema, NonFiniteNumbersAreRejected) {
  for (const char* v : {"nan", "inf", "-inf"}) {
    try {
      parse_train_config(std::string("[model]\npreset = \"tiny-2l\"\n[training]\nseq_len = 128\n[optimizer]\nlr = ") + v + "\n", "t.toml");
      ADD_FAILURE() << v << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("optimizer.lr"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("finite"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace shardcast
