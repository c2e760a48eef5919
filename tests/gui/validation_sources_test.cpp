// Validation sources: the pairs read from a run directory (validation.json, else
// run_report.json against run.toml's [prediction]) and the errors for a directory that is not
// a run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gui/validation_tab.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/run_report.h"

using namespace shardcast;
using namespace shardcast::gui;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("shardcast_gui_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
}  // namespace

TEST(ValidationSources, ValidationJson) {
  const fs::path d = fresh_dir("vjson");
  ValidationReport v;
  v.run_dir = d.string();
  v.hardware = "cpu";
  v.entries = {{"tokens_per_s_per_gpu", 7768, 5092}, {"mem.optimizer_states", 524288, 524288}};
  write(d / "validation.json", nlohmann::json(v).dump());
  const auto pts = load_run_directory(d.string());
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].quantity, "tokens_per_s_per_gpu");
  EXPECT_DOUBLE_EQ(pts[0].predicted, 7768);
  EXPECT_DOUBLE_EQ(pts[0].measured, 5092);
  EXPECT_EQ(pts[1].quantity, "mem.optimizer_states");
  fs::remove_all(d);
}

TEST(ValidationSources, RunReportAgainstRunTomlPrediction) {
  const fs::path d = fresh_dir("report");
  RunReport r;
  r.hardware = "cpu";
  r.world_size = 2;
  r.sharding_strategy = "full_shard";
  r.median_step_time_s = 0.1;
  r.tokens_per_s_per_gpu = 5000;
  r.mfu = 0.03;
  r.hfu = 0.03;
  r.mem_peak_bytes = 1e7;
  write(d / "run_report.json", nlohmann::json(r).dump());
  TrainConfig c;
  c.model_preset = "tiny-2l";
  c.model = load_model("tiny-2l");
  c.training.seq_len = 128;
  write(d / "run.toml", write_train_config(c));
  EXPECT_THROW(load_run_directory(d.string()), InputError);  // no [prediction] table
  c.prediction.present = true;
  c.prediction.tokens_per_s_per_gpu = 7000;
  c.prediction.step_time_s = 0.07;
  c.prediction.mem_peak_bytes = 8e6;
  c.prediction.hardware = "cpu";
  write(d / "run.toml", write_train_config(c));
  const auto pts = load_run_directory(d.string());
  ASSERT_EQ(pts.size(), 5u);
  bool tps = false;
  for (const auto& p : pts)
    if (p.quantity == "tokens_per_s_per_gpu") {
      tps = true;
      EXPECT_DOUBLE_EQ(p.predicted, 7000);
      EXPECT_DOUBLE_EQ(p.measured, 5000);
    }
  EXPECT_TRUE(tps);
  fs::remove_all(d);
}

TEST(ValidationSources, NotARunDirectory) {
  const fs::path d = fresh_dir("empty");
  try {
    load_run_directory(d.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no validation.json"), std::string::npos) << e.what();
  }
  write(d / "validation.json", "{\"schema\": 1}");
  EXPECT_THROW(load_run_directory(d.string()), InputError);  // malformed: names the file
  fs::remove_all(d);
}

// A published CSV also states its within-source pairs (planner/evidence/pairs.h), the line
// `shardcast validate --pairs` summarises; a CSV without two rows one setting apart states none.
TEST(ValidationSources, PublishedCsvStatesItsWithinSourcePairs) {
  std::vector<std::string> skipped;
  std::string decisions;
  const auto pts = load_published_csv(std::string(SHARDCAST_TEST_SOURCE_DIR) + "/configs/published/outside.csv",
                                      skipped, &decisions);
  EXPECT_FALSE(pts.empty());
  EXPECT_EQ(decisions.rfind("outside.csv: ", 0), 0u) << decisions;
  EXPECT_NE(decisions.find("pairs of runs one setting apart"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("ranked as measured"), std::string::npos) << decisions;

  const fs::path d = fresh_dir("one_row_csv");
  write(d / "one.csv",
        "source,row_id,model,n_layers,d_model,n_heads,n_kv_heads,ffn_dim,vocab,seq_len,gpu_type,n_gpus,gpus_per_node,"
        "inter_node_gbps,sharding_key,ac_key,micro_batch_per_gpu,grad_accum,compile_key,fp8_key,in_scope_fsdp_only,"
        "measured_tokens_per_sec_per_gpu,framework\n"
        "team,r1,Llama2-7B,32,4096,32,32,11008,32000,4096,H100-80GB-SXM,8,8,3200,FULL_SHARD,full,2,1,no,no,yes,3000,"
        "torchtitan\n");
  decisions = "stale";
  skipped.clear();
  EXPECT_EQ(load_published_csv((d / "one.csv").string(), skipped, &decisions).size(), 1u);
  EXPECT_EQ(decisions, "");
  fs::remove_all(d);
}
