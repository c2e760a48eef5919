// MetricsTail: steps arrive as lines are completed; partial lines wait; bad lines are reported.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gui/metrics_tail.h"

using namespace shardcast::gui;
namespace fs = std::filesystem;

namespace {
std::string line(int step, double loss) {
  return "{\"step\":" + std::to_string(step) + ",\"loss\":" + std::to_string(loss) +
         ",\"lr\":0.001,\"grad_norm\":1,\"tokens_per_s_per_gpu\":1000,\"mfu\":0.1,\"hfu\":0.1,\"step_time_s\":0.5,"
         "\"mem_peak_bytes\":1e6}";
}
}  // namespace

TEST(MetricsTail, IncrementalPartialAndRestart) {
  const fs::path p = fs::temp_directory_path() / ("metrics_tail_test_" + std::to_string(::getpid()) + ".jsonl");
  fs::remove(p);
  MetricsTail t(p.string());
  EXPECT_TRUE(t.poll().steps.empty());  // not there yet
  {
    std::ofstream o(p);
    o << line(1, 5.5) << "\n" << line(2, 5.0).substr(0, 20);  // second line incomplete
  }
  auto b = t.poll();
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_EQ(b.steps[0].step, 1);
  EXPECT_DOUBLE_EQ(b.steps[0].loss, 5.5);
  {
    std::ofstream o(p, std::ios::app);
    o << line(2, 5.0).substr(20) << "\n" << "garbage\n" << line(3, 4.5) << "\n";
  }
  b = t.poll();
  ASSERT_EQ(b.steps.size(), 2u);
  EXPECT_EQ(b.steps[0].step, 2);
  EXPECT_EQ(b.steps[1].step, 3);
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_NE(b.errors[0].find(":3:"), std::string::npos) << b.errors[0];
  EXPECT_TRUE(t.poll().steps.empty());
  {
    std::ofstream o(p, std::ios::trunc);  // a new run truncates the file
    o << line(1, 6.0) << "\n";
  }
  b = t.poll();
  ASSERT_EQ(b.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(b.steps[0].loss, 6.0);
  EXPECT_EQ(read_metrics_jsonl(p.string()).size(), 1u);
  fs::remove(p);
}
