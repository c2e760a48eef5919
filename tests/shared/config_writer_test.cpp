// write_train_config through toml++ (issue 52): a run.toml whose strings hold quotes,
// backslashes, TOML table headers, comment and escape look-alikes and non-ASCII text is written
// and read back as the same TrainConfig, key by key; Python's tomllib reads the file to the same
// strings; a control character (newline, tab, DEL) or invalid UTF-8 in a string is refused by
// key before anything is written, as every emit writer does (shared/emitted_text.h).
#include "shared/config_io.h"

#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "shared/config_schema.h"
#include "shared/errors.h"
#include "shared/toml_text.h"

extern char** environ;

namespace shardcast {
namespace {

namespace fs = std::filesystem;

// Printable but hostile: each would end its string, open a table or a comment, or escape
// something if it were pasted between quotes by hand.
const std::vector<std::string> kHostile = {
    "plain",
    "q\"uote",
    "\"",
    "back\\slash\\",
    "\\n not a newline, \\u0041 not an A",
    "x\"\n",  // holds a newline: refused (see ControlCharactersAreRefusedByKey), replaced below
    "a\" \n[job]\ndump_folder = \"/etc/cron.d",
    "\"\"\" triple",
    "'single' and '''triple'''",
    "# not a comment",
    "[job]",
    "x\" = 1 # [job]",
    "ünïcödé ☃ 𝄞 名前",
    "$(touch pwned) `id` ${HOME}",
    "ends with backslash \\",
};

// The one-line strings of kHostile (a newline is refused, tested on its own).
std::vector<std::string> printable() {
  std::vector<std::string> v;
  for (const auto& s : kHostile)
    if (s.find('\n') == std::string::npos) v.push_back(s);
  return v;
}

TrainConfig base() {
  return parse_train_config(
      "[model]\npreset = \"tiny-2l\"\n[cluster]\nhardware = \"cpu\"\nnodes = 1\ngpus_per_node = 2\n"
      "[training]\nmicro_batch = 1\nseq_len = 64\nsteps = 4\n",
      "base.toml");
}

// Every string of `c` that run.toml carries, with its key.
std::vector<std::pair<std::string, std::string>> strings_of(const TrainConfig& c) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TrainConfigKey& k : train_config_schema()) {
    bool quoted = false;
    if (const auto v = train_config_value(k, c, &quoted)) out.emplace_back(k.path, *v);
  }
  out.emplace_back("model.name", c.model.name);
  out.emplace_back("model.preset", c.model_preset);
  out.emplace_back("prediction.hardware", c.prediction.hardware);
  out.emplace_back("prediction.runtime", c.prediction.runtime);
  for (const auto& [k, v] : c.prediction.mem_components)
    out.emplace_back("prediction.mem_components." + k, toml_float(v));
  return out;
}

// `s` in every free string of a custom-model config (preset names stay names: the reader
// follows them as files).
TrainConfig hostile(const std::string& s) {
  TrainConfig c = base();
  c.model_preset.clear();
  c.model.name = s;
  c.data.path = s;
  c.checkpoint.dir = s;
  c.checkpoint.initial_load_path = s + "/hf";
  c.metrics.dir = s;
  c.prediction.present = true;
  c.prediction.step_time_s = 1.0 / 3;
  c.prediction.tokens_per_s_per_gpu = 4550.25;
  c.prediction.mem_peak_bytes = 123456789012.0;
  c.prediction.hardware = s;
  c.prediction.runtime = s;
  c.prediction.mem_components = {{s, 1024.0}, {"activations", 4096.5}};
  return c;
}

// python3 -c SCRIPT ARGS..., without a shell; the exit status.
int run_python(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"python3", "-c", script};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, "python3", nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ConfigWriter, HostileStringsRoundTripKeyByKey) {
  for (const std::string& s : printable()) {
    const TrainConfig c = hostile(s);
    const std::string text = write_train_config(c);
    const TrainConfig back = parse_train_config(text, "written.toml");
    EXPECT_EQ(strings_of(back), strings_of(c)) << s << "\n" << text;
    EXPECT_EQ(back.model.n_layers, c.model.n_layers);
    EXPECT_EQ(back.prediction.step_time_s, c.prediction.step_time_s);
    EXPECT_EQ(back.prediction.mem_components, c.prediction.mem_components) << text;
    EXPECT_EQ(write_train_config(back), text);  // fixed point
    // No string opened a table of its own: the tables are the schema's, nothing else.
    const toml::table t = toml::parse(text);
    for (auto&& [key, node] : t) {
      const std::string k(key.str());
      EXPECT_TRUE(k == "runtime" || node.is_table()) << k << " in\n" << text;
      EXPECT_NE(k, "job") << text;
    }
  }
}

// Python's own TOML reader reads the same strings back (what torchtitan or a user's script sees).
TEST(ConfigWriter, TomllibReadsTheSameStrings) {
  const fs::path dir = fs::temp_directory_path() / ("shardcast_config_writer_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // argv: OUT.json FILE...; OUT gets one object per FILE.
  const std::string script =
      "import json, sys, tomllib\n"
      "out = []\n"
      "for f in sys.argv[2:]:\n"
      "    d = tomllib.load(open(f, 'rb'))\n"
      "    out.append({'name': d['model']['name'], 'data': d['data']['path'], 'ckpt': d['checkpoint']['dir'],\n"
      "                'hw': d['prediction']['hardware'], 'mem': sorted(d['prediction']['mem_components']),\n"
      "                'tables': sorted(d)})\n"
      "json.dump(out, open(sys.argv[1], 'w'))\n";
  const std::vector<std::string> values = printable();
  const fs::path out = dir / "out.json";
  std::vector<std::string> args = {out.string()};
  for (size_t i = 0; i < values.size(); ++i) {
    const fs::path file = dir / ("run" + std::to_string(i) + ".toml");
    write_file_atomic(file, write_train_config(hostile(values[i])));
    args.push_back(file.string());
  }
  ASSERT_EQ(run_python(script, args), 0) << "tomllib refused a file written in " << dir;
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& s = values[i];
    EXPECT_EQ(j[i]["name"], s);
    EXPECT_EQ(j[i]["data"], s);
    EXPECT_EQ(j[i]["ckpt"], s);
    EXPECT_EQ(j[i]["hw"], s);
    std::vector<std::string> mem = {"activations", s};
    std::sort(mem.begin(), mem.end());
    EXPECT_EQ(j[i]["mem"], mem);
    for (const auto& table : j[i]["tables"]) EXPECT_NE(table, "job") << s;
  }
  fs::remove_all(dir);
}

TEST(ConfigWriter, ControlCharactersAreRefusedByKey) {
  struct Case {
    std::string value;
    void (*set)(TrainConfig&, const std::string&);
    const char* key;
  };
  const std::vector<Case> cases = {
      {"x\"\n[job]", [](TrainConfig& c, const std::string& v) { c.model.name = v; }, "model.name"},
      {"a\tb", [](TrainConfig& c, const std::string& v) { c.data.path = v; }, "data.path"},
      {"ck\r", [](TrainConfig& c, const std::string& v) { c.checkpoint.dir = v; }, "checkpoint.dir"},
      {"del\x7f", [](TrainConfig& c, const std::string& v) { c.metrics.dir = v; }, "metrics.dir"},
      {"bad\xff utf8", [](TrainConfig& c, const std::string& v) { c.prediction.hardware = v; },
       "prediction.hardware"},
      {"k\nv", [](TrainConfig& c, const std::string& v) { c.prediction.mem_components[v] = 1; },
       "prediction.mem_components"},
  };
  for (const Case& k : cases) {
    TrainConfig c = base();
    c.model_preset.clear();
    c.prediction.present = true;
    k.set(c, k.value);
    try {
      write_train_config(c);
      ADD_FAILURE() << "written: " << k.key;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), k.key) << e.what();
    }
  }
}

// A hardware profile's strings and [efficiency] keys go through the same writer.
TEST(ConfigWriter, HardwareProfileStringsRoundTrip) {
  HardwareSpec h = load_hardware("cpu");
  h.name = "my \"gpu\" [job] \\ ünï";
  h.efficiency["x\"y"] = 0.5;  // a key no reader accepts, but written as a key, not as text
  const std::string text = write_hardware_toml(h);
  const toml::table t = toml::parse(text);
  EXPECT_EQ(t["name"].value<std::string>(), h.name) << text;
  EXPECT_EQ(t["efficiency"]["x\"y"].value<double>(), 0.5) << text;
  h.name = "two\nlines";
  EXPECT_THROW(write_hardware_toml(h), ConfigError);
}

}  // namespace
}  // namespace shardcast
