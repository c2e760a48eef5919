// emit: every emitted run.toml parses back to the same config and passes validation, the
// launch scripts pass `bash -n` and carry the rank variables, and the ecosystem files map the
// plan onto torchtitan / accelerate / fms-fsdp names (torchtitan.toml parses as TOML).
#include <gtest/gtest.h>

#include <functional>

#include <algorithm>

#include <cstdlib>
#include <spawn.h>
#include <sys/wait.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "planner/emit/emit.h"
#include "planner/emit/emit_ecosystem.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "planner/decide/search.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "tests/planner/test_util.h"

extern char** environ;

namespace shardcast::planner {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("shardcast_emit_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  return d;
}

TrainConfig config(const std::string& model, const std::string& gpu, int nodes, int gpn) {
  TrainConfig c;
  c.model = load_model(model);
  c.model_preset = model;
  c.cluster.hardware = gpu;
  c.cluster.nodes = nodes;
  c.cluster.gpus_per_node = gpn;
  c.training.seq_len = 4096;
  return c;
}

// `bash -n FILE`'s exit status, run without a shell (the path is an argument, never parsed).
int bash_syntax_check(const fs::path& p) {
  std::string bash = "bash", n = "-n", file = p.string();
  char* argv[] = {bash.data(), n.data(), file.data(), nullptr};
  pid_t pid = 0;
  if (::posix_spawnp(&pid, "bash", nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Emit, SearchWinnerRoundTripsAndScriptsPassBashN) {
  SearchSpace s;
  s.model = load_model("llama3-8b");
  s.model_preset = "llama3-8b";
  s.hardware = "H100-80GB-SXM";
  s.gpus = 64;
  s.seq_len = 8192;
  s.global_batch_tokens = int64_t(4) << 20;
  s.reduce_dtypes = {"fp32"};  // torchtitan reduces in fp32 only: every file but accelerate's is written
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const SearchResult r = search(s, hw);
  ASSERT_FALSE(r.ranked.empty());
  const Candidate& best = r.ranked[0];
  const fs::path dir = fresh_dir("winner");
  const EmitResult res = emit_files(best.config, hw, dir.string(), false);
  const auto& paths = res.written;
  // Every file is either written or named with the reason its runtime cannot run the plan.
  size_t skipped_files = 0;
  for (const auto& s : res.skipped) skipped_files += 1 + size_t(std::count(s.begin(), s.begin() + long(s.find(':')), ','));
  EXPECT_EQ(paths.size() + skipped_files, 7u);
  for (const auto& p : paths) EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_EQ(fs::path(paths[0]).filename(), "run.toml");

  // run.toml: parses (read_train_config validates) to the same configuration.
  const TrainConfig back = read_train_config((dir / "run.toml").string());
  EXPECT_TRUE(validate(back).empty());
  EXPECT_EQ(back.parallelism.sharding_strategy, best.config.parallelism.sharding_strategy);
  EXPECT_EQ(back.parallelism.hsdp_shard_size, best.config.parallelism.hsdp_shard_size);
  EXPECT_EQ(back.training.micro_batch, best.config.training.micro_batch);
  EXPECT_EQ(back.training.grad_accum, best.config.training.grad_accum);
  EXPECT_EQ(back.training.seq_len, 8192);
  EXPECT_EQ(back.activation_checkpointing.mode, best.config.activation_checkpointing.mode);
  EXPECT_EQ(back.precision.reduce_dtype, best.config.precision.reduce_dtype);
  EXPECT_EQ(back.world_size(), 64);
  EXPECT_EQ(back.model.n_layers, 32);
  ASSERT_TRUE(back.prediction.present);
  EXPECT_NEAR(back.prediction.tokens_per_s_per_gpu, best.prediction.tokens_per_s_per_gpu,
              1e-9 * best.prediction.tokens_per_s_per_gpu);
  EXPECT_EQ(back.prediction.hardware, "H100-80GB-SXM");
  EXPECT_FALSE(back.prediction.mem_components.empty());
  // Predicting the read-back config gives the emitted prediction.
  EXPECT_EQ(back.prediction.runtime, "shardcast-train");
  EXPECT_NEAR(plan(back, hw, resolve_plan_options(back, hw)).tokens_per_s_per_gpu, best.prediction.tokens_per_s_per_gpu,
              1e-9 * best.prediction.tokens_per_s_per_gpu);

  // Scripts: valid bash, executable, with the rank environment.
  for (const char* script : {"launch.sbatch", "launch_torchrun.sh"}) {
    EXPECT_EQ(bash_syntax_check(dir / script), 0) << script;
    EXPECT_NE(fs::status(dir / script).permissions() & fs::perms::owner_exec, fs::perms::none) << script;
  }
  const std::string sbatch = slurp(dir / "launch.sbatch");
  EXPECT_TRUE(contains(sbatch, "#SBATCH --nodes=8\n"));
  EXPECT_TRUE(contains(sbatch, "#SBATCH --ntasks-per-node=8\n"));
  EXPECT_TRUE(contains(sbatch, "scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed -n 1p"));
  EXPECT_TRUE(contains(sbatch, "export WORLD_SIZE="));
  EXPECT_TRUE(contains(sbatch, "export LOCAL_WORLD_SIZE="));
  EXPECT_TRUE(contains(sbatch, "export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID"));
  EXPECT_TRUE(contains(sbatch, "srun "));
  EXPECT_TRUE(contains(sbatch, "run run.toml"));
  const std::string torchrun = slurp(dir / "launch_torchrun.sh");
  EXPECT_TRUE(contains(torchrun, "NPROC_PER_NODE=8\n"));
  EXPECT_TRUE(contains(torchrun, "NNODES=8\n"));
  EXPECT_TRUE(contains(torchrun, "torchrun --nnodes \"$NNODES\" --nproc-per-node \"$NPROC_PER_NODE\""));
  EXPECT_TRUE(contains(torchrun, "--no-python \"${SHARDCAST_TRAIN:-shardcast-train}\" run run.toml"));

  // torchtitan.toml is TOML and says the same thing.
  const toml::table tt = toml::parse_file((dir / "torchtitan.toml").string());
  EXPECT_EQ(tt["model"]["flavor"].value_or(std::string()), "8B");
  EXPECT_EQ(tt["training"]["local_batch_size"].value_or(0), best.config.training.micro_batch);
  EXPECT_EQ(tt["training"]["seq_len"].value_or(0), 8192);
  EXPECT_EQ(tt["training"]["global_batch_size"].value_or(int64_t(0)),
            best.config.tokens_per_step() / best.config.training.seq_len);
  EXPECT_DOUBLE_EQ(tt["training"]["max_norm"].value_or(0.0), 1.0);
  EXPECT_EQ(tt["parallelism"]["data_parallel_replicate_degree"].value_or(0) *
                tt["parallelism"]["data_parallel_shard_degree"].value_or(0),
            64);
}

TEST(Emit, EveryStrategyAndCheckpointingModeRoundTrips) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  int k = 0;
  for (auto s : {ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op, ShardingStrategy::hybrid_shard,
                 ShardingStrategy::no_shard})
    for (auto ac : {AcMode::none, AcMode::selective, AcMode::full, AcMode::selective_op}) {
      TrainConfig c = config("tiny-2l", "A100-80GB-SXM", 2, 4);
      c.training.seq_len = 128;
      c.parallelism.sharding_strategy = s;
      c.parallelism.hsdp_shard_size = s == ShardingStrategy::hybrid_shard ? 4 : 0;
      c.activation_checkpointing.mode = ac;
      c.activation_checkpointing.ratio = ac == AcMode::selective ? 0.5 : 1.0;
      c.training.grad_accum = 2;
      const fs::path dir = fresh_dir("matrix" + std::to_string(k++));
      SCOPED_TRACE(describe_config(c));
      const EmitResult res = emit_files(c, hw, dir.string(), false);
      EXPECT_NO_THROW(toml::parse_file((dir / "torchtitan.toml").string()));
      if (ac == AcMode::selective_op) {  // shardcast-train cannot run it: no run.toml, and emit says why
        EXPECT_FALSE(fs::exists(dir / "run.toml"));
        ASSERT_FALSE(res.skipped.empty());
        EXPECT_NE(res.skipped.front().find("selective_op"), std::string::npos) << res.skipped.front();
        continue;
      }
      const TrainConfig back = read_train_config((dir / "run.toml").string());
      EXPECT_EQ(back.parallelism.sharding_strategy, s);
      EXPECT_EQ(back.activation_checkpointing.mode, ac);
      EXPECT_EQ(back.world_size(), 8);
      EXPECT_EQ(bash_syntax_check(dir / "launch.sbatch"), 0);
      EXPECT_EQ(bash_syntax_check(dir / "launch_torchrun.sh"), 0);
    }
}

TEST(Emit, InvalidConfigWritesNothing) {
  TrainConfig c = config("llama3-8b", "H100-80GB-SXM", 1, 8);
  c.parallelism.sharding_strategy = ShardingStrategy::hybrid_shard;
  c.parallelism.hsdp_shard_size = 3;  // does not divide 8
  const fs::path dir = fresh_dir("invalid");
  EXPECT_THROW(emit_files(c, load_hardware("H100-80GB-SXM"), dir.string(), false), ConfigErrors);
  EXPECT_FALSE(fs::exists(dir / "run.toml"));
}

// Non-comment lines of a text file.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l[0] != '#') out.push_back(l);
  return out;
}


// The two-level YAML subset accelerate writes: `key: value` and `section:` + `  key: value`.
std::map<std::string, std::string> parse_yaml(const std::string& text) {
  std::map<std::string, std::string> m;
  std::string section;
  for (std::string l : lines_of(text)) {
    const size_t hash = l.find("  #");
    if (hash != std::string::npos) l = l.substr(0, hash);
    const bool nested = l.rfind("  ", 0) == 0;
    const size_t colon = l.find(':');
    EXPECT_NE(colon, std::string::npos) << l;
    if (colon == std::string::npos) continue;
    const std::string key = l.substr(nested ? 2 : 0, colon - (nested ? 2 : 0));
    std::string value = l.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    while (!value.empty() && value.back() == ' ') value.pop_back();
    if (!nested && value.empty()) {
      section = key;
      continue;
    }
    EXPECT_TRUE(!nested || !section.empty()) << l;
    m[nested ? section + "." + key : key] = value;
  }
  return m;
}

// The value at "section.key" of a TOML table, spelled as on a command line.
std::string toml_as_arg(const toml::table& t, const std::string& dotted) {
  const toml::node* n = t.at_path(dotted).node();
  if (!n) return "<missing>";
  if (auto v = n->value<std::string>(); v && n->is_string()) return *v;
  if (n->is_integer()) return std::to_string(*n->value<int64_t>());
  if (n->is_boolean()) return *n->value<bool>() ? "true" : "false";
  if (n->is_floating_point()) return fmt::format("float:{:.17g}", *n->value<double>());
  if (const toml::array* a = n->as_array()) {
    std::string s;
    for (const auto& e : *a) s += (s.empty() ? "" : ",") + e.value_or(std::string());
    return s;
  }
  return "<unsupported>";
}

// Names in users_ecosystem.md §2.3-2.5 (torchtitan job_config, accelerate, fms-fsdp train_config).
const std::set<std::string> kTorchtitanKeys = {
    "model.name", "model.flavor", "model.converters", "optimizer.name", "optimizer.lr", "optimizer.eps",
    "optimizer.weight_decay", "lr_scheduler.warmup_steps", "lr_scheduler.decay_ratio", "lr_scheduler.decay_type",
    "lr_scheduler.min_lr_factor", "training.local_batch_size", "training.global_batch_size", "training.seq_len",
    "training.max_norm", "training.steps", "training.mixed_precision_param", "training.mixed_precision_reduce",
    "parallelism.data_parallel_replicate_degree", "parallelism.data_parallel_shard_degree",
    "parallelism.fsdp_reshard_after_forward", "activation_checkpoint.mode", "activation_checkpoint.selective_ac_option",
    "compile.enable", "compile.components", "checkpoint.enable", "checkpoint.folder", "checkpoint.interval",
    "checkpoint.keep_latest_k", "checkpoint.async_mode", "checkpoint.initial_load_path",
    "checkpoint.initial_load_in_hf", "metrics.log_freq", "comm.train_timeout_seconds", "debug.seed",
    "optimizer.beta1", "optimizer.beta2",
    "quantize.linear.float8.recipe_name", "quantize.linear.float8.filter_fqns",
    "optimizer.implementation"};  // job_config.py Optimizer (tests/planner/data/torchtitan_keys_v0.2.txt)
const std::set<std::string> kAccelerateKeys = {
    "compute_environment", "distributed_type", "mixed_precision", "downcast_bf16", "num_machines", "num_processes",
    "machine_rank", "main_process_port", "rdzv_backend", "same_network", "use_cpu", "dynamo_config.dynamo_backend",
    "fsdp_config.fsdp_version", "fsdp_config.fsdp_sharding_strategy", "fsdp_config.fsdp_use_orig_params",
    "fsdp_config.fsdp_reshard_after_forward", "fsdp_config.fsdp_auto_wrap_policy",
    "fsdp_config.fsdp_transformer_layer_cls_to_wrap", "fsdp_config.fsdp_state_dict_type",
    "fsdp_config.fsdp_offload_params", "fsdp_config.fsdp_cpu_ram_efficient_loading",
    "fsdp_config.fsdp_activation_checkpointing", "parallelism_config.parallelism_config_dp_replicate_size",
    "parallelism_config.parallelism_config_dp_shard_size"};
const std::set<std::string> kFmsKeys = {
    "model_variant", "ckpt_load_path", "ckpt_save_path", "use_dummy_dataset", "data_path", "datasets", "weights",
    "seq_length", "vocab_size", "sep_token", "logical_shards", "sharding_strategy", "fsdp_activation_checkpointing",
    "selective_checkpointing", "mixed_precision", "low_cpu_fsdp", "batch_size", "num_steps", "learning_rate",
    "grad_clip_thresh", "seed", "use_profiler", "profiler_rank0_only", "report_interval", "checkpoint_interval",
    "tracker", "tracker_dir", "tracker_project_name", "tracker_run_id", "use_torch_compile"};

TEST(EmitEcosystem, FilesParseBackUseKnownNamesAndAgree) {
  int checked = 0;
  for (auto s : {ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op, ShardingStrategy::hybrid_shard,
                 ShardingStrategy::no_shard})
    for (auto ac : {AcMode::none, AcMode::selective, AcMode::full, AcMode::selective_op})
      for (bool extras : {false, true}) {
        TrainConfig c = config("llama3-8b", "H100-80GB-SXM", 4, 8);
        c.parallelism.sharding_strategy = s;
        c.parallelism.hsdp_shard_size = s == ShardingStrategy::hybrid_shard ? 8 : 0;
        c.activation_checkpointing.mode = ac;
        c.activation_checkpointing.ratio = ac == AcMode::selective ? 0.5 : 1.0;
        c.training.micro_batch = 2;
        c.training.grad_accum = 3;
        c.precision.compile = extras;
        c.precision.fp8 = extras ? Fp8Recipe::rowwise : Fp8Recipe::none;
        if (extras) {
          c.checkpoint.dir = "ckpt";
          c.checkpoint.interval = 50;
          c.lr_schedule.decay = "constant";
        }
        SCOPED_TRACE(describe_config(c));
        const int W = c.world_size();

        // torchtitan: the overrides and the TOML say the same thing, with known names only.
        const toml::table tt = toml::parse(render_torchtitan_toml(c));
        const auto over = test::parse_args(render_torchtitan_overrides(c), /*tyro=*/true);
        // Every leaf key, at any depth ([quantize.linear.float8] is three tables down).
        size_t toml_keys = 0;
        std::function<void(const toml::table&)> count = [&](const toml::table& t) {
          for (const auto& [k, v] : t) {
            if (const toml::table* sub = v.as_table()) count(*sub);
            else ++toml_keys;
          }
        };
        count(tt);
        EXPECT_EQ(over.size(), toml_keys);
        for (const auto& [k, v] : over) {
          EXPECT_TRUE(kTorchtitanKeys.count(k)) << "unknown torchtitan key " << k;
          const std::string in_toml = toml_as_arg(tt, k);
          if (in_toml.rfind("float:", 0) == 0)
            EXPECT_DOUBLE_EQ(std::stod(in_toml.substr(6)), std::stod(v)) << k;
          else
            EXPECT_EQ(in_toml, v) << k;
        }
        EXPECT_EQ(std::stoi(over.at("parallelism.data_parallel_replicate_degree")) *
                      std::stoi(over.at("parallelism.data_parallel_shard_degree")),
                  W);
        EXPECT_EQ(std::stoi(over.at("training.global_batch_size")), 2 * 3 * W);
        EXPECT_EQ(over.at("activation_checkpoint.mode"),
                  ac == AcMode::selective_op ? "selective" : std::string(to_string(ac)));
        if (ac == AcMode::selective_op) {
          EXPECT_EQ(over.at("activation_checkpoint.selective_ac_option"), "op");
        }
        // The AdamW the plan charged, in torchtitan's spelling, for each generation (foreach
        // before 6e4988550, fused after).
        for (const auto& [rt, impl] : std::vector<std::pair<std::string, std::string>>{
                 {"torchtitan-2024-10", "foreach"}, {"torchtitan-2025-02", "fused"}, {"torchtitan-2025-07", "fused"}, {"torchtitan", "fused"}}) {
          TrainConfig g = c;
          g.runtime = rt;
          EXPECT_EQ(test::parse_args(render_torchtitan_overrides(g), /*tyro=*/true).at("optimizer.implementation"), impl) << rt;
        }

        // accelerate: known names, the right process count and strategy.
        const auto acc = parse_yaml(render_accelerate_yaml(c));
        for (const auto& [k, v] : acc) EXPECT_TRUE(kAccelerateKeys.count(k)) << "unknown accelerate key " << k;
        EXPECT_EQ(acc.at("num_processes"), std::to_string(W));
        EXPECT_EQ(acc.at("num_machines"), "4");
        EXPECT_EQ(acc.at("fsdp_config.fsdp_activation_checkpointing"), ac == AcMode::none ? "false" : "true");
        EXPECT_EQ(acc.count("parallelism_config.parallelism_config_dp_shard_size"),
                  s == ShardingStrategy::hybrid_shard ? 1u : 0u);

        // fms-fsdp: known names, the per-GPU batch.
        const auto fms = test::parse_args(render_fms_fsdp_args(c));
        for (const auto& [k, v] : fms) EXPECT_TRUE(kFmsKeys.count(k)) << "unknown fms-fsdp key " << k;
        EXPECT_EQ(fms.at("batch_size"), "2");
        EXPECT_EQ(fms.at("seq_length"), "4096");
        EXPECT_EQ(fms.at("use_torch_compile"), extras ? "True" : "False");
        // Saving cannot be turned off in fms-fsdp: the plan's folder and interval, or, without a
        // folder, one of the run's own saved at the end, never fms-fsdp's default /fsx/output/ckpt.
        EXPECT_EQ(fms.at("ckpt_save_path"), extras ? "ckpt" : "fms_ckpt");
        EXPECT_EQ(fms.at("ckpt_load_path"), fms.at("ckpt_save_path"));
        EXPECT_EQ(fms.at("checkpoint_interval"), extras ? "50" : std::to_string(c.training.steps));
        ++checked;
      }
  EXPECT_EQ(checked, 32);
}

TEST(EmitEcosystem, HybridShardMapsToEachToolsNames) {
  TrainConfig c = config("llama2-7b", "A100-80GB-SXM", 16, 8);
  c.parallelism.sharding_strategy = ShardingStrategy::hybrid_shard;
  c.parallelism.hsdp_shard_size = 16;  // two nodes per shard group, 8 replicas
  c.activation_checkpointing.mode = AcMode::selective;
  c.activation_checkpointing.ratio = 0.75;
  c.training.micro_batch = 2;
  c.training.grad_accum = 4;
  c.precision.compile = true;

  const std::string titan = render_torchtitan_overrides(c);
  EXPECT_TRUE(contains(titan, "--parallelism.data_parallel_replicate_degree=8\n"));
  EXPECT_TRUE(contains(titan, "--parallelism.data_parallel_shard_degree=16\n"));
  EXPECT_TRUE(contains(titan, "--training.local_batch_size=2\n"));
  EXPECT_TRUE(contains(titan, "--training.global_batch_size=1024\n"));  // 2 x 4 x 128
  EXPECT_TRUE(contains(titan, "--activation_checkpoint.mode=selective\n"));
  // 0.75 is not 1/k: every block is checkpointed (k = 1), and a comment says so.
  EXPECT_TRUE(contains(titan, "--activation_checkpoint.selective_ac_option=1\n"));
  EXPECT_TRUE(contains(titan, "is not 1/k"));
  EXPECT_TRUE(contains(titan, "--compile.enable\n"));  // tyro: a boolean is a flag, no value
  // list[str] since torchtitan e98ae9953 (v0.2.1, v0.2.2): one comma-separated value (manager.py list_str_rule).
  EXPECT_TRUE(contains(titan, "--compile.components=model,loss\n"));
  // llama2-7b is not a torchtitan llama3 flavor: named, with a comment.
  EXPECT_TRUE(contains(titan, "no torchtitan llama3 flavor"));

  const std::string acc = render_accelerate_yaml(c);
  EXPECT_TRUE(contains(acc, "num_processes: 128"));
  EXPECT_TRUE(contains(acc, "num_machines: 16\n"));
  EXPECT_TRUE(contains(acc, "fsdp_version: 2\n"));
  EXPECT_TRUE(contains(acc, "parallelism_config_dp_replicate_size: 8\n"));
  EXPECT_TRUE(contains(acc, "parallelism_config_dp_shard_size: 16\n"));
  EXPECT_TRUE(contains(acc, "fsdp_activation_checkpointing: true\n"));
  EXPECT_TRUE(contains(acc, "dynamo_backend: INDUCTOR"));

  const std::string fms = render_fms_fsdp_args(c);
  EXPECT_TRUE(contains(fms, "--model_variant=llama2_7b\n"));
  EXPECT_TRUE(contains(fms, "--sharding_strategy=hsdp\n"));
  EXPECT_TRUE(contains(fms, "shards within one node"));  // the plan's group is 2 nodes
  EXPECT_TRUE(contains(fms, "--selective_checkpointing=0.75\n"));
  EXPECT_TRUE(contains(fms, "--batch_size=2\n"));
  EXPECT_TRUE(contains(fms, "no gradient accumulation"));
  EXPECT_TRUE(contains(fms, "--use_torch_compile=True\n"));
}

TEST(EmitEcosystem, NoShardAndModelNames) {
  TrainConfig c = config("llama3-70b", "H100-80GB-SXM", 4, 8);
  c.parallelism.sharding_strategy = ShardingStrategy::no_shard;
  EXPECT_TRUE(contains(render_fms_fsdp_args(c), "--sharding_strategy=ddp\n"));
  EXPECT_TRUE(contains(render_fms_fsdp_args(c), "--model_variant=llama3_70b\n"));
  EXPECT_TRUE(contains(render_accelerate_yaml(c), "fsdp_sharding_strategy: NO_SHARD\n"));
  EXPECT_TRUE(contains(render_torchtitan_overrides(c), "--parallelism.data_parallel_replicate_degree=32\n"));
  EXPECT_EQ(torchtitan_flavor(load_model("llama3-70b"), TorchtitanVersion::v0_2), "70B");
  EXPECT_EQ(torchtitan_flavor(load_model("llama3.1-405b"), TorchtitanVersion::v0_2), "405B");
  EXPECT_EQ(torchtitan_flavor(load_model("llama2-7b"), TorchtitanVersion::current), "");
  // llama3.2-1b is the current generation's "1B" (tied embeddings, _1b @b5bcd76c6); v0.2 has no 1B.
  EXPECT_EQ(torchtitan_flavor(load_model("llama3.2-1b"), TorchtitanVersion::current), "1B");
  EXPECT_EQ(torchtitan_flavor(load_model("llama3.2-1b"), TorchtitanVersion::v0_2), "");
  EXPECT_EQ(fms_fsdp_variant(load_model("llama2-13b")), "llama2_13b");
  EXPECT_EQ(every_kth_block(0.5), 2);
  EXPECT_EQ(every_kth_block(0.25), 4);
  EXPECT_EQ(every_kth_block(1.0 / 3.0), 3);
  EXPECT_EQ(every_kth_block(0.75), 1);
}

// The numbers an emitted file carries are those of what it runs: fms-fsdp's arguments cannot
// say fp32 reduction, gradient accumulation, shard_grad_op, an HSDP group across nodes or
// op-level checkpointing, so its target is predicted for bf16 reduction, grad_accum 1 (steps x4),
// full_shard, one node's group and every block checkpointed, and the file says so.
TEST(EmitEcosystem, EachFileIsPredictedAsItRuns) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = config("llama3-8b", "H100-80GB-SXM", 4, 8);  // 32 GPUs
  c.parallelism.sharding_strategy = ShardingStrategy::hybrid_shard;
  c.parallelism.hsdp_shard_size = 16;
  c.activation_checkpointing.mode = AcMode::selective_op;
  c.training.grad_accum = 4;
  c.training.steps = 10;
  c.precision.reduce_dtype = "fp32";
  const TrainConfig fms = as_emitted(c, "fms-fsdp", TorchtitanVersion::v0_2);
  EXPECT_EQ(fms.precision.reduce_dtype, "bf16");
  EXPECT_EQ(fms.training.grad_accum, 1);
  EXPECT_EQ(fms.training.steps, 40);
  EXPECT_EQ(fms.parallelism.hsdp_shard_size, 8);
  EXPECT_EQ(fms.activation_checkpointing.mode, AcMode::full);
  // What runs as planned is the plan: torchtitan runs selective_op, hybrid groups and
  // accumulation as they are.
  EXPECT_EQ(describe_config(as_emitted(c, "torchtitan", TorchtitanVersion::v0_2)), describe_config(c));
  // The label names every mesh setting that differs from run.toml's default, so that the check
  // above sees an emitter that changes one (found by an audit: tp_async, pp_microbatch,
  // pp_virtual_stages and cp_rotate were not in it).
  TrainConfig m = c;
  m.parallelism.tp = 2;
  m.parallelism.cp = 2;
  m.parallelism.pp = 2;
  m.parallelism.tp_async = true;
  m.parallelism.cp_rotate = CpRotate::alltoall;
  m.parallelism.pp_schedule = PpSchedule::interleaved_1f1b;
  m.parallelism.pp_virtual_stages = 3;
  m.parallelism.pp_microbatch = 2;
  const std::string label = describe_config(m);
  for (const char* w : {"tp 2 tp_async", "cp 2 cp_rotate alltoall", "pp 2 Interleaved1F1B pp_virtual_stages 3 pp_microbatch 2"})
    EXPECT_NE(label.find(w), std::string::npos) << label;
  for (auto change : std::vector<std::function<void(TrainConfig&)>>{
           [](TrainConfig& t) { t.parallelism.tp_async = false; },
           [](TrainConfig& t) { t.parallelism.cp_rotate = CpRotate::allgather; },
           [](TrainConfig& t) { t.parallelism.pp_virtual_stages = 2; },
           [](TrainConfig& t) { t.parallelism.pp_microbatch = 1; }}) {
    TrainConfig other = m;
    change(other);
    EXPECT_NE(describe_config(other), label);
  }
  for (const EmitTarget& t : emit_targets(c, hw)) {
    if (t.runtime != "fms-fsdp") continue;
    ASSERT_TRUE(t.refusal.empty()) << t.refusal;
    TrainConfig r = fms;
    r.runtime = "fms-fsdp";
    const Prediction want = plan(r, hw, resolve_plan_options(r, hw));
    EXPECT_EQ(t.prediction.tokens_per_s_per_gpu, want.tokens_per_s_per_gpu);
    EXPECT_EQ(t.prediction.mem_peak_bytes, want.mem_peak_bytes);
  }
  const std::string dir = testing::TempDir() + "/emit_as_run";
  std::filesystem::remove_all(dir);
  emit_files(c, hw, dir, /*force=*/true, TorchtitanVersion::v0_2);
  std::ifstream in(dir + "/fms_fsdp_args.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_TRUE(contains(text, "# As fms-fsdp runs this file")) << text;
  std::filesystem::remove_all(dir);
}

// emit writes its files as one set and replaces nothing unasked: a second emit into the same
// directory is refused naming the files (none changed); --overwrite (overwrite = true) replaces
// them and removes an earlier plan's other emitted files (here DeepSpeed's, after a plan of
// another runtime); the input config in that directory is never replaced; a file that cannot be
// staged (a directory in its place) leaves every other file as it was.
TEST(Emit, WritesOneSetAndNeverReplacesUnasked) {
  TrainConfig ds = read_train_config((fs::path(config_dir()) / "examples/llama3-8b-8xH100.toml").string());
  ds.activation_checkpointing.mode = AcMode::full;
  ds.runtime = "deepspeed";
  TrainConfig st = ds;
  st.runtime = "shardcast-train";
  st.training.micro_batch = 2;
  const HardwareSpec hw = load_hardware(ds.cluster.hardware);
  const fs::path dir = fresh_dir("one_set");
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  const EmitResult first = emit_files(ds, hw, dir.string(), true);
  ASSERT_TRUE(fs::exists(dir / "ds_config.json"));
  const std::string run_toml = read(dir / "run.toml");
  try {
    emit_files(st, hw, dir.string(), true);
    ADD_FAILURE() << "a second emit into the same directory was not refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("already holds run.toml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ds_config.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(dir / "run.toml"), run_toml);
  const EmitResult second = emit_files(st, hw, dir.string(), true, TorchtitanVersion::v0_2, nullptr, true);
  std::set<std::string> removed;
  for (const auto& p : second.removed) removed.insert(fs::path(p).filename().string());
  EXPECT_EQ(removed, (std::set<std::string>{"ds_config.json", "launch_deepspeed.sh"}));
  for (const auto& n : removed) EXPECT_FALSE(fs::exists(dir / n)) << n;
  EXPECT_EQ(read_train_config((dir / "run.toml").string()).training.micro_batch, 2);  // the second plan's

  // An earlier plan's file that cannot be removed (a non-empty directory at ds_config.json) stops
  // the overwrite with nothing of the new set written.
  const EmitResult third_before = emit_files(ds, hw, (dir / "x").string(), true);
  (void)third_before;
  fs::remove(dir / "x" / "ds_config.json");
  fs::create_directories(dir / "x" / "ds_config.json" / "keep");
  const std::string x_run_toml = read(dir / "x" / "run.toml");
  EXPECT_THROW(emit_files(st, hw, (dir / "x").string(), true, TorchtitanVersion::v0_2, nullptr, true), InputError);
  EXPECT_EQ(read(dir / "x" / "run.toml"), x_run_toml);  // micro_batch 1's, not the new plan's
  // The input config is never replaced, --overwrite or not.
  const fs::path own = fresh_dir("own_input");
  fs::create_directories(own);
  fs::copy_file((fs::path(config_dir()) / "examples/llama3-8b-8xH100.toml").string(), own / "run.toml");
  TrainConfig in = read_train_config((own / "run.toml").string());
  const std::string before = read(own / "run.toml");
  for (bool overwrite : {false, true}) {
    try {
      emit_files(in, hw, own.string(), true, TorchtitanVersion::v0_2, nullptr, overwrite);
      ADD_FAILURE() << "the input config was replaced (overwrite " << overwrite << ")";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("is the input config"), std::string::npos) << e.what();
    }
    EXPECT_EQ(read(own / "run.toml"), before);
    EXPECT_EQ(std::distance(fs::directory_iterator(own), fs::directory_iterator()), 1);
  }

  // A target that cannot be staged: nothing of the set lands, no temporary is left.
  const fs::path half = fresh_dir("half");
  fs::create_directories(half / "torchtitan.toml");
  EXPECT_THROW(emit_files(st, hw, half.string(), true, TorchtitanVersion::v0_2, nullptr, true), ConfigError);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(half)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"torchtitan.toml"});
  for (const fs::path& d : {dir, own, half}) fs::remove_all(d);
}

}  // namespace
}  // namespace shardcast::planner
