// The DeepSpeed ZeRO runtime (configs/runtimes/deepspeed.toml): its [zero] table is read strictly;
// the stage follows the strategy and the other strategies are refused by name; DeepSpeed's own
// buffers are what zero_memory.h states, on top of what the same terms give without them; and
// ds_config.json holds only keys DeepSpeed reads at the commit of
// tests/planner/data/deepspeed_keys.txt, with their kinds, and the values of the plan.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "planner/decide/search.h"
#include "planner/emit/emit.h"
#include "planner/emit/emit_deepspeed.h"
#include "planner/evidence/import/run_import.h"
#include "planner/evidence/import/train_log.h"
#include "planner/model/plan.h"
#include "planner/model/plan_stages.h"
#include "planner/model/runtime.h"
#include "planner/model/zero_memory.h"
#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "shared/trainer_checks.h"
#include "tests/planner/test_util.h"

namespace shardcast::planner {
namespace {

using test::make_config;

// deepspeed_keys.txt: "KEY KIND" per line.
std::map<std::string, std::string> ds_keys() {
  std::ifstream in(std::string(SHARDCAST_TEST_DATA_DIR) + "/deepspeed_keys.txt");
  EXPECT_TRUE(in);
  std::map<std::string, std::string> keys;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    keys[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return keys;
}

// Does `v` have the JSON kind DeepSpeed's field takes (the key list's kind or annotation)?
bool kind_ok(const nlohmann::json& v, const std::string& kind) {
  if (kind == "any") return true;
  if (kind == "bool") return v.is_boolean();
  if (kind == "Optional[bool]") return v.is_boolean() || v.is_null();
  if (kind == "int") return v.is_number_integer();
  if (kind == "float") return v.is_number();
  if (kind == "ZeroStageEnum") return v.is_number_integer() && v.get<int>() >= 0 && v.get<int>() <= 3;
  return false;  // a kind this test does not know: the emitter writes no such key
}

void check_keys(const nlohmann::json& j, const std::string& prefix, const std::map<std::string, std::string>& known) {
  for (const auto& [k, v] : j.items()) {
    const std::string key = prefix + k;
    ASSERT_TRUE(known.count(key)) << "not a ds_config.json key of DeepSpeed@38327e07f: " << key;
    EXPECT_TRUE(kind_ok(v, known.at(key))) << key << " = " << v.dump() << " is not " << known.at(key);
    // Sub-keys DeepSpeed reads by name (bf16.enabled, optimizer.type); optimizer.params goes to
    // the optimizer's constructor as keyword arguments, zero_optimization to its pydantic model.
    if (v.is_object() && key != "optimizer.params") check_keys(v, key + ".", known);
  }
}

TrainConfig ds_config(ShardingStrategy s) {
  TrainConfig c = make_config("llama2-7b", "A100-80GB-SXM", 8, s, AcMode::full, 2, 4096);
  c.runtime = "deepspeed";
  take_runtime_precision(c, runtime_preset("deepspeed"), load_hardware("A100-80GB-SXM"), {});
  return c;
}

TEST(DeepspeedRuntime, ProfileStatesEveryZeroTermWithItsSource) {
  const RuntimeSpec& rt = runtime_preset("deepspeed");
  ASSERT_TRUE(rt.zero.has_value());
  for (const auto& s : kZeroTerms) EXPECT_FALSE(rt.sources.at(std::string("zero.") + s.key).empty()) << s.key;
  EXPECT_TRUE(rt.zero->reduce_bucket_size.is_auto);
  EXPECT_EQ(rt.zero->stage3_max_live_parameters.value, 1000000000);
  // No other runtime has a [zero] table: their answers do not move.
  for (const std::string& name : list_runtime_presets())
    if (name != "deepspeed") {
      EXPECT_FALSE(runtime_preset(name).zero.has_value()) << name;
    }
}

TEST(DeepspeedRuntime, PublishedRowsNamingDeepSpeedChooseIt) {
  // A published row's framework column (runtime_for_framework): rows of DeepSpeed runs are
  // planned for this runtime, not for another stack.
  EXPECT_EQ(runtime_for_framework("DeepSpeed ZeRO-3 (HF Trainer)"), "deepspeed");
  EXPECT_EQ(runtime_for_framework("deepspeed"), "deepspeed");
  EXPECT_EQ(runtime_generations("deepspeed"), (std::vector<std::string>{"deepspeed"}));
}

TEST(DeepspeedRuntime, ZeroTableIsStrict) {
  ZeroTerms z;
  toml::table missing = toml::parse("contiguous_gradients = true");
  EXPECT_THROW(read_zero_terms(missing, "x.toml", z), ConfigError);
  toml::table t = toml::parse(R"(contiguous_gradients = true
overlap_comm = true
reduce_bucket_size = "auto"
allgather_bucket_size = 500000000
stage3_prefetch_bucket_size = "auto"
stage3_param_persistence_threshold = "auto"
stage3_max_live_parameters = 1000000000
stage3_max_reuse_distance = 1000000000
sub_group_size = 1000000000)");
  EXPECT_NO_THROW(read_zero_terms(t, "x.toml", z));
  toml::table unknown = t;
  unknown.insert("stage", 3);  // the stage follows the strategy: not a term
  try {
    read_zero_terms(unknown, "x.toml", z);
    ADD_FAILURE() << "an unknown key was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("zero.stage"), std::string::npos) << e.what();
  }
  toml::table bad_auto = t;
  bad_auto.insert_or_assign("sub_group_size", "auto");  // the HF Trainer fills no "auto" there
  EXPECT_THROW(read_zero_terms(bad_auto, "x.toml", z), ConfigError);
  toml::table negative = t;
  negative.insert_or_assign("reduce_bucket_size", -1);
  EXPECT_THROW(read_zero_terms(negative, "x.toml", z), ConfigError);
}

TEST(DeepspeedRuntime, StageFollowsStrategyOthersRefusedByName) {
  EXPECT_EQ(zero_stage(ds_config(ShardingStrategy::full_shard)), 3);
  EXPECT_EQ(zero_stage(ds_config(ShardingStrategy::shard_grad_op)), 2);
  EXPECT_EQ(zero_stage(ds_config(ShardingStrategy::shard_optimizer)), 1);
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  for (ShardingStrategy s : {ShardingStrategy::hybrid_shard, ShardingStrategy::no_shard}) {
    TrainConfig c = ds_config(s);
    const std::string why = runtime_refusal(runtime_preset("deepspeed"), c, hw);
    EXPECT_NE(why.find(std::string("\"") + to_string(s) + "\""), std::string::npos) << why;
    EXPECT_NE(why.find("parallelism.sharding_strategy"), std::string::npos) << why;
    EXPECT_THROW(render_ds_config_json(c, *runtime_preset("deepspeed").zero), ConfigError);
  }
  TrainConfig c = ds_config(ShardingStrategy::full_shard);
  c.precision.compile = true;
  EXPECT_NE(runtime_refusal(runtime_preset("deepspeed"), c, hw).find("compile"), std::string::npos);
}

// ZeRO stage 1 is one more sharding strategy: the deepspeed runtime runs it, every FSDP runtime and
// shardcast-train refuse it by name.
TEST(DeepspeedRuntime, ShardOptimizerIsStageOneOnlyUnderDeepspeed) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  TrainConfig c = ds_config(ShardingStrategy::shard_optimizer);
  EXPECT_TRUE(validate(c).empty());
  EXPECT_EQ(runtime_refusal(runtime_preset("deepspeed"), c, hw), "");
  EXPECT_EQ(parse_sharding_strategy("shard_optimizer"), ShardingStrategy::shard_optimizer);
  // Parameters whole on every rank: all W ranks are replicas of a shard group of one.
  const Mesh m = resolve_mesh(c.parallelism, 8, 8);
  EXPECT_EQ(m.dp_shard, 1);
  EXPECT_EQ(m.dp_replicate, 8);
  for (const char* rt : {"accelerate", "torchtitan", "fms-fsdp", "shardcast-train"}) {
    TrainConfig o = c;
    o.runtime = rt;
    take_runtime_precision(o, runtime_preset(rt), hw, {});  // the runtime's own reduce dtype
    const std::string why = runtime_refusal(runtime_preset(rt), o, hw);
    EXPECT_NE(why.find("\"shard_optimizer\""), std::string::npos) << rt << ": " << why;
    EXPECT_NE(why.find("deepspeed"), std::string::npos) << rt << ": " << why;
  }
  bool trainer_refuses = false;
  for (const TrainerRefusal& r : trainer_refusals(c, true))
    trainer_refuses |= r.key == "parallelism.sharding_strategy" && r.detail.find("shard_optimizer") != std::string::npos;
  EXPECT_TRUE(trainer_refuses);
  // Stage 1 reduces on the accumulation boundary only: sync_every_micro_step = true is refused.
  EXPECT_FALSE(zero_reduces_every_micro_step(c));
  EXPECT_TRUE(zero_reduces_every_micro_step(ds_config(ShardingStrategy::shard_grad_op)));
  c.parallelism.sync_every_micro_step = true;
  EXPECT_NE(runtime_refusal(runtime_preset("deepspeed"), c, hw).find("sync_every_micro_step"), std::string::npos);
  c.parallelism.sync_every_micro_step = false;
  EXPECT_EQ(runtime_refusal(runtime_preset("deepspeed"), c, hw), "");
  // dp_shard stated > 1 contradicts whole parameters.
  c.parallelism.dp_shard = 8;
  EXPECT_FALSE(validate(c).empty());
}

TEST(DeepspeedRuntime, BuffersAreDeepSpeedsAllocations) {
  const TrainConfig c = ds_config(ShardingStrategy::full_shard);
  ZeroOptions z{true, *runtime_preset("deepspeed").zero};
  const double P = double(c.model.total_params()), d = c.model.d_model, L = c.model.n_layers;
  std::map<std::string, double> b;
  for (const ZeroBuffer& x : zero_buffers(c, z, 8, 2)) b[x.name] = x.bytes;
  EXPECT_DOUBLE_EQ(b.at("zero_param_partition"), 2 * P / 8);
  EXPECT_DOUBLE_EQ(b.at("zero_grad_partition"), 2 * P / 8);
  EXPECT_DOUBLE_EQ(b.at("zero_ipg_buckets"), 2 * d * d);                        // "auto": hidden_size²
  EXPECT_DOUBLE_EQ(b.at("zero_persistent_parameters"), 2 * (2 * L + 1) * d * 7 / 8);  // RMSNorm weights <= 10·d
  const TrainConfig c2 = ds_config(ShardingStrategy::shard_grad_op);
  b.clear();
  for (const ZeroBuffer& x : zero_buffers(c2, z, 8, 2)) b[x.name] = x.bytes;
  EXPECT_DOUBLE_EQ(b.at("zero_ipg_buckets"), 2 * 2 * d * d);  // overlap_comm: two IPG buffers
  EXPECT_DOUBLE_EQ(b.at("zero_grad_partition"), 2 * P / 8);
  EXPECT_DOUBLE_EQ(b.at("zero_bit16_parameters"), 2 * P);  // bit16_groups_flat, as stage 1
  EXPECT_FALSE(b.count("zero_param_partition"));
  // Stage 1: stage 2's two buffers, the gradient partition over all W ranks.
  const TrainConfig c1 = ds_config(ShardingStrategy::shard_optimizer);
  b.clear();
  for (const ZeroBuffer& x : zero_buffers(c1, z, 8, 2)) b[x.name] = x.bytes;
  EXPECT_EQ(b.size(), 3u);
  EXPECT_DOUBLE_EQ(b.at("zero_ipg_buckets"), 2 * 2 * d * d);
  EXPECT_DOUBLE_EQ(b.at("zero_grad_partition"), 2 * P / 8);
  EXPECT_DOUBLE_EQ(b.at("zero_bit16_parameters"), 2 * P);  // whole on every rank
  z.zero = false;
  EXPECT_TRUE(zero_buffers(c, z, 8, 2).empty());
}

TEST(DeepspeedRuntime, PlanAddsTheBuffersToAllocatedAndDeviceTotal) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  const TrainConfig c = ds_config(ShardingStrategy::full_shard);
  PlanOptions with = resolve_plan_options(c, hw);
  PlanOptions without = with;
  without.zero = false;
  const Prediction a = plan(c, hw, with), b = plan(c, hw, without);
  double buffers = 0;
  for (const ZeroBuffer& x : zero_buffers(c, with, 8, 2)) buffers += x.bytes;
  ASSERT_GT(buffers, 1e9);
  EXPECT_NEAR(a.mem_peak_bytes - b.mem_peak_bytes, buffers, 1.0);
  EXPECT_GE(a.mem_device_total_bytes - b.mem_device_total_bytes, buffers);  // 2 MiB rounding on top
  EXPECT_LT(a.mem_device_total_bytes - b.mem_device_total_bytes, buffers + 4 * 2097152.0);
  EXPECT_DOUBLE_EQ(a.step_time_s, b.step_time_s);  // memory only
}

// Stage 1's plan, term by term (docs/cost-model.md §10.1): fp32 master and AdamW states over W,
// 16-bit parameters whole (no all-gather per unit), whole gradients all-reduced once per step on
// the last micro-step, and one all-gather of the updated 16-bit parameters after the step.
TEST(DeepspeedRuntime, StageOnePlanTermByTerm) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  TrainConfig c = ds_config(ShardingStrategy::shard_optimizer);
  c.training.grad_accum = 2;
  PlanOptions o = resolve_plan_options(c, hw);
  EXPECT_FALSE(o.sync_every_micro_step);
  o.timeline = true;
  const Prediction p = plan(c, hw, o);
  const double P = double(c.model.total_params());
  std::map<std::string, double> mem;
  for (const MemoryComponent& x : p.memory) mem[x.name] = x.bytes;
  EXPECT_DOUBLE_EQ(mem.at("sharded_parameters"), 4 * P / 8);  // fp32 master partition
  EXPECT_DOUBLE_EQ(mem.at("optimizer_states"), 8 * P / 8);    // AdamW m, v partitions
  EXPECT_DOUBLE_EQ(mem.at("zero_grad_partition"), 2 * P / 8);
  // The whole bf16 parameters, static (no unit gathers a copy), and between micro-steps the whole
  // bf16 gradients (the peak lies in the last micro-step's backward, as they go to the buckets).
  EXPECT_DOUBLE_EQ(mem.at("zero_bit16_parameters"), 2 * P);
  EXPECT_DOUBLE_EQ(mem["gathered_parameters"], 0);
  EXPECT_GT(mem["unsharded_gradients"], 0);
  int all_gathers = 0, all_reduces = 0, reduce_scatters = 0;
  double post_step_gather = 0, optimizer_end = 0, post_step_start = -1;
  for (const TimelineEvent& e : p.timeline) {
    if (e.name == "optimizer") optimizer_end = e.start_s + e.duration_s;
    if (e.name == "all_gather updated parameters") {
      post_step_gather = e.duration_s;
      post_step_start = e.start_s;
    } else if (e.name.rfind("all_gather", 0) == 0) {
      ++all_gathers;
    }
    all_reduces += e.name.rfind("all_reduce ", 0) == 0;
    reduce_scatters += e.name.rfind("reduce_scatter", 0) == 0;
  }
  const int U = c.model.n_layers + 2;
  EXPECT_EQ(all_gathers, 0);     // no per-unit gathers
  EXPECT_EQ(reduce_scatters, 0);
  EXPECT_EQ(all_reduces, U);     // once per step, not per micro-step
  // One all-gather of 2·P bytes over the 8 ranks, after the optimizer step.
  const StepShape shape = step_shape(c, hw, o);
  EXPECT_EQ(shape.state_group, 8);
  const CommSetup cs = comm_setup(c, hw, o, runtime_efficiency(hw, o), shape);
  const double gather_s = collective_time(Collective::all_gather, 2 * P, cs.reduce_group, cs.comm);
  EXPECT_NEAR(post_step_gather, gather_s, 1e-9 * gather_s);  // the timeline's end - start
  EXPECT_GT(post_step_gather, 2 * P * 7 / 8 / 600e9);  // at least its bytes over A100's NVLink (600 GB/s)
  EXPECT_GE(post_step_start, optimizer_end - 1e-12);
  // Stage 2 of the same run is stage 1's DeepSpeedZeroOptimizer with its gradients partitioned:
  // the same whole bf16 parameters (no per-unit gather) and the same all-gather after the step,
  // but an all-reduce of every unit's bucket on every micro-step (allreduce_and_scatter), the
  // gradients leaving for the partition as they are reduced.
  TrainConfig c2 = c;
  c2.parallelism.sharding_strategy = ShardingStrategy::shard_grad_op;
  PlanOptions o2 = resolve_plan_options(c2, hw);
  o2.timeline = true;
  const Prediction p2 = plan(c2, hw, o2);
  int reduces2 = 0, gathers2 = 0, post2 = 0;
  for (const TimelineEvent& e : p2.timeline) {
    reduces2 += e.name.rfind("all_reduce ", 0) == 0;
    post2 += e.name == "all_gather updated parameters";
    gathers2 += e.name.rfind("all_gather", 0) == 0 && e.name != "all_gather updated parameters";
    EXPECT_NE(e.name.rfind("reduce_scatter", 0), 0u) << e.name;
  }
  EXPECT_EQ(reduces2, 2 * U);
  EXPECT_EQ(post2, 1);
  EXPECT_EQ(gathers2, 0);
  std::map<std::string, double> mem2;
  for (const MemoryComponent& x : p2.memory) mem2[x.name] = x.bytes;
  EXPECT_DOUBLE_EQ(mem2.at("zero_bit16_parameters"), 2 * P);
  EXPECT_DOUBLE_EQ(mem2["gathered_parameters"], 0);
  // With one micro-step stage 2 does what stage 1 does: no faster (it was planned as FSDP's
  // shard_grad_op, 5 % faster than stage 1 on Llama 3 8B on 8 H100).
  c.training.grad_accum = 1;
  c2.training.grad_accum = 1;
  const double t1 = plan(c, hw, resolve_plan_options(c, hw)).step_time_s;
  const double t2 = plan(c2, hw, resolve_plan_options(c2, hw)).step_time_s;
  EXPECT_GE(t2, t1 * (1 - 1e-9));
}

TEST(DeepspeedRuntime, SearchTriesOnlyTheStagesItRuns) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  SearchSpace sp;
  sp.model = load_model("llama2-7b");
  sp.model_preset = "llama2-7b";
  sp.hardware = "A100-80GB-SXM";
  sp.gpus = 16;
  sp.seq_len = 4096;
  sp.micro_batches = {1, 2};
  sp.grad_accums = {1};
  sp.base.runtime = "deepspeed";
  const Enumeration e = enumerate_candidates(sp, hw);
  ASSERT_FALSE(e.candidates.empty());
  std::set<ShardingStrategy> seen;
  for (const TrainConfig& c : e.configs()) seen.insert(c.parallelism.sharding_strategy);
  EXPECT_EQ(seen, (std::set<ShardingStrategy>{ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op,
                                               ShardingStrategy::shard_optimizer}));
  sp.strategies = {ShardingStrategy::hybrid_shard};
  EXPECT_THROW(enumerate_candidates(sp, hw), UsageError);
  // An FSDP runtime neither tries nor takes shard_optimizer.
  sp.base.runtime = "accelerate";
  sp.strategies = {};
  seen.clear();
  for (const TrainConfig& c : enumerate_candidates(sp, hw).configs()) seen.insert(c.parallelism.sharding_strategy);
  EXPECT_FALSE(seen.count(ShardingStrategy::shard_optimizer));
  sp.strategies = {ShardingStrategy::shard_optimizer};
  EXPECT_THROW(enumerate_candidates(sp, hw), UsageError);
}

TEST(DeepspeedEmit, DsConfigKeysAreDeepSpeedsAndMatchThePlan) {
  const auto known = ds_keys();
  ASSERT_GT(known.size(), 60u);
  const ZeroTerms& z = *runtime_preset("deepspeed").zero;
  for (ShardingStrategy s :
       {ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op, ShardingStrategy::shard_optimizer}) {
    TrainConfig c = ds_config(s);
    c.training.grad_accum = 4;
    c.precision.reduce_dtype = "fp32";
    const nlohmann::json j = nlohmann::json::parse(render_ds_config_json(c, z));
    check_keys(j, "", known);
    EXPECT_EQ(j["zero_optimization"]["stage"], s == ShardingStrategy::full_shard ? 3 : s == ShardingStrategy::shard_grad_op ? 2 : 1);
    EXPECT_EQ(j["train_batch_size"], 2 * 4 * 8);  // DeepSpeed's rule: micro · accumulation · ranks
    EXPECT_EQ(j["communication_data_type"], "fp32");
    EXPECT_EQ(j["bf16"]["enabled"], true);
    EXPECT_EQ(j["zero_optimization"]["reduce_bucket_size"], int64_t(4096) * 4096);
    if (s == ShardingStrategy::full_shard) {
      EXPECT_EQ(j["zero_optimization"]["stage3_prefetch_bucket_size"], 15099494);  // floor(0.9 · 4096²)
      EXPECT_EQ(j["zero_optimization"]["stage3_param_persistence_threshold"], 40960);
    } else {
      EXPECT_FALSE(j["zero_optimization"].contains("stage3_prefetch_bucket_size"));
    }
  }
  // bf16 reduction is DeepSpeed's default under bf16: no communication_data_type.
  const nlohmann::json j = nlohmann::json::parse(render_ds_config_json(ds_config(ShardingStrategy::full_shard), z));
  EXPECT_FALSE(j.contains("communication_data_type"));
}

TEST(DeepspeedEmit, LaunchQuotesPathsAndMatchesTheTrainersChecks) {
  TrainConfig c = ds_config(ShardingStrategy::full_shard);
  c.checkpoint.dir = "/ckpt/it's a \\ dir";
  const std::string sh = render_deepspeed_launch(c, "# plan\n");
  EXPECT_NE(sh.find("--output_dir '/ckpt/it'\\''s a \\ dir'"), std::string::npos) << sh;
  EXPECT_NE(sh.find("--per_device_train_batch_size 2"), std::string::npos);
  EXPECT_NE(sh.find("--max_grad_norm 1.0"), std::string::npos);
  EXPECT_NE(sh.find("--deepspeed ds_config.json"), std::string::npos);
  EXPECT_NE(sh.find("--bf16"), std::string::npos);
  EXPECT_NE(sh.find("--gradient_checkpointing"), std::string::npos);
}

TEST(DeepspeedEmit, EmitWritesDeepspeedFilesOnlyForIt) {
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  bool found = false;
  for (const EmitTarget& t : emit_targets(ds_config(ShardingStrategy::full_shard), hw))
    if (t.runtime == "deepspeed") {
      found = true;
      EXPECT_EQ(t.files, (std::vector<std::string>{"ds_config.json", "launch_deepspeed.sh"}));
    }
  EXPECT_TRUE(found);
  TrainConfig other = ds_config(ShardingStrategy::full_shard);
  other.runtime = "accelerate";
  for (const EmitTarget& t : emit_targets(other, hw)) EXPECT_NE(t.runtime, "deepspeed");
}


std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SHARDCAST_TEST_DATA_DIR) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DeepspeedImport, ThroughputTimerLinesWithTheTrainersLosses) {
  const TrainLog log = parse_deepspeed_log(fixture("deepspeed_zero3_hf.log"), "deepspeed_zero3_hf.log");
  EXPECT_EQ(log.format, "deepspeed");
  ASSERT_EQ(log.steps.size(), 5u);
  EXPECT_EQ(log.steps[0].step, 10);
  EXPECT_EQ(log.steps[4].step, 50);
  EXPECT_DOUBLE_EQ(*log.steps[4].samples_per_s, 5.4877);                  // CurrSamplesPerSec
  EXPECT_DOUBLE_EQ(log.steps[0].loss, 1.9811);                            // the dict after step 10
  EXPECT_DOUBLE_EQ(*log.steps[0].lr, 0.0003);
  EXPECT_DOUBLE_EQ(*log.steps[0].mem_allocated_bytes, 38.52 * 1073741824.0);  // MaxMemAllocated
  EXPECT_FALSE(log.steps[0].mem_reserved_bytes.has_value());
  // see_memory_usage after step 50: Max_CA (whole GiB) and Max_MA are that step's.
  EXPECT_DOUBLE_EQ(*log.steps[4].mem_reserved_bytes, 46 * 1073741824.0);
  EXPECT_DOUBLE_EQ(*log.steps[4].mem_allocated_bytes, 39.1 * 1073741824.0);
  bool init_noted = false, summary_noted = false;
  for (const auto& n : log.notes) {
    init_noted |= n.find("before the first step") != std::string::npos;
    summary_noted |= n.find("train_samples_per_second 5.151") != std::string::npos;
  }
  EXPECT_TRUE(init_noted);
  EXPECT_TRUE(summary_noted);
}

// The engine's "Creating <dtype> ZeRO stage N optimizer" line: the stage the run states.
TEST(DeepspeedImport, EngineLineStatesTheStage) {
  const std::string creating =
      "[2025-03-01 10:00:00,000] [INFO] [logging.py:128:log_dist] [Rank 0] Creating torch.bfloat16 ZeRO stage 1 "
      "optimizer\n";
  const std::string body = fixture("deepspeed_zero3_hf.log");
  const TrainLog log = parse_deepspeed_log(creating + body, "zero1.log");
  ASSERT_TRUE(log.zero_stage.has_value());
  EXPECT_EQ(*log.zero_stage, 1);
  EXPECT_EQ(log.zero_stage_line, 1);
  EXPECT_EQ(log.steps.size(), parse_deepspeed_log(body, "zero3.log").steps.size());
  EXPECT_FALSE(parse_deepspeed_log(body, "zero3.log").zero_stage.has_value());  // the fixture does not say
  std::string two = creating + body;
  two += "[Rank 0] Creating torch.bfloat16 ZeRO stage 3 optimizer\n";
  EXPECT_THROW(parse_deepspeed_log(two, "two.log"), InputError);
}

TEST(DeepspeedImport, TrainerSummaryOnlyIsOneWholeRunStep) {
  const TrainLog log = parse_deepspeed_log(fixture("deepspeed_hf_summary_only.log"), "x.log");
  ASSERT_EQ(log.steps.size(), 1u);
  EXPECT_EQ(log.steps[0].step, 50);  // round(155.3 s x 0.322 steps/s)
  EXPECT_DOUBLE_EQ(*log.steps[0].samples_per_s, 5.151);
  EXPECT_DOUBLE_EQ(log.steps[0].loss, 1.8012);
  ASSERT_FALSE(log.notes.empty());
  EXPECT_NE(log.notes.back().find("including the first ones"), std::string::npos);
}

TEST(DeepspeedImport, UnreadableThroughputLineNamesFileAndLine) {
  const std::string text = "a\n[x] epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=1.0, CurrSamplesPerSec=abc, "
                           "MemAllocated=1GB, MaxMemAllocated=2GB\n";
  try {
    parse_deepspeed_log(text, "bad.log");
    ADD_FAILURE() << "read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.log:2:"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(parse_deepspeed_log("nothing here\n", "empty.log").steps.empty());
}

TEST(DeepspeedImport, RunDirectoryRatesAreTokensPerGpu) {
  const TrainLog log = parse_deepspeed_log(fixture("deepspeed_zero3_hf.log"), "deepspeed_zero3_hf.log");
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  const ImportedRun run = import_run(log, ds_config(ShardingStrategy::full_shard), hw, 10);
  EXPECT_EQ(run.cfg.runtime, "deepspeed");
  // Median of steps 20..50's CurrSamplesPerSec (5.4891, 5.4803, 5.4950, 5.4877) x 4096 / 8 ranks.
  EXPECT_NEAR(run.report.tokens_per_s_per_gpu, (5.4877 + 5.4891) / 2 * 4096 / 8, 1e-6);
  // No step time is logged: micro_batch · seq_len · grad_accum / (tokens/s/GPU), step by step.
  ASSERT_EQ(run.report.steps.size(), 5u);
  EXPECT_NEAR(run.report.steps[4].step_time_s, 2 * 4096 / (5.4877 * 4096 / 8), 1e-12);
  EXPECT_DOUBLE_EQ(run.report.mem_peak_bytes, 39.1 * 1073741824.0);
  ASSERT_TRUE(run.report.mem_reserved_peak_bytes.has_value());
  EXPECT_DOUBLE_EQ(*run.report.mem_reserved_peak_bytes, 46 * 1073741824.0);
  // A stage-1 run: the same log read for a shard_optimizer config keeps that strategy.
  const ImportedRun one = import_run(log, ds_config(ShardingStrategy::shard_optimizer), hw, 10);
  EXPECT_EQ(one.cfg.parallelism.sharding_strategy, ShardingStrategy::shard_optimizer);
  EXPECT_EQ(one.report.sharding_strategy, "shard_optimizer");
  EXPECT_NEAR(one.report.tokens_per_s_per_gpu, run.report.tokens_per_s_per_gpu, 1e-9);
}


// The published runs of current stacks (configs/published/outside_stacks.csv, never fitted on):
// FlagPerf's DeepSpeed ZeRO-3 runs on A800, H800 and H100 are predicted; the MXFP8 rows and the
// ZeRO-1 rows are skipped with their reasons. Regression bounds: each the value measured at the
// commit that added the A800/H800 presets (08102a7), rounded up; the issue's targets (MAPE <= 8 %:
// met; memory within -5 % ... +15 %: not met, every row 19-27 % under) are in docs/validation.md.
TEST(StacksRuns, PublishedCurrentStackRunsHoldTheirRegressionBounds) {
  const ValidationResult v =
      test::validate_published_file(std::string(SHARDCAST_TEST_PUBLISHED_DIR) + "/outside_stacks.csv");
  const ValidationSummary& s = v.overall;
  EXPECT_EQ(s.n, 9);               // the two ZeRO-1 rows skipped (Baichuan2's ALiBi attention)
  // measured 16.24: the seven DeepSpeed rows 4.1, the two MXFP8 rows +56 and +61 (15.9 and +54 / +60 before
  // the MXFP8 casts ran at torchao's stated B200 rates instead of 14 % below them, fp8_recipe.h)
  EXPECT_LE(s.mape_tps, 16.5);
  EXPECT_GE(s.within_1sigma, 7);   // measured 7 of 9
  EXPECT_LE(s.mape_mem, 21.0);     // measured 20.5 (n = 9)
}

}  // namespace
}  // namespace shardcast::planner
