// TOML I/O: a full round trip, presets, and bad configs that must each fail with a message
// naming the file, the key path and what is allowed.
#include "shared/config_io.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include "shared/errors.h"
#include "shared/toml_reader.h"

namespace shardcast {
namespace {

const char* kBase = R"(
[model]
preset = "tiny-2l"

[cluster]
hardware = "cpu"
nodes = 1
gpus_per_node = 4

[parallelism]
sharding_strategy = "hybrid_shard"
hsdp_shard_size = 2

[training]
micro_batch = 2
seq_len = 128
grad_accum = 3
steps = 20
seed = 7
max_grad_norm = 1.0

[activation_checkpointing]
mode = "selective"
ratio = 0.5

[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

TEST(ConfigIo, BaseIsValid) {
  const TrainConfig c = parse_train_config(kBase, "base.toml");
  EXPECT_EQ(c.model.n_layers, 2);
  EXPECT_EQ(c.model_preset, "tiny-2l");
  EXPECT_EQ(c.world_size(), 4);
  EXPECT_EQ(c.parallelism.sharding_strategy, ShardingStrategy::hybrid_shard);
  EXPECT_EQ(c.tokens_per_step(), 2LL * 128 * 3 * 4);
}

TEST(ConfigIo, RoundTripEveryField) {
  TrainConfig c = parse_train_config(kBase, "base.toml");
  c.model.rope_theta = 123456.5;
  c.model.norm_eps = 1e-6;
  c.cluster.inter_node_gbps = 400;
  c.optimizer.lr = 1.5e-4;
  c.optimizer.eps = 1e-8;
  c.lr_schedule.warmup_steps = 5;
  c.lr_schedule.decay = "linear";
  c.data.path = "data/with \"quotes\" and \\ backslash.bin";
  c.checkpoint.dir = "ckpt";
  c.checkpoint.interval = 10;
  c.checkpoint.keep = 3;
  c.checkpoint.initial_load_path = "hf/tiny \"export\"";
  c.checkpoint.fallback = true;
  c.checkpoint.async_mode = "async";
  c.metrics.dir = "runs/x";
  c.comm.timeout_seconds = 30;
  c.precision.compile = true;
  c.prediction.present = true;
  c.prediction.step_time_s = 0.123456789;
  c.prediction.tokens_per_s_per_gpu = 4550.25;
  c.prediction.mfu = 0.5612;
  c.prediction.mem_peak_bytes = 123456789012.0;
  c.prediction.hardware = "cpu";
  c.prediction.mem_components = {{"parameters", 1024.0}, {"activations", 4096.5}};
  const std::string text = write_train_config(c);
  const TrainConfig r = parse_train_config(text, "written.toml");
  EXPECT_EQ(write_train_config(r), text);  // fixed point
  EXPECT_EQ(r.model.rope_theta, c.model.rope_theta);
  EXPECT_EQ(r.model.norm_eps, c.model.norm_eps);
  EXPECT_EQ(r.optimizer.lr, c.optimizer.lr);
  EXPECT_EQ(r.data.path, c.data.path);
  EXPECT_EQ(r.checkpoint.initial_load_path, c.checkpoint.initial_load_path);
  EXPECT_TRUE(r.checkpoint.fallback);
  EXPECT_EQ(r.checkpoint.async_mode, "async");
  EXPECT_EQ(r.prediction.step_time_s, c.prediction.step_time_s);
  EXPECT_EQ(r.prediction.mem_components, c.prediction.mem_components);
  EXPECT_EQ(r.training.seed, 7u);
  EXPECT_EQ(r.activation_checkpointing.ratio, 0.5);
  EXPECT_TRUE(r.precision.compile);
}

// Every recipe name reads back as itself through write_train_config / parse_train_config.
TEST(ConfigIo, Fp8RecipesRoundTrip) {
  for (Fp8Recipe r : {Fp8Recipe::none, Fp8Recipe::tensorwise, Fp8Recipe::rowwise, Fp8Recipe::rowwise_with_gw_hp}) {
    TrainConfig c = parse_train_config(kBase, "base.toml");
    c.precision.param_dtype = "bf16";
    c.precision.fp8 = r;
    const std::string text = write_train_config(c);
    EXPECT_NE(text.find(std::string("fp8 = \"") + to_string(r) + "\""), std::string::npos) << text;
    EXPECT_EQ(parse_train_config(text, "rt.toml").precision.fp8, r) << to_string(r);
    EXPECT_EQ(parse_fp8_recipe(to_string(r)), r);
  }
  EXPECT_FALSE(parse_fp8_recipe("true").has_value());
}

TEST(ConfigIo, AtomicWriteLeavesNoTempFile) {
  const auto dir = std::filesystem::temp_directory_path() / "shardcast_atomic_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_file_atomic(dir / "run.toml", "a = 1\n");
  write_file_atomic(dir / "run.toml", "a = 2\n");
  std::ifstream in(dir / "run.toml");
  std::string s((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(s, "a = 2\n");
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) n += 1, (void)e;
  EXPECT_EQ(n, 1);
  try {
    write_file_atomic(dir / "no" / "such" / "dir.toml", "x");
    ADD_FAILURE() << "wrote into a directory that does not exist";
  } catch (const ConfigError& e) {  // the path as given, not its temporary name
    EXPECT_EQ(e.file(), (dir / "no" / "such" / "dir.toml").string());
  }
  std::filesystem::remove_all(dir);
}

TEST(ConfigIo, PresetsLoadAndListEveryGpuOfHardwareCsv) {
  const auto hw = list_hardware_presets();
  for (const char* g : {"A100-40GB-SXM", "A100-80GB-SXM", "H100-80GB-SXM", "H100-96GB-HBM2e", "H100-unspecified",
                        "H200-141GB-SXM", "B200", "GB200", "GB300", "MI300X", "cpu"})
    EXPECT_NE(std::find(hw.begin(), hw.end(), g), hw.end()) << g;
  for (const auto& h : hw) EXPECT_NO_THROW(load_hardware(h)) << h;
  const auto models = list_model_presets();
  EXPECT_GE(models.size(), 12u);
  for (const auto& m : models) EXPECT_NO_THROW(load_model(m)) << m;
  const HardwareSpec h100 = load_hardware("H100-80GB-SXM");
  EXPECT_DOUBLE_EQ(h100.gpu.bf16_flops, 989.4e12);
  EXPECT_DOUBLE_EQ(h100.node.intra_node_bandwidth, 450e9);  // 3600 Gb/s
  EXPECT_DOUBLE_EQ(h100.peak_flops("fp8"), 1978.9e12);
  EXPECT_THROW(load_hardware("A100-40GB-SXM").peak_flops("fp8"), ConfigError);
}

// A typo in a preset's [efficiency] table is an error naming the file, the key and the closest
// valid key, like every other unknown key (the keys: kEfficiencyKeys).
TEST(ConfigIo, UnknownEfficiencyKeyInHardwarePresetIsRejected) {
  const std::filesystem::path p = std::filesystem::path(SHARDCAST_TEST_CONFIG_DIR) / "hardware" / "cpu.toml";
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string good = ss.str();
  EXPECT_NO_THROW(parse_hardware_toml(good, "cpu.toml"));
  const std::string bad = replace(good, "matmul_eff =", "matmul_efff =");
  try {
    parse_hardware_toml(bad, "typo.toml");
    ADD_FAILURE() << "matmul_efff accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("typo.toml"), std::string::npos) << m;
    EXPECT_NE(m.find("efficiency.matmul_efff"), std::string::npos) << m;
    EXPECT_NE(m.find("did you mean 'efficiency.matmul_eff'"), std::string::npos) << m;
  }
}

// One rule for every command: a file that cannot be opened is a ConfigError (exit 2) naming it.
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A link planted at any predictable temporary name (the old `<out>.tmp.<pid>`, guesses of a
// private name) never redirects the write: the temporary is created O_EXCL|O_NOFOLLOW under an
// unpredictable name, and a link at the output itself is replaced, not followed.
TEST(ConfigIo, AtomicWriteIgnoresPlantedLinks) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("shardcast_atomic_links_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path victim = dir / "victim";
  std::ofstream(victim) << "victim\n";
  const fs::path out = dir / "trace.json";
  std::vector<std::string> planted = {"trace.json.tmp." + std::to_string(::getpid()), ".trace.json.tmp",
                                      ".trace.json.0000000000000000", ".trace.json.XXXXXX", "trace.json.tmp"};
  for (int d = 1; d <= 20; ++d) planted.push_back("trace.json.tmp." + std::to_string(::getpid() + d));
  for (const auto& name : planted) fs::create_symlink(victim, dir / name);
  write_file_atomic(out, "{\"traceEvents\": []}\n");
  EXPECT_EQ(slurp(victim), "victim\n");
  EXPECT_EQ(slurp(out), "{\"traceEvents\": []}\n");
  EXPECT_FALSE(fs::is_symlink(out));
  // A link at the output: replaced by the file, its target untouched.
  fs::remove(out);
  fs::create_symlink(victim, out);
  write_file_atomic(out, "new\n");
  EXPECT_FALSE(fs::is_symlink(out));
  EXPECT_EQ(slurp(out), "new\n");
  EXPECT_EQ(slurp(victim), "victim\n");
  // Nothing left but the victim, the output and the planted links.
  size_t n = 0;
  for (auto& e : fs::directory_iterator(dir)) n += 1, (void)e;
  EXPECT_EQ(n, planted.size() + 2);
  // A directory as the output: said so, by name, before anything is created.
  try {
    write_file_atomic(dir, "x");
    ADD_FAILURE() << "wrote over a directory";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + ": is a directory: give the path of a file to write");
  }
  fs::remove_all(dir);
}

// Inputs that are not regular files or are over the limit are refused by name before reading;
// preset references that are neither names nor .toml paths are refused naming the key.
TEST(ConfigIo, HostileInputsAreRefusedByName) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("shardcast_hostile_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "dir.toml");
  fs::create_symlink("/dev/zero", dir / "zero.toml");
  { std::ofstream(dir / "big.toml"); }
  fs::resize_file(dir / "big.toml", kMaxConfigFileBytes + 1);  // sparse
  struct Case {
    const char* what;
    std::function<void()> run;
    std::string expect;  // a fragment of the message
  };
  const std::string zero = (dir / "zero.toml").string();
  const std::string big = (dir / "big.toml").string();
  const Case cases[] = {
      {"read_text /dev/zero", [] { read_text("/dev/zero"); }, "/dev/zero: is not a regular file"},
      {"hardware: a .toml link to /dev/zero", [&] { load_hardware(zero); }, zero + ": is not a regular file"},
      {"model: a directory", [&] { load_model((dir / "dir.toml").string()); }, "dir.toml: is a directory, not a model file"},
      {"hardware over the TOML limit", [&] { load_hardware(big); },
       big + ": is 16777217 bytes, over the limit of 16777216 bytes"},
      {"runtime path without .toml", [] { resolve_preset("../../../../etc/passwd", "runtimes", "runtime"); },
       "not a runtime preset: '../../../../etc/passwd' is read as a path"},
      {"hardware name with ..", [] { load_hardware("..H100"); }, "'..H100' is not a preset name"},
      {"empty name", [] { load_hardware(""); }, "'' is not a preset name"},
      {"model.preset a path to a non-.toml",
       [] { parse_train_config(replace(kBase, "preset = \"tiny-2l\"", "preset = \"../../../../etc/passwd\""), "bad.toml"); },
       "bad.toml: model.preset: not a model preset: '../../../../etc/passwd' is read as a path"},
      {"cluster.hardware a path to a non-.toml",
       [] { parse_train_config(replace(kBase, "hardware = \"cpu\"", "hardware = \"../../../../etc/passwd\""), "bad.toml"); },
       "bad.toml: cluster.hardware: '../../../../etc/passwd' is read as a path"},
      {"runtime a name with a space",
       [] { parse_train_config(std::string("runtime = \"a b\"\n") + kBase, "bad.toml"); },
       "bad.toml: runtime: 'a b' is not a preset name"},
  };
  for (const Case& c : cases) {
    try {
      c.run();
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << c.what << ": " << e.what();
    }
  }
  // A path that is a .toml is still read as a path (said so when missing).
  try {
    load_hardware((dir / "missing.toml").string());
    ADD_FAILURE() << "missing file accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("hardware file (read as a path): no such file"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(ConfigIo, MissingFileIsAConfigErrorNamingIt) {
  try {
    read_text("/nonexistent/run.toml");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/run.toml"), std::string::npos);
  }
}

// A configs directory without presets (SHARDCAST_CONFIG_DIR pointing elsewhere) is named as the
// problem, not the preset (found by a docs audit: "unknown model preset 'tiny-2l' (allowed:)").
TEST(ConfigIo, PresetLookupInAnEmptyConfigDirNamesTheDirectory) {
  const char* old = std::getenv("SHARDCAST_CONFIG_DIR");
  const std::string kept = old ? old : "";
  ::setenv("SHARDCAST_CONFIG_DIR", "/nonexistent/configs", 1);
  std::string m = "<no error>";
  try {
    load_model("tiny-2l");
  } catch (const ConfigError& e) {
    m = e.what();
  }
  if (old) ::setenv("SHARDCAST_CONFIG_DIR", kept.c_str(), 1); else ::unsetenv("SHARDCAST_CONFIG_DIR");
  EXPECT_NE(m.find("the configs directory /nonexistent/configs has no models/*.toml"), std::string::npos) << m;
  EXPECT_NE(m.find("SHARDCAST_CONFIG_DIR"), std::string::npos) << m;
  EXPECT_NO_THROW(load_model("tiny-2l"));  // restored
}

// One bad config: the text, then fragments the message must contain.
struct BadCase {
  const char* what;
  std::string text;
  std::vector<std::string> expect;
};

std::string message_of(const std::string& text) {
  try {
    parse_train_config(text, "bad.toml");
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const ConfigErrors& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ConfigIo, BadConfigsNameFileKeyAndAllowedValues) {
  const std::string b = kBase;
  const std::vector<BadCase> cases = {
      {"misspelt key", replace(b, "micro_batch = 2", "micro_bach = 2"),
       {"bad.toml", "training.micro_bach", "unknown key", "did you mean 'training.micro_batch'"}},
      {"misspelt table", replace(b, "[precision]", "[precison]"),
       {"bad.toml", "precison", "did you mean 'precision'"}},
      {"unknown strategy", replace(b, "\"hybrid_shard\"", "\"zero3\""),
       {"parallelism.sharding_strategy", "\"zero3\"", "full_shard | shard_grad_op | hybrid_shard | no_shard | shard_optimizer"}},
      {"strategy in upper case", replace(b, "\"hybrid_shard\"", "\"FULL_SHARD\""),
       {"parallelism.sharding_strategy", "allowed"}},
      {"unknown ac mode", replace(b, "mode = \"selective\"", "mode = \"op\""),
       {"activation_checkpointing.mode", "none | selective | full | selective_op"}},
      {"ratio above 1", replace(b, "ratio = 0.5", "ratio = 1.5"), {"activation_checkpointing.ratio", "(0, 1]"}},
      {"ratio zero", replace(b, "ratio = 0.5", "ratio = 0"), {"activation_checkpointing.ratio", "(0, 1]"}},
      {"micro_batch zero", replace(b, "micro_batch = 2", "micro_batch = 0"), {"training.micro_batch", ">= 1"}},
      {"micro_batch string", replace(b, "micro_batch = 2", "micro_batch = \"2\""),
       {"training.micro_batch", "expected an integer", "a string"}},
      {"micro_batch float", replace(b, "micro_batch = 2", "micro_batch = 2.5"),
       {"training.micro_batch", "expected an integer"}},
      {"seq_len above max", replace(b, "seq_len = 128", "seq_len = 1024"),
       {"training.seq_len", "1024", "max_seq_len = 256"}},
      {"grad_accum negative", replace(b, "grad_accum = 3", "grad_accum = -1"), {"training.grad_accum", ">= 1"}},
      {"hsdp size not dividing", replace(b, "hsdp_shard_size = 2", "hsdp_shard_size = 3"),
       {"parallelism.hsdp_shard_size", "does not divide the world size 4"}},
      {"hsdp size without hybrid", replace(b, "\"hybrid_shard\"", "\"full_shard\""),
       {"parallelism.hsdp_shard_size", "only allowed with sharding_strategy = \"hybrid_shard\""}},
      {"bad param dtype", replace(b, "param_dtype = \"fp32\"", "param_dtype = \"float32\""),
       {"precision.param_dtype", "fp32 | bf16 | fp16"}},
      {"bad reduce dtype", replace(b, "reduce_dtype = \"fp32\"", "reduce_dtype = \"int8\""),
       {"precision.reduce_dtype", "fp32 | bf16 | fp16"}},
      {"fp8 with fp32 params", replace(b, "[precision]", "[precision]\nfp8 = \"tensorwise\""), {"precision.fp8", "bf16"}},
      // precision.fp8 is a recipe name; the boolean of earlier files is an error naming them.
      {"fp8 as a boolean", replace(b, "[precision]", "[precision]\nfp8 = true"),
       {"precision.fp8", "expected a string", "boolean", "none | tensorwise | rowwise | rowwise_with_gw_hp"}},
      {"fp8 unknown recipe", replace(b, "[precision]", "[precision]\nfp8 = \"blockwise\""),
       {"precision.fp8", "\"blockwise\" is not allowed", "none | tensorwise | rowwise | rowwise_with_gw_hp"}},
      {"unknown model preset", replace(b, "\"tiny-2l\"", "\"tiny-2\""),
       {"model.preset", "unknown model preset 'tiny-2'", "did you mean 'tiny-2l'"}},
      // A name the file system refuses (ENAMETOOLONG) is an unknown preset, not a filesystem_error
      // (found by tests/fuzz/fuzz_train_config).
      {"model preset name too long", replace(b, "\"tiny-2l\"", "\"" + std::string(300, 'V') + "\""),
       {"model.preset", "unknown model preset 'VVVV"}},
      {"kv heads not dividing", replace(b, "preset = \"tiny-2l\"", "preset = \"tiny-2l\"\nn_kv_heads = 3"),
       {"model.n_kv_heads", "3 does not divide n_heads = 4"}},
      {"heads not dividing d_model", replace(b, "preset = \"tiny-2l\"", "preset = \"tiny-2l\"\nn_heads = 6\nn_kv_heads = 6"),
       {"model.n_heads", "does not divide d_model = 64"}},
      // Parameter counts that would overflow int64 (found by tests/fuzz/fuzz_model_toml: vocab
      // 5.6e16 x d_model 4096): refused before any integer product, naming the largest term.
      {"vocab beyond any model", replace(b, "preset = \"tiny-2l\"", "preset = \"tiny-2l\"\nvocab = 55555555555550432"),
       {"model.vocab", "parameters: at most 1e+15 are allowed"}},
      {"ffn_dim beyond any model", replace(b, "preset = \"tiny-2l\"", "preset = \"tiny-2l\"\nffn_dim = 9000000000000000000"),
       {"model.ffn_dim", "at most 1e+15"}},
      {"bad mlp type", replace(b, "preset = \"tiny-2l\"", "preset = \"tiny-2l\"\nmlp_type = \"relu\""),
       {"model.mlp_type", "swiglu | gelu"}},
      {"no model table", replace(b, "[model]\npreset = \"tiny-2l\"", ""), {"bad.toml", "model", "missing table"}},
      {"zero nodes", replace(b, "nodes = 1", "nodes = 0"), {"cluster.nodes", ">= 1"}},
      {"negative nic", replace(b, "nodes = 1", "nodes = 1\ninter_node_gbps = -5"),
       {"cluster.inter_node_gbps", ">= 0"}},
      // Below 0.1 Gb/s (shared/cluster_bounds.h) a step's timestamps absorb its compute time.
      {"nic below the slowest network", replace(b, "nodes = 1", "nodes = 1\ninter_node_gbps = 1e-30"),
       {"cluster.inter_node_gbps", "1e-30 is not allowed: must be 0 (the hardware preset's value) or a finite number >= 0.1 Gb/s"}},
      {"steps zero", replace(b, "steps = 20", "steps = 0"), {"training.steps", ">= 1"}},
      {"negative seed", replace(b, "seed = 7", "seed = -7"), {"training.seed", ">= 0"}},
      {"bool as string", replace(b, "[precision]", "[precision]\ncompile = \"yes\""),
       {"precision.compile", "expected a boolean"}},
      {"syntax error", replace(b, "steps = 20", "steps = = 20"), {"bad.toml", "TOML syntax error", "line"}},
      {"table given a value",
       "cluster = 4\n" + replace(b, "[cluster]\nhardware = \"cpu\"\nnodes = 1\ngpus_per_node = 4\n", ""),
       {"bad.toml: cluster", "expected a table", "an integer"}},
      {"bad optimizer", b + "\n[optimizer]\nname = \"sgd\"\n", {"optimizer.name", "adamw"}},
      {"bad lr", b + "\n[optimizer]\nlr = 0\n", {"optimizer.lr", "(0, 1)"}},
      {"bad decay", b + "\n[lr_schedule]\ndecay = \"step\"\n", {"lr_schedule.decay", "cosine | linear | constant"}},
      {"bad data format", b + "\n[data]\nformat = \"arrow\"\n", {"data.format", "llmc_bin"}},
      {"bad backend", b + "\n[comm]\nbackend = \"mpi\"\n", {"comm.backend", "auto | gloo | nccl"}},
      {"bad keep", b + "\n[checkpoint]\nkeep = 0\n", {"checkpoint.keep", ">= 1"}},
      {"infinite max_grad_norm", replace(b, "max_grad_norm = 1.0", "max_grad_norm = inf"),
       {"training.max_grad_norm", "inf is not allowed", "must be a finite number"}},
      {"nan max_grad_norm", replace(b, "max_grad_norm = 1.0", "max_grad_norm = nan"),
       {"training.max_grad_norm", "nan is not allowed"}},
      {"nan lr", b + "\n[optimizer]\nlr = nan\n", {"optimizer.lr", "nan is not allowed", "must be a finite number"}},
      {"infinite eps", b + "\n[optimizer]\neps = inf\n", {"optimizer.eps", "inf is not allowed", "must be a finite number"}},
      {"infinite weight decay", b + "\n[optimizer]\nweight_decay = inf\n", {"optimizer.weight_decay", "finite"}},
      {"infinite timeout", b + "\n[comm]\ntimeout_seconds = inf\n", {"comm.timeout_seconds", "inf is not allowed", "must be a finite number"}},
      {"nan ac ratio", replace(b, "ratio = 0.5", "ratio = nan"),
       {"activation_checkpointing.ratio", "nan is not allowed", "must be a finite number"}},
      {"bad async mode", b + "\n[checkpoint]\nasync_mode = \"background\"\n",
       {"checkpoint.async_mode", "\"background\" is not allowed", "disabled | async"}},
      {"fallback as string", b + "\n[checkpoint]\nfallback = \"yes\"\n", {"checkpoint.fallback", "expected a boolean"}},
      {"initial load and resume", b + "\n[checkpoint]\ninitial_load_path = \"hf\"\nresume_from = \"latest\"\n",
       {"bad.toml", "checkpoint.initial_load_path", "checkpoint.resume_from", "both set"}},
      {"initial load typo", b + "\n[checkpoint]\ninitial_load_pth = \"hf\"\n",
       {"bad.toml", "checkpoint.initial_load_pth", "unknown key", "did you mean 'checkpoint.initial_load_path'"}},
      {"unknown top-level key", b + "\nfoo = 1\n", {"bad.toml", "foo", "unknown key"}},
  };
  ASSERT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    const std::string msg = message_of(c.text);
    for (const auto& frag : c.expect)
      EXPECT_NE(msg.find(frag), std::string::npos) << c.what << ": expected '" << frag << "' in:\n" << msg;
  }
}

TEST(ConfigIo, AllCrossFieldErrorsReportedAtOnce) {
  std::string t = replace(kBase, "micro_batch = 2", "micro_batch = 0");
  t = replace(t, "steps = 20", "steps = 0");
  const std::string msg = message_of(t);
  EXPECT_NE(msg.find("training.micro_batch"), std::string::npos);
  EXPECT_NE(msg.find("training.steps"), std::string::npos);
}

// TableReader's array-of-strings getter: read, absent (left as is), and every wrong shape named
// by file, key and what it got.
TEST(TableReader, ArrayOfStrings) {
  const toml::table t = parse_toml("a = ['x', 'y']\nb = 'x'\nc = ['x', 2]\nd = []\n", "t.toml");
  TableReader r(t, "t.toml", "band[0].");
  std::vector<std::string> v = {"kept"};
  EXPECT_TRUE(r.get("a", v));
  EXPECT_EQ(v, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(r.get("d", v));
  EXPECT_TRUE(v.empty());
  v = {"kept"};
  EXPECT_FALSE(r.get("absent", v));
  EXPECT_EQ(v, (std::vector<std::string>{"kept"}));
  for (const char* bad : {"b", "c"}) {
    try {
      r.get(bad, v);
      FAIL() << bad << " was read as an array of strings";
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("t.toml"), std::string::npos) << m;
      EXPECT_NE(m.find(std::string("band[0].") + bad), std::string::npos) << m;
      EXPECT_NE(m.find("expected an array of strings"), std::string::npos) << m;
    }
  }
  EXPECT_EQ(v, (std::vector<std::string>{"kept"}));  // a failed read leaves the output as it was
}

TEST(ConfigIo, ClosestMatch) {
  EXPECT_EQ(closest_match("micro_bach", {"micro_batch", "seq_len"}), "micro_batch");
  EXPECT_EQ(closest_match("zzzzzz", {"micro_batch", "seq_len"}), "");
  // Equal distance (2): the longer common suffix wins, whatever the order of the candidates.
  EXPECT_EQ(closest_match("llama3-405b", {"llama3-70b", "llama3.1-405b"}), "llama3.1-405b");
  EXPECT_EQ(closest_match("llama3-405b", {"llama3.1-405b", "llama3-70b"}), "llama3.1-405b");
  // A word that begins a candidate names it, before any closer by distance ("H100" is 4 from B200).
  EXPECT_EQ(closest_match("H100", {"A100-80GB-SXM", "B200", "H100-80GB-SXM", "H100-unspecified"}), "H100-80GB-SXM");
}

}  // namespace
}  // namespace shardcast
