// goodput(): hand-computed cases of Daly's model, no failures = ideal, the exact optimum
// against Young's and Daly's closed forms, more failures (or slower restarts or storage) never
// raise goodput, the checkpoint size against the memory model, and the reliability preset.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "planner/decide/goodput.h"
#include "planner/model/memory_model.h"
#include "planner/model/plan.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::make_config;

ReliabilitySpec spec(double failures_per_gpu_hour, double restart_s = 600, double aggregate = 2000,
                     double node = 100) {
  ReliabilitySpec r;
  r.failures_per_gpu_hour = failures_per_gpu_hour;
  r.restart_s = restart_s;
  r.storage_write_gbytes_per_s = aggregate;
  r.node_write_gbytes_per_s = node;
  return r;
}

// A prediction with only what goodput() reads.
Prediction pred(double step_time_s, double tokens_per_s_per_gpu = 1000) {
  Prediction p;
  p.step_time_s = step_time_s;
  p.tokens_per_s_per_gpu = tokens_per_s_per_gpu;
  return p;
}

TEST(Goodput, DalyModelByHand) {
  // τ = 300 s, C = 10 s, R = 600 s, M = 3600 s:
  // wall/work = 3600·e^{600/3600}·(e^{310/3600} − 1)/300 = 3600·1.181360·0.089927/300 = 1.274840,
  // goodput = 1/1.274840 = 0.784412 (evaluated with a calculator, 6 digits).
  EXPECT_NEAR(goodput_at_interval(300, 10, 600, 3600), 0.784412, 1e-6);
  // No failures (M = ∞): only the saves cost, τ/(τ + C).
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(goodput_at_interval(300, 10, 600, inf), 300.0 / 310.0);
  // Young: √(2·10·3600) = 268.328 s.
  EXPECT_NEAR(young_interval_s(10, 3600), 268.328157, 1e-6);
}

TEST(Goodput, NoFailuresIsIdeal) {
  const TrainConfig c = make_config("llama3-70b", "H100-80GB-SXM", 1024, ShardingStrategy::full_shard, AcMode::full, 1, 4096);
  const Goodput g = goodput(c, pred(7.5, 850), spec(0));
  EXPECT_EQ(g.goodput, 1.0);
  EXPECT_EQ(g.effective_tokens_per_s_per_gpu, 850.0);
  EXPECT_EQ(g.interval_steps, 0);  // no periodic checkpoint pays off
  EXPECT_TRUE(std::isinf(g.mtbf_s));
  EXPECT_EQ(g.interruptions_per_day, 0.0);
}

TEST(Goodput, OptimumAgainstYoungAndDaly) {
  // Daly's estimate keeps terms up to O(x), x = C/2M, relative to √(2CM): the first term it
  // drops is O(x^{3/2}), which is the tolerance. Young's first-order √(2CM) misses the
  // O(√x) terms: tolerance √x.
  for (double C : {1.0, 2.43, 10.0, 60.0, 300.0, 600.0}) {
    for (double M : {3600.0, 11135.0, 1e6}) {
      SCOPED_TRACE(testing::Message() << "C " << C << " M " << M);
      const double x = C / (2 * M);
      const double opt = optimal_interval_s(C, M);
      EXPECT_NEAR(daly_interval_s(C, M), opt, opt * std::pow(x, 1.5));
      EXPECT_NEAR(young_interval_s(C, M), opt, opt * std::sqrt(x));
      // It is the maximum: 1% either side is worse.
      const double g = goodput_at_interval(opt, C, 0, M);
      EXPECT_GT(g, goodput_at_interval(opt * 0.99, C, 0, M));
      EXPECT_GT(g, goodput_at_interval(opt * 1.01, C, 0, M));
    }
  }
}

TEST(Goodput, RecommendedIntervalIsTheBestWholeStep) {
  const TrainConfig c = make_config("llama3-70b", "H100-80GB-SXM", 1024, ShardingStrategy::full_shard, AcMode::full, 1, 4096);
  const Prediction p = pred(7.3);
  const ReliabilitySpec r = spec(1.9733e-5);
  const Goodput g = goodput(c, p, r);
  ASSERT_GT(g.interval_steps, 1);
  EXPECT_EQ(recommended_checkpoint_interval_steps(c, p, r), g.interval_steps);
  EXPECT_DOUBLE_EQ(g.interval_s, double(g.interval_steps) * 7.3);
  // MTBF of the job: 1/(1024·λ) hours.
  EXPECT_NEAR(g.mtbf_s, 3600.0 / (1024 * 1.9733e-5), 1e-6);
  // No other whole number of steps within ±50% does better.
  for (int64_t k = g.interval_steps / 2; k <= g.interval_steps * 3 / 2; ++k)
    EXPECT_LE(goodput_at_interval(double(k) * 7.3, g.save_s, g.restart_s, g.mtbf_s), g.goodput) << k;
  EXPECT_NEAR(g.interval_s, optimal_interval_s(g.save_s, g.mtbf_s), 7.3);
  EXPECT_DOUBLE_EQ(g.effective_tokens_per_s_per_gpu, 1000 * g.goodput);
}

TEST(Goodput, MoreFailuresSlowerRestartsOrStorageNeverRaiseIt) {
  const TrainConfig c = make_config("llama3-70b", "H100-80GB-SXM", 2048, ShardingStrategy::full_shard, AcMode::full, 1, 4096);
  const Prediction p = pred(4.1);
  double prev = 1.0;
  for (double rate : {0.0, 1e-7, 1e-6, 5e-6, 1.9733e-5, 5e-5, 1e-4, 1e-3, 1e-2}) {
    const double g = goodput(c, p, spec(rate)).goodput;
    EXPECT_LE(g, prev) << rate;
    EXPECT_GT(g, 0) << rate;
    prev = g;
  }
  prev = 1.0;
  for (double restart : {0.0, 60.0, 600.0, 3600.0, 36000.0}) {
    const double g = goodput(c, p, spec(1.9733e-5, restart)).goodput;
    EXPECT_LE(g, prev) << restart;
    prev = g;
  }
  prev = 1.0;
  for (double agg : {1e5, 2000.0, 200.0, 20.0, 2.0}) {
    const double g = goodput(c, p, spec(1.9733e-5, 600, agg)).goodput;
    EXPECT_LE(g, prev) << agg;
    prev = g;
  }
}

TEST(Goodput, CheckpointIsTheShardOfParametersAndAdamStates) {
  const int64_t P = load_model("llama3-70b").total_params();
  auto expect = [&](const TrainConfig& c, int ns, int writers) {
    const CheckpointSize s = checkpoint_size(c);
    const StateMemory m = state_memory(P, ns, 4, 4);
    EXPECT_DOUBLE_EQ(s.per_rank_bytes, m.parameters + m.optimizer_states);
    EXPECT_DOUBLE_EQ(s.per_rank_bytes, 12.0 * double(P) / ns);
    EXPECT_DOUBLE_EQ(s.total_bytes, 12.0 * double(P));
    EXPECT_EQ(s.writers_per_node, writers);
  };
  expect(make_config("llama3-70b", "H100-80GB-SXM", 1024, ShardingStrategy::full_shard, AcMode::full, 1, 4096), 1024, 8);
  expect(make_config("llama3-70b", "H100-80GB-SXM", 1024, ShardingStrategy::shard_grad_op, AcMode::full, 1, 4096), 1024, 8);
  TrainConfig h = make_config("llama3-70b", "H100-80GB-SXM", 1024, ShardingStrategy::hybrid_shard, AcMode::full, 1, 4096);
  h.parallelism.hsdp_shard_size = 64;
  expect(h, 64, 8);
  h.parallelism.hsdp_shard_size = 4;
  expect(h, 4, 4);
  expect(make_config("llama3-70b", "H100-80GB-SXM", 16, ShardingStrategy::no_shard, AcMode::full, 1, 4096), 1, 1);
  // With a mesh each rank holds one tp · pp part of its dp_shard's shard: 1024 GPUs as dp_shard 16
  // x tp 8 x pp 8 write 1024 distinct shards (it was 16, 64 times too large a rank's).
  TrainConfig mesh = make_config("llama3-70b", "H100-80GB-SXM", 1024, ShardingStrategy::full_shard, AcMode::full, 8, 4096);
  mesh.parallelism.tp = 8;
  mesh.parallelism.pp = 8;
  expect(mesh, 1024, 8);
  // Save time: 840 GB at 2 TB/s aggregate = 0.42 s, unless one node's 100 GB/s limits it.
  const ReliabilitySpec r = spec(1e-5);
  CheckpointSize s{12.0 * double(P) / 1024, 12.0 * double(P), 8};
  EXPECT_DOUBLE_EQ(checkpoint_save_s(s, r), 12.0 * double(P) / 2e12);
  s = {12.0 * double(P) / 8, 12.0 * double(P), 8};  // one node writes it all
  EXPECT_DOUBLE_EQ(checkpoint_save_s(s, r), 12.0 * double(P) / 1e11);
}

TEST(Goodput, DefaultPresetIsLlama3AndReproducesItsEffectiveTime) {
  const ReliabilitySpec r = load_reliability("default");
  // 419 unexpected interruptions in 54 days on 16,384 GPUs; the preset keeps 5 digits.
  EXPECT_NEAR(r.failures_per_gpu_hour, 419.0 / (54 * 24 * 16384.0), 1e-4 * r.failures_per_gpu_hour);
  EXPECT_EQ(r.storage_write_gbytes_per_s, 2000);
  EXPECT_FALSE(r.source.empty());
  // Llama 3 405B on 16,384 GPUs, full sharding: one interruption every 3.09 h; Llama 3 reports
  // > 90% effective training time. The model must land above 0.9 but not at 1 (the step time
  // only rounds the interval: 5 s is of the order of that run's steps).
  TrainConfig c = make_config("llama3.1-405b", "H100-80GB-SXM", 16384, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  const Goodput g = goodput(c, pred(5.0), r);
  EXPECT_NEAR(g.mtbf_s / 3600, 3.09, 0.01);
  EXPECT_GT(g.goodput, 0.90);
  EXPECT_LT(g.goodput, 0.98);
}

TEST(Goodput, PresetErrorsNameFileAndKey) {
  const auto dir = std::filesystem::temp_directory_path() / "shardcast_goodput_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    const auto p = dir / name;
    std::ofstream(p) << text;
    return p.string();
  };
  const std::string ok =
      "source = \"x\"\nfailures_per_gpu_hour = 1e-5\nrestart_s = 600\nstorage_write_gbytes_per_s = 2000\n"
      "node_write_gbytes_per_s = 100\n";
  EXPECT_NO_THROW(load_reliability(write("ok.toml", ok)));
  try {
    load_reliability(write("typo.toml", ok + "restart_secs = 5\n"));
    ADD_FAILURE() << "unknown key accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("restart_secs"), std::string::npos) << e.what();
  }
  try {
    load_reliability(write("neg.toml", "source = \"x\"\nfailures_per_gpu_hour = -1\nrestart_s = 600\n"
                                       "storage_write_gbytes_per_s = 2000\nnode_write_gbytes_per_s = 100\n"));
    ADD_FAILURE() << "negative rate accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "failures_per_gpu_hour");
  }
  try {
    load_reliability(write("missing.toml", "source = \"x\"\nfailures_per_gpu_hour = 1e-5\n"));
    ADD_FAILURE() << "missing key accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "restart_s");
  }
  EXPECT_THROW(load_reliability("no-such-profile"), ConfigError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shardcast::planner
