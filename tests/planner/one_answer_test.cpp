// One configuration and one runtime give one answer whichever way the planner is asked: plan()
// with resolve_plan_options (the `plan` command and the GUI), the ranked row of search() (the
// `search` command), the prediction emit writes (emit_targets, run.toml's [prediction]), and
// the re-prediction of a run directory (`validate RUN_DIR`, compare_run).
//
// Tolerance: exact equality. Every path calls the same pure plan() on the same inputs, so any
// difference means a command built its own PlanOptions again.
#include <gtest/gtest.h>

#include <algorithm>

#include <set>

#include <string>
#include <vector>

#include "planner/emit/emit.h"
#include "planner/emit/emit_ecosystem.h"
#include "planner/model/plan.h"
#include "planner/evidence/run_validation.h"
#include "planner/model/runtime.h"
#include "planner/decide/search.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

struct Case {
  std::string model, gpu;
  int gpus;
  ShardingStrategy strategy;
  AcMode ac;
  int micro_batch, seq_len, grad_accum;
  std::string reduce_dtype;
};

const std::vector<Case> kCases = {
    {"tiny-2l", "cpu", 2, ShardingStrategy::no_shard, AcMode::none, 16, 128, 8, "fp32"},
    {"tiny-2l", "cpu", 2, ShardingStrategy::full_shard, AcMode::full, 4, 128, 1, "fp32"},
    {"llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192, 1, "fp32"},
    {"llama2-7b", "A100-80GB-SXM", 16, ShardingStrategy::hybrid_shard, AcMode::full, 2, 4096, 2, "fp32"},
};
// Every shipped runtime profile (configs/runtimes/), not a list kept by hand.
const std::vector<std::string> kRuntimes = list_runtime_presets();

TrainConfig config_of(const Case& k, const std::string& runtime) {
  TrainConfig c = test::make_config(k.model, k.gpu, k.gpus, k.strategy, k.ac, k.micro_batch, k.seq_len, k.grad_accum);
  const HardwareSpec hw = load_hardware(k.gpu);
  if (!is_gpu(hw)) c.precision.param_dtype = "fp32";
  c.precision.reduce_dtype = k.reduce_dtype;
  c.runtime = runtime;
  // The case's reduce dtype where the runtime runs it over bf16 parameters; else, and for the
  // master dtype, the runtime's own (a runtime that then refuses the configuration is skipped).
  const RuntimeSpec& rt = runtime_preset(runtime);
  const RuntimeTerms& t = rt.terms_for(is_gpu(hw));
  const bool runs_case_reduce =
      c.precision.param_dtype != "bf16" ||
      (!t.reduce_dtype_is_param_dtype &&
       std::find(t.reduce_dtypes.begin(), t.reduce_dtypes.end(), k.reduce_dtype) != t.reduce_dtypes.end());
  take_runtime_precision(c, rt, hw, {runs_case_reduce, false});
  return c;
}

void expect_same(const Prediction& a, const Prediction& b, const std::string& what) {
  EXPECT_EQ(a.runtime, b.runtime) << what;
  EXPECT_EQ(a.step_time_s, b.step_time_s) << what;
  EXPECT_EQ(a.tokens_per_s_per_gpu, b.tokens_per_s_per_gpu) << what;
  EXPECT_EQ(a.mem_peak_bytes, b.mem_peak_bytes) << what;
  EXPECT_EQ(a.mem_reserved_bytes, b.mem_reserved_bytes) << what;
  EXPECT_EQ(a.mfu, b.mfu) << what;
  EXPECT_EQ(a.fits, b.fits) << what;
  ASSERT_EQ(a.memory.size(), b.memory.size()) << what;
  for (size_t i = 0; i < a.memory.size(); ++i) {
    EXPECT_EQ(a.memory[i].name, b.memory[i].name) << what;
    EXPECT_EQ(a.memory[i].bytes, b.memory[i].bytes) << what << " " << a.memory[i].name;
  }
}

TEST(OneAnswer, PlanSearchEmitAndValidateAgree) {
  int compared = 0;
  std::set<std::string> runtimes_compared;
  for (const Case& k : kCases) {
    const HardwareSpec hw = load_hardware(k.gpu);
    for (const std::string& rt : kRuntimes) {
      const TrainConfig cfg = config_of(k, rt);
      if (!runtime_refusal(runtime_preset(rt), cfg, hw).empty()) continue;
      const std::string what = k.model + " on " + k.gpu + " for " + rt + ": " + describe_config(cfg);
      const Prediction planned = plan(cfg, hw, resolve_plan_options(cfg, hw));
      EXPECT_EQ(planned.runtime, rt) << what;

      // search: the same configuration as a ranked row of a space that contains it.
      SearchSpace space;
      space.model = cfg.model;
      space.model_preset = cfg.model_preset;
      space.hardware = k.gpu;
      space.gpus = k.gpus;
      space.gpus_per_node = cfg.cluster.gpus_per_node;
      space.seq_len = k.seq_len;
      space.strategies = {k.strategy};
      if (k.strategy == ShardingStrategy::hybrid_shard) space.hsdp_shard_sizes = {cfg.cluster.gpus_per_node};
      space.micro_batches = {k.micro_batch};
      space.grad_accums = {k.grad_accum};
      space.reduce_dtypes = {cfg.precision.reduce_dtype};
      space.base.precision.master_dtype = cfg.precision.master_dtype;
      space.max_mem_frac = 1.0;
      space.tps = space.cps = space.pps = {1};  // the case's 1-D layout only
      space.base.runtime = rt;
      space.threads = 1;
      const SearchResult r = search(space, hw);
      bool found = false;
      for (const Candidate& c : r.ranked) {
        if (c.config.activation_checkpointing.mode != k.ac) continue;
        found = true;
        expect_same(planned, c.prediction, what + " (search)");
      }
      if (planned.fits && memory_needed_bytes(planned) <= hw.gpu.hbm_bytes) {
        EXPECT_TRUE(found) << what;
      }

      // emit: the prediction of the plan's own runtime, first target: the plan itself where its
      // file runs it as planned, else the configuration the file runs (as_emitted), planned.
      // "torchtitan" names the framework: v0.2's files (emit's default) are torchtitan-2025-10's.
      const std::vector<EmitTarget> targets = emit_targets(cfg, hw);
      ASSERT_FALSE(targets.empty());
      const std::string emitted_rt = rt == "torchtitan" ? torchtitan_generation(TorchtitanVersion::v0_2) : rt;
      EXPECT_EQ(targets.front().runtime, emitted_rt);
      TrainConfig ran = as_emitted(cfg, runtime_preset(rt).framework, TorchtitanVersion::v0_2);
      ran.runtime = emitted_rt;
      const Prediction emitted = describe_config(ran) == describe_config(cfg) && emitted_rt == rt
                                     ? planned
                                     : plan(ran, hw, resolve_plan_options(ran, hw));
      expect_same(emitted, targets.front().prediction, what + " (emit)");

      // validate RUN_DIR: compare_run re-predicts the run's config for its runtime.
      RunDir run;
      run.dir = "/tmp/one-answer-run";
      run.cfg = cfg;
      run.report.median_step_time_s = 1;
      const RunComparison cmp = compare_run(run, hw);
      EXPECT_EQ(cmp.predicted_step_s, planned.step_time_s) << what << " (validate)";
      EXPECT_EQ(cmp.predicted_mem_bytes, planned.mem_peak_bytes) << what << " (validate)";
      EXPECT_EQ(cmp.measured_reserved_bytes, 0.0) << what << " (validate: no reserved peak measured)";
      run.report.mem_peak_bytes = 1;
      run.report.mem_reserved_peak_bytes = 2;  // a GPU run measures both: both are compared
      const RunComparison both = compare_run(run, hw);
      EXPECT_EQ(both.predicted_mem_bytes, planned.mem_peak_bytes) << what << " (validate)";
      EXPECT_EQ(both.predicted_reserved_bytes, planned.mem_reserved_bytes) << what << " (validate)";
      EXPECT_EQ(both.measured_reserved_bytes, 2.0) << what << " (validate)";
      ++compared;
      runtimes_compared.insert(rt);
    }
  }
  EXPECT_GE(compared, 20);  // 4 configurations x the runtimes that can run them
  for (const std::string& rt : kRuntimes) EXPECT_TRUE(runtimes_compared.count(rt)) << rt << " ran no configuration";
}

// The runtime changes the answer where its profile says the software differs: eager attention
// (shardcast-train on CPU) keeps the fp32 softmax that a flash kernel (torchtitan) does not.
TEST(OneAnswer, RuntimeIsPartOfTheQuestion) {
  // The same configuration on two runtimes is two questions. On A100 they differ in the host
  // time (shardcast-train's C++ loop hides it; torchtitan's is fitted) and the optimizer step.
  // (torchtitan does not run on the CPU profile: RuntimesRunOnTheirDevicesOnly.)
  const Case& k = kCases[3];
  const HardwareSpec hw = load_hardware(k.gpu);
  const Prediction ours = plan(config_of(k, "shardcast-train"), hw,
                               resolve_plan_options(config_of(k, "shardcast-train"), hw));
  const Prediction titan = plan(config_of(k, "torchtitan"), hw, resolve_plan_options(config_of(k, "torchtitan"), hw));
  EXPECT_NE(ours.step_time_s, titan.step_time_s);
  EXPECT_EQ(ours.runtime, "shardcast-train");
  EXPECT_EQ(titan.runtime, "torchtitan");
}

// A runtime is planned only on the devices its profile names: every shipped profile but
// shardcast-train's (and its earlier generation shardcast-train-2026-11's) runs on GPUs only,
// and is refused on the CPU profile by name.
TEST(OneAnswer, RuntimesRunOnTheirDevicesOnly) {
  const HardwareSpec cpu = load_hardware("cpu");
  int refused = 0, on_cpu = 0;
  for (const std::string& rt : kRuntimes) {
    const TrainConfig c = config_of(kCases[0], rt);
    const std::string why = runtime_refusal(runtime_preset(rt), c, cpu);
    if (rt == "shardcast-train" || rt == "shardcast-train-2026-11") {
      EXPECT_EQ(why, "") << rt;
      ++on_cpu;
      continue;
    }
    EXPECT_NE(why.find(rt + " runs on gpu only (its profile's devices), not on cpu"), std::string::npos) << why;
    ++refused;
  }
  EXPECT_EQ(on_cpu, 2);
  EXPECT_EQ(refused, int(kRuntimes.size()) - 2);
}

// A runtime that cannot express the config is refused by name, never planned as something else.
TEST(OneAnswer, RefusalNamesTheRuntimeAndKey) {
  TrainConfig c = config_of(kCases[2], "torchtitan");
  c.precision.reduce_dtype = "bf16";
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  try {
    resolve_plan_options(c, hw);
    FAIL() << "torchtitan accepted a bf16 reduction";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "runtime");
    EXPECT_NE(std::string(e.what()).find("torchtitan"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("reduce_dtype"), std::string::npos);
  }
}

}  // namespace
}  // namespace shardcast::planner
