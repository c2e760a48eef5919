// JSON round trips of Prediction, RunReport and ValidationReport (schema 1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shared/prediction.h"
#include "shared/run_report.h"

namespace shardcast {
namespace {

TEST(Reports, PredictionRoundTrip) {
  Prediction p;
  p.memory = {{"parameters", 1e9}, {"activations", 2.5e9}};
  p.mem_peak_bytes = 3.5e9;
  p.mem_reserved_bytes = 4e9;
  p.mem_capacity_bytes = 80.0 * (1 << 30);
  p.step_time_s = 1.25;
  p.exposed_comm_s = 0.1;
  p.tokens_per_s_per_gpu = 4550;
  p.mfu = 0.55;
  p.error_band_rel = 0.06;
  p.error_band_note = "±6%";
  p.timeline = {{"fwd block 0", "compute", 0.0, 0.01, 1}};
  const nlohmann::json j = p;
  EXPECT_EQ(j["schema"], 1);
  const Prediction q = j.get<Prediction>();
  EXPECT_EQ(nlohmann::json(q), j);
  const auto trace = to_chrome_trace(p.timeline);
  ASSERT_EQ(trace["traceEvents"].size(), 2u);  // thread name + one event
  EXPECT_EQ(trace["traceEvents"][1]["ph"], "X");
  EXPECT_DOUBLE_EQ(trace["traceEvents"][1]["dur"].get<double>(), 0.01 * 1e6);
}

// A pipeline plan's mesh block carries each stage's memory; a plan without pp writes none.
TEST(Reports, PredictionRoundTripWithPipelineStages) {
  Prediction p;
  p.memory = {{"activations", 2.5e9}};
  p.mesh = "dp_shard 8 x tp 8 x pp 8";
  p.dp_shard = 8;
  p.tp = 8;
  p.pp = 8;
  p.pp_bubble_s = 3.0;
  p.mesh_notes = {"pp 8 x 1 stage(s) per rank"};
  p.pp_stages = {{"first", 60e9, 64e9, 66e9, {62e9, 70e9}}, {"last", 48e9, 52e9, 54e9, {50e9, 55e9}}};
  p.tp_async = true;
  p.pp_schedule = "Interleaved1F1B";
  p.pp_microbatch = 2;
  const nlohmann::json j = p;
  ASSERT_EQ(j["mesh"]["pp_stages"].size(), 2u);
  // The settings the plan ran (an audit: which schedule a pipeline plan is for was not in it).
  EXPECT_EQ(j["mesh"]["pp_schedule"], "Interleaved1F1B");
  EXPECT_EQ(j["mesh"]["tp_async"], true);
  EXPECT_EQ(j["mesh"]["pp_microbatch"], 2);
  EXPECT_FALSE(j["mesh"].contains("cp_rotate"));  // cp 1
  EXPECT_EQ(j["mesh"]["pp_stages"][0]["stage"], "first");
  // The degrees as numbers, named as run.toml's [parallelism] keys.
  EXPECT_EQ(j["mesh"]["tp"], 8);
  EXPECT_EQ(j["mesh"]["pp"], 8);
  EXPECT_EQ(j["mesh"]["dp_replicate"], 1);
  EXPECT_DOUBLE_EQ(j["mesh"]["pp_stages"][1]["reserved_range_bytes"][1].get<double>(), 55e9);
  const Prediction q = j.get<Prediction>();
  EXPECT_EQ(q.dp_shard, 8);
  ASSERT_EQ(q.pp_stages.size(), 2u);
  EXPECT_EQ(q.pp_stages[1].stage, "last");
  EXPECT_EQ(q.pp_schedule, "Interleaved1F1B");
  EXPECT_TRUE(q.tp_async);
  EXPECT_EQ(q.pp_microbatch, 2);
  EXPECT_DOUBLE_EQ(q.pp_stages[0].reserved_range_bytes.first, 62e9);
  EXPECT_EQ(nlohmann::json(q), j);
  p.pp_stages.clear();
  EXPECT_FALSE(nlohmann::json(p)["mesh"].contains("pp_stages"));
}

TEST(Reports, RunReportAndValidationRoundTrip) {
  RunReport r;
  r.world_size = 2;
  r.sharding_strategy = "full_shard";
  r.steps = {{1, 5.5, 1e-3, 2.0, 1000, 0.1, 0.12, 0.05, 1e6, std::nullopt, std::nullopt}};
  r.mem_components = {{"parameters", 10.0}};
  r.path = {{"attention_backend", "flash_attention"}, {"optimizer_kernel", "fused_adamw"}, {"world_size", "2"}};
  const nlohmann::json j = r;
  EXPECT_EQ(j["path"]["optimizer_kernel"], "fused_adamw");
  EXPECT_EQ(nlohmann::json(j.get<RunReport>()), j);
  EXPECT_EQ(j.get<RunReport>().path, r.path);
  // A report written before "path" existed reads with an empty path, and writes none.
  nlohmann::json old = j;
  old.erase("path");
  EXPECT_TRUE(old.get<RunReport>().path.empty());
  EXPECT_FALSE(nlohmann::json(old.get<RunReport>()).contains("path"));
  ValidationReport v;
  v.entries = {{"tokens_per_s_per_gpu", 110, 100}};
  EXPECT_DOUBLE_EQ(v.entries[0].error_pct(), 10.0);
  const nlohmann::json vj = v;
  EXPECT_DOUBLE_EQ(vj["entries"][0]["error_pct"].get<double>(), 10.0);
  EXPECT_EQ(nlohmann::json(vj.get<ValidationReport>()), vj);
}

// The CUDA caching allocator's fields exist only when measured (GPU runs): a CPU report has
// neither key, a GPU report round-trips both, per step and in the summary.
TEST(Reports, CudaMemoryFieldsOnlyWhenMeasured) {
  RunReport cpu;
  cpu.steps = {{1, 5.5, 1e-3, 2.0, 1000, 0.1, 0.12, 0.05, 1e6, std::nullopt, std::nullopt}};
  const nlohmann::json c = cpu;
  EXPECT_FALSE(c["summary"].contains("mem_reserved_peak_bytes"));
  EXPECT_FALSE(c["summary"].contains("alloc_retries"));
  EXPECT_FALSE(c["steps"][0].contains("mem_reserved_peak_bytes"));
  EXPECT_FALSE(c.get<RunReport>().mem_reserved_peak_bytes.has_value());
  RunReport gpu = cpu;
  gpu.steps[0].mem_reserved_peak_bytes = 3e9;
  gpu.steps[0].alloc_retries = 2;
  gpu.mem_reserved_peak_bytes = 3e9;
  gpu.alloc_retries = 2;
  const nlohmann::json g = gpu;
  EXPECT_EQ(g["summary"]["mem_reserved_peak_bytes"].get<double>(), 3e9);
  EXPECT_EQ(g["steps"][0]["alloc_retries"].get<double>(), 2);
  const RunReport back = g.get<RunReport>();
  EXPECT_EQ(back.alloc_retries, 2.0);
  EXPECT_EQ(back.steps[0].mem_reserved_peak_bytes, 3e9);
  EXPECT_EQ(nlohmann::json(back), g);
}

// A float far outside int's range where an int is expected (found by fuzz_run_report) is a
// JSON error the readers turn into InputError, not undefined behaviour.
TEST(Reports, OutOfRangeIntegersAreJsonErrors) {
  const auto huge = nlohmann::json::parse(R"({"schema": 8.9e114, "run_dir": "", "hardware": "", "entries": []})");
  EXPECT_THROW(huge.get<ValidationReport>(), nlohmann::json::exception);
  const auto big = nlohmann::json::parse(R"({"schema": 99999999999, "run_dir": "", "hardware": "", "entries": []})");
  EXPECT_THROW(big.get<ValidationReport>(), nlohmann::json::exception);
  const auto text = nlohmann::json::parse(R"({"schema": "1", "run_dir": "", "hardware": "", "entries": []})");
  EXPECT_THROW(text.get<ValidationReport>(), nlohmann::json::exception);
  const auto ok = nlohmann::json::parse(R"({"schema": 1, "run_dir": "", "hardware": "", "entries": []})");
  EXPECT_EQ(ok.get<ValidationReport>().schema, 1);
}

}  // namespace
}  // namespace shardcast
