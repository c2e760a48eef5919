// Imports of other trainers' logs (planner/evidence/import/): each torchtitan and fms-fsdp log
// generation, malformed lines, no steps, warm-up beyond the run, the run directory read back by
// validate's reader, the torchtitan TOML, and torchtitan's FLOP count.
//
// Fixtures: tests/planner/data/*.log, written by data/make_import_fixtures.py with each
// trainer's format string at the commit it names (pytorch/torchtitan@7cd272573, 9f5a56d67,
// a10262aeb, 4d182a13e, a85e2a536^, a85e2a536, c13b9d66b; foundation-model-stack/fms-fsdp@7c926a1,
// 9137d48^, 9137d48, 91300d1, d5de8a8, 0e43c6a): one per format since each project's first code.
#include <algorithm>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "planner/evidence/import/run_import.h"
#include "planner/evidence/import/torchtitan_config.h"
#include "planner/evidence/import/train_log.h"
#include "planner/model/plan.h"
#include "planner/evidence/run_validation.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "tests/planner/test_util.h"

namespace shardcast::planner {
namespace {

namespace fs = std::filesystem;

std::string data(const std::string& name) { return std::string(SHARDCAST_TEST_DATA_DIR) + "/" + name; }
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TrainConfig titan_8b(int gpus = 8) {
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", gpus, ShardingStrategy::full_shard,
                                    AcMode::selective_op, 1, 8192);
  c.precision.param_dtype = "bf16";
  c.precision.reduce_dtype = "fp32";
  return c;
}

TEST(ImportNumbers, PythonPrintedNumbers) {
  EXPECT_EQ(*parse_logged_number("5,200"), 5200);
  EXPECT_EQ(*parse_logged_number("1,254.80"), 1254.80);
  EXPECT_EQ(*parse_logged_number("193,831"), 193831);
  EXPECT_EQ(*parse_logged_number("3e-05"), 3e-05);
  EXPECT_EQ(*parse_logged_number("-0.5"), -0.5);
  EXPECT_TRUE(std::isnan(*parse_logged_number("nan")));
  for (const char* bad : {"", ",", "1,2", "12,34,567", "1.2.3", "GiB", "5,200x", "1e", "--1", "1,0000"})
    EXPECT_FALSE(parse_logged_number(bad)) << bad;
}

TEST(ImportNumbers, StripAnsi) {
  EXPECT_EQ(strip_ansi("\x1b[31mstep:  1  \x1b[38;2;180;60;0mgrad_norm: 1\x1b[39m\r"), "step:  1  grad_norm: 1");
  EXPECT_EQ(strip_ansi("truncated \x1b[38;2"), "truncated ");
}

// Every torchtitan generation gives the same steps: the fixtures log the same run.
TEST(ImportTorchtitan, EveryGeneration) {
  for (const char* f : {"torchtitan_2024.log", "torchtitan_2025_03.log", "torchtitan_2025_07.log",
                        "torchtitan_2026_08.log"}) {
    SCOPED_TRACE(f);
    const TrainLog log = parse_torchtitan_log(slurp(data(f)), f);
    ASSERT_EQ(log.steps.size(), 6u);
    EXPECT_EQ(log.steps[0].step, 1);
    EXPECT_EQ(log.steps[5].step, 50);
    EXPECT_NEAR(log.steps[2].loss, 7.5521, 1e-4);
    EXPECT_DOUBLE_EQ(*log.steps[2].mem_reserved_bytes, 61.37 * double(1ull << 30));
    ASSERT_TRUE(log.steps[2].mfu_pct);
  }
  const TrainLog old = parse_torchtitan_log(slurp(data("torchtitan_2024.log")), "a");
  EXPECT_EQ(old.steps[3].tps, 5862);
  EXPECT_FALSE(old.steps[3].grad_norm);
  EXPECT_FALSE(old.steps[3].tflops);
  const TrainLog mid = parse_torchtitan_log(slurp(data("torchtitan_2025_03.log")), "b");
  EXPECT_TRUE(mid.steps[3].tflops);
  EXPECT_FALSE(mid.steps[3].grad_norm);
  const TrainLog gn = parse_torchtitan_log(slurp(data("torchtitan_2025_07.log")), "c");
  EXPECT_DOUBLE_EQ(*gn.steps[3].grad_norm, 1.2345);
}

// torchtitan of 2024-03-12 .. 2024-11-22 prints "wps:" (the same tokens/s per device) and, until
// 9f5a56d67, the reserved peak only in % ("peak_memory: 77.58%"); the fixtures log the same run.
TEST(ImportTorchtitan, WpsGenerations) {
  for (const char* f : {"torchtitan_2024_03_12.log", "torchtitan_2024_03_15.log", "torchtitan_2024_04.log"}) {
    SCOPED_TRACE(f);
    const TrainLog log = parse_torchtitan_log(slurp(data(f)), f);
    ASSERT_EQ(log.steps.size(), 6u);
    EXPECT_EQ(log.steps[5].step, 50);
    EXPECT_EQ(log.steps[3].tps, 5862);
    EXPECT_NEAR(log.steps[2].loss, 7.5521, 1e-4);
    EXPECT_TRUE(log.notes.empty()) << log.notes.front();  // no field left unread
  }
  const TrainLog pct = parse_torchtitan_log(slurp(data("torchtitan_2024_03_12.log")), "a");
  EXPECT_FALSE(pct.steps[2].mem_reserved_bytes);
  EXPECT_DOUBLE_EQ(*pct.steps[2].mem_reserved_pct, 77.58);
  const TrainLog gib = parse_torchtitan_log(slurp(data("torchtitan_2024_03_15.log")), "b");
  EXPECT_DOUBLE_EQ(*gib.steps[2].mem_reserved_bytes, 61.37 * double(1ull << 30));
  EXPECT_FALSE(gib.steps[2].mfu_pct);  // mfu since e5d1b8915
  const TrainLog release = parse_torchtitan_log(slurp(data("torchtitan_2024_04.log")), "c");
  EXPECT_DOUBLE_EQ(*release.steps[2].mem_reserved_bytes, 61.37 * double(1ull << 30));
  ASSERT_TRUE(release.steps[2].mfu_pct);
}

// Every torchtitan fixture imports into a run with the same summary (the fixtures log one run);
// a reserved peak in % is converted with the GPU's memory, and the import says so.
TEST(ImportTorchtitan, EveryFormatImports) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (const char* f : {"torchtitan_2024_03_12.log", "torchtitan_2024_03_15.log", "torchtitan_2024_04.log",
                        "torchtitan_2024.log", "torchtitan_2025_03.log", "torchtitan_2025_07.log"}) {
    SCOPED_TRACE(f);
    const ImportedRun r = import_run(parse_torchtitan_log(slurp(data(f)), f), titan_8b(), hw, 10);
    EXPECT_DOUBLE_EQ(r.report.tokens_per_s_per_gpu, 5859);
    ASSERT_TRUE(r.report.mem_reserved_peak_bytes);
    const double want = std::string(f) == "torchtitan_2024_03_12.log" ? 0.7758 * hw.gpu.hbm_bytes : 61.37 * double(1ull << 30);
    EXPECT_DOUBLE_EQ(*r.report.mem_reserved_peak_bytes, want);
    bool said = false;
    for (const auto& n : r.notes) said |= n.find("in % of the device's memory only") != std::string::npos;
    EXPECT_EQ(said, std::string(f) == "torchtitan_2024_03_12.log");
  }
}

TEST(ImportTorchtitan, RanksMergedAndValidationSkipped) {
  const TrainLog log = parse_torchtitan_log(slurp(data("torchtitan_2026_08.log")), "d");
  ASSERT_EQ(log.steps.size(), 6u);
  EXPECT_EQ(log.steps[1].ranks, 2);
  // rank0 5,790 and rank1 round(5790.2 * 0.98) = 5,674: the mean.
  EXPECT_DOUBLE_EQ(log.steps[1].tps, (5790 + 5674) / 2.0);
  bool saw_validate = false;
  for (const auto& n : log.notes) saw_validate |= n.find("validate step") != std::string::npos;
  EXPECT_TRUE(saw_validate);
}

TEST(ImportTorchtitan, MfuNotAvailableUnderFp8) {
  const TrainLog log = parse_torchtitan_log(slurp(data("torchtitan_2026_fp8.log")), "e");
  ASSERT_EQ(log.steps.size(), 6u);
  EXPECT_FALSE(log.steps[2].mfu_pct);
  EXPECT_TRUE(log.steps[2].tflops);
}

TEST(ImportTorchtitan, ForeignFieldsNoted) {
  const TrainLog log = parse_torchtitan_log(
      "step: 5  loss:  7.0000  memory: 10.00GiB(12.50%)  tps: 1,000  tflops: 1.00  mfu: 1.00%  | iso_tps: 2,000\n", "f");
  ASSERT_EQ(log.steps.size(), 1u);
  ASSERT_EQ(log.notes.size(), 1u);
  EXPECT_NE(log.notes[0].find("iso_tps"), std::string::npos);
}

// A metric line that cannot be read names the file and line; other lines are skipped.
TEST(ImportTorchtitan, MalformedLinesNameFileAndLine) {
  const std::string ok = "step: 1  loss:  7.0000  memory: 10.00GiB(12.50%)  tps: 1,000  mfu: 1.00%\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"step: 2  loss:  x.5  memory: 10.00GiB(12.50%)  tps: 1,000  mfu: 1.00%", "loss 'x.5'"},
      {"step: 2  loss:  7.0  memory: 10.00GB  tps: 1,000  mfu: 1.00%", "memory '10.00GB'"},
      {"step: 2  loss:  7.0  memory: 10.00GiB(12.50%)  tps: 1,0,0  mfu: 1.00%", "tps '1,0,0'"},
      {"step: 2  loss:  7.0  memory: 10.00GiB(12.50%)  mfu: 1.00%", "no 'tps:'"},
      {"step: 2  loss:  7.0  memory: 10.00GiB(12.50%)  tps:", "'tps:' has no value"},
      {"step: 2.5  loss:  7.0  memory: 10.00GiB(12.50%)  tps: 1", "step '2.5'"},
      {"step: 77777777777777777771  loss:  7.0  memory: 10.00GiB(12.50%)  tps: 1", "step '7777"},  // fuzzer
      {"step: 2  loss:  7.0  memory: 10.00GiB(12.50%)  tps: 1  mfu: 1.00", "mfu '1.00'"},
      {"step: 2  loss: 7.0 junk  memory: 10.00GiB  tps: 1", "expected 'key:' but found 'junk'"},
  };
  for (const auto& [line, what] : bad) {
    SCOPED_TRACE(line);
    try {
      parse_torchtitan_log("other line\n" + ok + "\x1b[31m" + line + "\n", "run.log");
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("run.log:3:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
}

TEST(ImportTorchtitan, ZeroStepsAndWarmupBeyondTheRun) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const TrainLog none = parse_torchtitan_log("[titan] starting\nno metrics here\n", "empty.log");
  EXPECT_TRUE(none.steps.empty());
  try {
    import_run(none, titan_8b(), hw, 0);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("empty.log: no torchtitan step"), std::string::npos) << e.what();
  }
  const TrainLog log = parse_torchtitan_log(slurp(data("torchtitan_2025_07.log")), "t.log");
  try {
    import_run(log, titan_8b(), hw, 50);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--warmup 50"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("last step logged in t.log is 50"), std::string::npos) << e.what();
  }
  EXPECT_THROW(import_run(log, titan_8b(), hw, -1), UsageError);
  EXPECT_NO_THROW(import_run(log, titan_8b(), hw, 49));
}

// torchtitan's FLOPs per token: pytorch/torchtitan#1287 logged Llama 3 8B at seq_len 8192 with
// tps 5,856 and tflops 339.16. tps is rounded to an integer (±0.5) and tflops to 2 decimals
// (±0.005): together under 1e-4 relative, the tolerance.
TEST(ImportMfu, TorchtitanFlopCountMatchesItsLogs) {
  const ModelSpec m = load_model("llama3.1-8b");
  const double fpt = m.flops_per_token_torchtitan(8192);
  EXPECT_DOUBLE_EQ(fpt, 6.0 * double(m.total_params() - m.embedding_params()) + 12.0 * 32 * 4096 * 8192);
  EXPECT_NEAR(fpt * 5856 / 1e12 / 339.16, 1.0, 1e-4);
  // The planner's convention counts the embedding too: larger by 6·vocab·d.
  EXPECT_DOUBLE_EQ(m.flops_per_token(8192) - fpt, 6.0 * 128256 * 4096);
  ModelSpec tied = m;
  tied.tied_embeddings = true;
  EXPECT_DOUBLE_EQ(tied.flops_per_token_torchtitan(8192), tied.flops_per_token(8192));
}

TEST(ImportRun, SummaryAfterWarmupAndBothMfuConventions) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const TrainLog log = parse_torchtitan_log(slurp(data("torchtitan_2025_07.log")), "t.log");
  const ImportedRun r = import_run(log, titan_8b(), hw, 10);
  EXPECT_EQ(r.cfg.runtime, "torchtitan");
  ASSERT_EQ(r.report.steps.size(), 6u);
  // steps 20..50 after warm-up 10: tps 5851, 5862, 5856, 5871 -> median 5859.
  EXPECT_DOUBLE_EQ(r.report.tokens_per_s_per_gpu, 5859);
  // Step time per logged step = micro 1 x 8192 x accum 1 tokens / tps; median of 4 = mean of the middle two.
  EXPECT_DOUBLE_EQ(r.report.median_step_time_s, 0.5 * (8192.0 / 5856 + 8192.0 / 5862));
  EXPECT_DOUBLE_EQ(*r.report.mem_reserved_peak_bytes, 61.37 * double(1ull << 30));
  EXPECT_EQ(r.report.mem_peak_bytes, 0);
  const ModelSpec& m = r.cfg.model;
  EXPECT_DOUBLE_EQ(r.report.mfu, 5859 * m.flops_per_token(8192) / hw.peak_flops("bf16"));
  // HFU in the planner's count: op-level selective checkpointing recomputes some GEMMs, so HFU
  // exceeds MFU by the ratio the planner's own prediction has (relative 1e-12: same formula).
  TrainConfig tc = titan_8b();
  tc.runtime = "torchtitan";
  const Prediction p = plan(tc, hw, resolve_plan_options(tc, hw));
  EXPECT_GT(r.report.hfu, r.report.mfu);
  EXPECT_NEAR(r.report.hfu / r.report.mfu, p.hfu / p.mfu, 1e-12);
  const double titan = r.info["summary"]["mfu_torchtitan_convention"].get<double>();
  EXPECT_DOUBLE_EQ(titan, 5859 * m.flops_per_token_torchtitan(8192) / hw.peak_flops("bf16"));
  // The logged MFU is over torchtitan's H100 SXM peak, 989e12 (torchtitan/tools/utils.py
  // get_peak_flops); rescaled to that peak, the recomputed torchtitan-convention MFU matches the
  // logged one to the log's rounding (mfu printed with 2 decimals: ±0.005 points; the median of
  // integer tps against that of unrounded ones: < 0.001 points).
  EXPECT_NEAR(100 * titan * hw.peak_flops("bf16") / 989e12, r.info["summary"]["mfu_logged_pct"].get<double>(), 0.01);
  // No warning about the FLOP count: model and seq_len agree with the log.
  for (const auto& n : r.notes) EXPECT_EQ(n.find("warning"), std::string::npos) << n;
  // A wrong --seq-len is caught by torchtitan's own tflops / tps.
  TrainConfig wrong = titan_8b();
  wrong.training.seq_len = 4096;
  const ImportedRun w = import_run(log, wrong, hw, 10);
  bool warned = false;
  for (const auto& n : w.notes) warned |= n.rfind("warning: the log's FLOPs per token", 0) == 0;
  EXPECT_TRUE(warned);
}

// A run's numbers as pytorch/torchtitan#1287 logged them (Llama 3 8B, seq_len 8192, H100 SXM,
// 2025-06, the a85e2a536^ format): the import reproduces torchtitan's FLOP count (no warning)
// and its MFU once rescaled to torchtitan's 989e12 peak, to the log's rounding (0.01 points).
TEST(ImportRun, ReproducesAPublishedTorchtitanLine) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  std::string text;
  for (int step : {200, 210, 220})
    text += "[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - \x1b[31mstep: " + std::to_string(step) +
            "  \x1b[32mloss:  6.1384  \x1b[33mmemory: 49.66GiB(52.28%)  \x1b[34mtps: 5,856  \x1b[36mtflops: 339.16  "
            "\x1b[35mmfu: 34.29%\x1b[39m\n";
  const ImportedRun r = import_run(parse_torchtitan_log(text, "1287.log"), titan_8b(), hw, 0);
  for (const auto& n : r.notes) EXPECT_EQ(n.find("warning"), std::string::npos) << n;
  const double titan = r.info["summary"]["mfu_torchtitan_convention"].get<double>();
  EXPECT_NEAR(100 * titan * hw.peak_flops("bf16") / 989e12, 34.29, 0.01);
  EXPECT_DOUBLE_EQ(*r.report.mem_reserved_peak_bytes, 49.66 * double(1ull << 30));
}

TEST(ImportRun, RefusedWhenTheRuntimeCannotRunTheConfig) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const TrainLog log = parse_torchtitan_log(slurp(data("torchtitan_2025_07.log")), "t.log");
  TrainConfig c = titan_8b();
  c.precision.reduce_dtype = "bf16";  // torchtitan reduces in fp32 only
  EXPECT_THROW(import_run(log, c, hw, 10), ConfigError);
}

TEST(ImportRun, RunDirReadBackByValidate) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const TrainLog log = parse_torchtitan_log(slurp(data("torchtitan_2024.log")), "t.log");
  const ImportedRun r = import_run(log, titan_8b(), hw, 10);
  const fs::path dir = fs::temp_directory_path() / ("shardcast_import_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto written = write_run_dir(r, dir.string());
  EXPECT_EQ(written.size(), 3u);
  const RunDir rd = read_run_dir(dir.string());
  EXPECT_EQ(rd.cfg.runtime, "torchtitan");
  EXPECT_EQ(rd.cfg.training.seq_len, 8192);
  EXPECT_EQ(rd.cfg.activation_checkpointing.mode, AcMode::selective_op);
  EXPECT_DOUBLE_EQ(rd.report.tokens_per_s_per_gpu, r.report.tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(*rd.report.mem_reserved_peak_bytes, *r.report.mem_reserved_peak_bytes);
  EXPECT_DOUBLE_EQ(*rd.report.steps[2].mem_reserved_peak_bytes, 61.37 * double(1ull << 30));
  const RunComparison cmp = compare_run(rd, hw);
  EXPECT_GT(cmp.predicted_step_s, 0);
  EXPECT_DOUBLE_EQ(cmp.measured_step_s, r.report.median_step_time_s);
  // No allocated peak in a torchtitan log: validate compares the reserved peaks.
  EXPECT_DOUBLE_EQ(cmp.measured_mem_bytes, *r.report.mem_reserved_peak_bytes);
  fs::remove_all(dir);
}

TEST(ImportFms, BothGenerations) {
  const TrainLog a = parse_fms_fsdp_log(slurp(data("fms_fsdp_2024_04.log")), "fms.log");
  ASSERT_EQ(a.steps.size(), 4u);
  EXPECT_EQ(a.steps[1].step, 200);
  EXPECT_DOUBLE_EQ(*a.steps[1].step_time_s, 3.4051);
  EXPECT_DOUBLE_EQ(a.steps[1].tps, 2405);  // int(2 * 4096 / 3.4051)
  EXPECT_DOUBLE_EQ(*a.steps[1].mem_reserved_bytes, 71940702208.0 + 2097152);
  EXPECT_DOUBLE_EQ(*a.steps[1].mem_allocated_bytes, 60129542144.0 + 1048576);
  EXPECT_DOUBLE_EQ(*a.steps[1].lr, 3e-4);
  const TrainLog b = parse_fms_fsdp_log(slurp(data("fms_fsdp_2024_03.log")), "old.log");
  ASSERT_EQ(b.steps.size(), 3u);
  EXPECT_EQ(b.steps[1].tps, 0);  // no per-interval rate in this generation
  EXPECT_DOUBLE_EQ(*b.steps[1].step_time_s, 1.0);
  EXPECT_DOUBLE_EQ(*b.steps[1].mem_allocated_bytes, 35433480192.0);  // "active memory"
}

// fms-fsdp before 9137d48 (2024-03-14) prints the LR as a list, one per parameter group
// ("LR: [6e-05]"): read as the first group's. Every format's fixture parses and imports.
TEST(ImportFms, EveryFormat) {
  struct Case {
    const char* file;
    bool grad_norm;
    double lr;
    bool current_rate;  // "current token per gpu per sec" (since d5de8a8)
  };
  const Case cases[] = {{"fms_fsdp_2024_02_06.log", false, 6e-05, false}, {"fms_fsdp_2024_02.log", true, 6e-05, false},
                        {"fms_fsdp_2024_03.log", true, 3e-04, false},     {"fms_fsdp_2024_03_15.log", true, 3e-04, false},
                        {"fms_fsdp_2024_04_07.log", true, 3e-04, true},   {"fms_fsdp_2024_04.log", true, 3e-04, true}};
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 2, 4096);
  c.precision.reduce_dtype = "bf16";
  for (const Case& k : cases) {
    SCOPED_TRACE(k.file);
    const TrainLog log = parse_fms_fsdp_log(slurp(data(k.file)), k.file);
    ASSERT_GE(log.steps.size(), 3u);
    EXPECT_EQ(log.steps[1].step, 200);
    EXPECT_EQ(log.steps[1].grad_norm.has_value(), k.grad_norm);
    ASSERT_TRUE(log.steps[1].lr);
    EXPECT_DOUBLE_EQ(*log.steps[1].lr, k.lr);
    EXPECT_EQ(log.steps[1].tps > 0, k.current_rate);
    ASSERT_TRUE(log.steps[1].mem_allocated_bytes);  // "active memory" or "allocated memory"
    const ImportedRun r = import_run(log, c, hw, 100);
    EXPECT_GT(r.report.tokens_per_s_per_gpu, 0);
    EXPECT_GT(r.report.mem_peak_bytes, 0);
  }
  // A list that is not one of numbers is named, as any bad value.
  EXPECT_THROW(parse_fms_fsdp_log("step: 100\nLR: [x]\n", "l.log"), InputError);
  EXPECT_THROW(parse_fms_fsdp_log("step: 100\nLR: []\n", "l.log"), InputError);
}

TEST(ImportFms, RunFromStepTimes) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 2, 4096);
  c.precision.reduce_dtype = "bf16";
  const TrainLog b = parse_fms_fsdp_log(slurp(data("fms_fsdp_2024_03.log")), "old.log");
  const ImportedRun r = import_run(b, c, hw, 100);
  EXPECT_EQ(r.cfg.runtime, "fms-fsdp");
  // steps 200, 300: 1.0 s and 1.02 s -> median 1.01 s; tps = 2·4096 / step time.
  EXPECT_DOUBLE_EQ(r.report.median_step_time_s, 1.01);
  EXPECT_DOUBLE_EQ(r.report.tokens_per_s_per_gpu, 0.5 * (8192 / 1.0 + 8192 / 1.02));
  EXPECT_DOUBLE_EQ(r.report.mem_peak_bytes, 35433480192.0);
  EXPECT_DOUBLE_EQ(*r.report.mem_reserved_peak_bytes, 40802189312.0);
  c.training.grad_accum = 2;  // fms-fsdp has none
  EXPECT_THROW(import_run(b, c, hw, 100), ConfigError);
}

TEST(ImportFms, MalformedAndIncompleteBlocks) {
  try {
    parse_fms_fsdp_log("step: 100\nloss: 3.2\nreserved memory: 12GB\n", "f.log");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("f.log:3: 'reserved memory:' value '12GB'"), std::string::npos) << e.what();
  }
  try {  // a block without throughput in the middle of the log
    parse_fms_fsdp_log("step: 100\nloss: 3.2\nreserved memory: 12\nstep: 200\n", "g.log");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("g.log:1: fms-fsdp report block of step 100 has no"), std::string::npos)
        << e.what();
  }
  // The last block cut short (the job was killed while printing): skipped with a note.
  const TrainLog t = parse_fms_fsdp_log(
      "step: 100\nloss: 3.2\nreserved memory: 12\ncurrent step time: 1.5\nstep: 200\nloss: 3.1\n", "h.log");
  ASSERT_EQ(t.steps.size(), 1u);
  ASSERT_FALSE(t.notes.empty());
  EXPECT_NE(t.notes.back().find("h.log:5: last report block (step 200) incomplete"), std::string::npos);
  EXPECT_THROW(parse_fms_fsdp_log("step: 200\nloss: 1\nreserved memory: 1\ncurrent step time: 1\nstep: 100\nloss: 1\n"
                                  "reserved memory: 1\ncurrent step time: 1\n",
                                  "i.log"),
               InputError);  // steps going back: two runs in one log
  EXPECT_TRUE(parse_fms_fsdp_log("nothing\n", "j.log").steps.empty());
}

TEST(ImportTorchtitanToml, ReadsThePlanKeysAndListsTheRest) {
  const TorchtitanJob j = parse_torchtitan_job_toml(R"(
[job]
dump_folder = "./outputs"
[model]
name = "llama3"
flavor = "8B"
converters = ["quantize.linear.float8"]
[training]
local_batch_size = 2
global_batch_size = 64
seq_len = 8192
mixed_precision_param = "bfloat16"
mixed_precision_reduce = "float32"
dataset = "c4"
[parallelism]
data_parallel_shard_degree = -1
data_parallel_replicate_degree = 2
[activation_checkpoint]
mode = "selective"
selective_ac_option = "op"
[compile]
enable = true
)", "job.toml");
  EXPECT_EQ(j.model_preset, "llama3.1-8b");
  EXPECT_EQ(j.fp8, "tensorwise");
  EXPECT_TRUE(j.compile);
  EXPECT_EQ(*j.local_batch_size, 2);
  EXPECT_EQ(*j.global_batch_size, 64);
  EXPECT_EQ(*j.dp_shard, -1);
  EXPECT_EQ(*j.selective_ac_option, "op");
  EXPECT_EQ(j.ignored, (std::vector<std::string>{"job.dump_folder", "training.dataset"}));
  EXPECT_FALSE(j.adamw_update.has_value());
  EXPECT_EQ(*parse_torchtitan_job_toml("[model]\nname = \"llama3\"\nflavor = \"8B\"\n[optimizer]\nimplementation = \"for-loop\"\n",
                                       "job.toml")
                 .adamw_update,
            AdamwUpdate::for_loop);
  try {
    parse_torchtitan_job_toml("[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nmixed_precision_reduce = \"bfloat16\"\n",
                              "bad.toml");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("training.mixed_precision_reduce"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_torchtitan_job_toml("[training]\nseq_len = 8192\n", "nomodel.toml"), ConfigError);
  // The mesh is read (issue 54): degrees, async TP, schedule, micro-batch size, layers per stage,
  // CP's rotate method; expert parallelism and schedules the planner does not model are refused.
  const TorchtitanJob m = parse_torchtitan_job_toml(
      "[model]\nname = \"llama3\"\nflavor = \"70B\"\n[parallelism]\ntensor_parallel_degree = 8\n"
      "context_parallel_degree = 2\npipeline_parallel_degree = 4\nenable_async_tensor_parallel = true\n"
      "pipeline_parallel_schedule = \"ZBVZeroBubble\"\npipeline_parallel_microbatch_size = 2\n"
      "pipeline_parallel_layers_per_stage = 4\ncontext_parallel_rotate_method = \"alltoall\"\n",
      "mesh.toml");
  EXPECT_EQ(*m.tp, 8);
  EXPECT_EQ(*m.cp, 2);
  EXPECT_EQ(*m.pp, 4);
  EXPECT_TRUE(*m.tp_async);
  EXPECT_EQ(*m.pp_schedule, "ZBVZeroBubble");
  EXPECT_EQ(*m.pp_microbatch_size, 2);
  EXPECT_EQ(*m.pp_layers_per_stage, 4);
  EXPECT_EQ(*m.cp_rotate, "alltoall");
  EXPECT_TRUE(m.ignored.empty());
  for (const char* bad : {"expert_parallel_degree = 2\n", "pipeline_parallel_schedule = \"DualPipeV\"\n",
                          "context_parallel_rotate_method = \"ring\"\n", "enable_async_tensor_parallel = 1\n"})
    EXPECT_THROW(parse_torchtitan_job_toml(std::string("[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n") + bad,
                                           "bad.toml"),
                 ConfigError)
        << bad;
}

// Found by an audit of import with meshes: what torchtitan runs otherwise than the plain reading.
TEST(ImportTorchtitanToml, ReadsWhatTorchtitanRunsNotWhatTheKeySpells) {
  const std::string head = "[model]\nname = \"llama3\"\nflavor = \"70B\"\n";
  // torch's get_schedule_class ignores case: the name comes back in run.toml's spelling.
  EXPECT_EQ(*parse_torchtitan_job_toml(head + "[parallelism]\npipeline_parallel_schedule = \"interleaved1f1b\"\n",
                                       "case.toml")
                 .pp_schedule,
            "Interleaved1F1B");
  // compile.components decides whether the model is compiled (default: ["model", "loss"]).
  EXPECT_TRUE(parse_torchtitan_job_toml(head + "[compile]\nenable = true\n", "c.toml").compile_model_listed);
  EXPECT_FALSE(
      parse_torchtitan_job_toml(head + "[compile]\nenable = true\ncomponents = [\"loss\"]\n", "c.toml").compile_model_listed);
  EXPECT_TRUE(parse_torchtitan_job_toml(head + "[compile]\ncomponents = [\"loss\", \"model\"]\n", "c.toml")
                  .compile_model_listed);
  // Refused by the key: a pipeline split other than the default, hand-given stages, the layout
  // of job configs before v0.2, a component torchtitan does not have.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"[parallelism]\npipeline_parallel_first_stage_less_layers = 0\n", "pipeline_parallel_first_stage_less_layers"},
      {"[parallelism]\npipeline_parallel_last_stage_less_layers = 3\n", "pipeline_parallel_last_stage_less_layers"},
      {"[parallelism]\nmodule_fqns_per_model_part = [[\"tok_embeddings\"]]\n", "module_fqns_per_model_part"},
      {"[training]\nbatch_size = 8\n", "training.batch_size"},
      {"[training]\ntensor_parallel_degree = 8\n", "training.tensor_parallel_degree"},
      {"[experimental]\npipeline_parallel_degree = 2\n", "experimental.pipeline_parallel_degree"},
      {"[compile]\ncomponents = [\"optimizer\"]\n", "compile.components"},
      {"[compile]\ncomponents = \"model,loss\"\n", "compile.components"},
  };
  for (const auto& [text, key] : refused) {
    try {
      parse_torchtitan_job_toml(head + text, "r.toml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(e.key().find(key), std::string::npos) << e.what();
    }
  }
  // The default weights are what the planner splits by: accepted.
  EXPECT_NO_THROW(parse_torchtitan_job_toml(head + "[parallelism]\npipeline_parallel_first_stage_less_layers = 1\n"
                                                   "pipeline_parallel_last_stage_less_layers = 1\n",
                                            "d.toml"));
}

// Values torchtitan would not run with are refused by the reader, naming the torchtitan file
// and key (not the run.toml key they would become): batch, length, steps and degrees >= 1
// (-1 only where torchtitan gives it a meaning), finite positive lr / eps / max_norm.
TEST(ImportTorchtitanToml, OutOfRangeValuesNameTheTorchtitanKey) {
  const std::string head = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[training]\nlocal_batch_size = 0\n", "training.local_batch_size"},
      {"[training]\nlocal_batch_size = -1\n", "training.local_batch_size"},
      {"[training]\nseq_len = 0\n", "training.seq_len"},
      {"[training]\nsteps = -1\n", "training.steps"},
      {"[training]\nglobal_batch_size = -2\n", "training.global_batch_size"},
      {"[training]\nglobal_batch_size = 0\n", "training.global_batch_size"},
      {"[training]\nmax_norm = 0.0\n", "training.max_norm"},
      {"[training]\nmax_norm = inf\n", "training.max_norm"},
      {"[parallelism]\ndata_parallel_replicate_degree = -1\n", "parallelism.data_parallel_replicate_degree"},
      {"[parallelism]\ndata_parallel_shard_degree = 0\n", "parallelism.data_parallel_shard_degree"},
      {"[parallelism]\ntensor_parallel_degree = -1\n", "parallelism.tensor_parallel_degree"},
      {"[optimizer]\nlr = nan\n", "optimizer.lr"},
      {"[optimizer]\neps = -1e-8\n", "optimizer.eps"},
      {"[optimizer]\nweight_decay = -0.1\n", "optimizer.weight_decay"},
      {"[optimizer]\nimplementation = \"for_loop\"\n", "optimizer.implementation"},  // torchtitan spells it for-loop
      {"[lr_scheduler]\nwarmup_steps = -1\n", "lr_scheduler.warmup_steps"},
      {"[training]\nseq_len = 8192.0\n", "training.seq_len"},
      {"[training]\nseq_len = 81E92\n", "training.seq_len"},  // a float beyond int64 (fuzz_torchtitan_job)
  };
  for (const auto& [body, key] : bad) {
    try {
      parse_torchtitan_job_toml(head + body, "job.toml");
      ADD_FAILURE() << body;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), key) << body;
      EXPECT_NE(std::string(e.what()).find("job.toml"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
    }
  }
  // The values torchtitan gives a meaning at the bounds are kept as given.
  const TorchtitanJob j = parse_torchtitan_job_toml(
      head + "[training]\nglobal_batch_size = -1\n[parallelism]\ndata_parallel_shard_degree = -1\n"
             "[lr_scheduler]\nwarmup_steps = 0\n[optimizer]\nweight_decay = 0.0\n",
      "job.toml");
  EXPECT_EQ(*j.global_batch_size, -1);
  EXPECT_EQ(*j.dp_shard, -1);
  EXPECT_EQ(*j.warmup_steps, 0);
  EXPECT_EQ(*j.weight_decay, 0.0);
}

// The float8 recipe of a v0.2 job config: [quantize.linear.float8] recipe_name (unset =
// tensorwise); without the converter no recipe applies; an unknown name names the key.
TEST(ImportTorchtitanToml, Fp8RecipeName) {
  const std::string head = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n";
  const std::string conv = "converters = [\"quantize.linear.float8\"]\n";
  for (const char* r : {"tensorwise", "rowwise", "rowwise_with_gw_hp"}) {
    const TorchtitanJob j = parse_torchtitan_job_toml(
        head + conv + "[quantize.linear.float8]\nrecipe_name = \"" + r + "\"\n", "job.toml");
    EXPECT_EQ(j.fp8, r);
    EXPECT_TRUE(j.ignored.empty()) << j.ignored.front();
  }
  EXPECT_EQ(parse_torchtitan_job_toml(head + conv, "job.toml").fp8, "tensorwise");
  EXPECT_EQ(parse_torchtitan_job_toml(head + "[quantize.linear.float8]\nrecipe_name = \"rowwise\"\n", "job.toml").fp8,
            "");
  try {
    parse_torchtitan_job_toml(head + conv + "[quantize.linear.float8]\nrecipe_name = \"mxfp8\"\n", "bad.toml");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "quantize.linear.float8.recipe_name");
    EXPECT_NE(std::string(e.what()).find("rowwise_with_gw_hp"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardcast::planner

namespace shardcast::planner {
namespace {

// Hostile numbers in a log (issue 52): each refuses the import naming the file, the line, the
// step and the quantity, instead of writing JSON nulls or an MFU of thousands. One row per
// case: the log, which parser, and what the refusal says.
TEST(ImportHostile, ImplausibleNumbersRefuseTheImport) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  auto titan = [](const std::string& loss, const std::string& mem, const std::string& tps) {
    std::string t;
    for (int step : {1, 2})
      t += "step: " + std::to_string(step) + "  loss: " + loss + "  memory: " + mem + "GiB(50.00%)  tps: " + tps + "\n";
    return t;
  };
  auto fms = [](const std::string& reserved, const std::string& rate) {
    return "step: 100\nloss: 3.2\nLR: [6e-05]\nreserved memory: " + reserved +
           "\ncurrent step time: 1.5\ncurrent token per gpu per sec: " + rate + "\n";
  };
  struct Case {
    const char* name;
    std::string log;
    bool torchtitan;
    std::vector<std::string> says;
  };
  const Case cases[] = {
      {"tps 1e308", titan("7.5", "40.00", "1e308"), true,
       {"h.log:1: step 1: tokens/s per GPU 1e+308 is not plausible for this model on H100-80GB-SXM"}},
      {"tps 10,000,000", titan("7.5", "40.00", "10,000,000"), true, {"h.log:1: step 1: tokens/s per GPU 1e+07"}},
      {"memory 1e30 GiB", titan("7.5", "1e30", "5,000"), true, {"h.log:1: step 1: reserved memory 1e+30 GiB is not plausible"}},
      {"loss nan", titan("nan", "40.00", "5,000"), true, {"h.log:1: step 1: loss nan is not a finite number"}},
      {"fms reserved 1e20 bytes", fms("1e20", "5000"), false, {"h.log:1: step 100: reserved memory"}},
      {"fms rate 1e308", fms("4e10", "1e308"), false, {"h.log:1: step 100: tokens/s per GPU 1e+308"}},
  };
  TrainConfig fc = test::make_config("llama3.1-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 2, 4096);
  fc.precision.reduce_dtype = "bf16";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      if (c.torchtitan) import_run(parse_torchtitan_log(c.log, "h.log"), titan_8b(), hw, 0);
      else import_run(parse_fms_fsdp_log(c.log, "h.log"), fc, hw, 0);
      ADD_FAILURE() << "imported";
    } catch (const InputError& e) {
      for (const auto& w : c.says) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
  }
}

// Ranks and restarts (found by an import audit): two ranks' lines of one step average tps, tflops
// and mfu alike (before, tflops and mfu were rank 0's beside the mean tps: a false FLOPs warning);
// the same rank logging a step again is a restart, whose later line is kept; a non-finite number
// in a warm-up step leaves that step out instead of refusing the import.
TEST(ImportTorchtitan, RanksAveragedAlikeRestartsKeptLaterWarmupInfSkipped) {
  const std::string two =
      "[rank0]:step: 20  loss:  3.1000  memory: 40.00GiB(50.00%)  tps: 5,800  tflops: 336.40  mfu: 34.01%\n"
      "[rank1]:step: 20  loss:  3.1000  memory: 41.00GiB(51.25%)  tps: 5,000  tflops: 290.00  mfu: 29.32%\n";
  const TrainLog ranks = parse_torchtitan_log(two, "r.log");
  ASSERT_EQ(ranks.steps.size(), 1u);
  EXPECT_EQ(ranks.steps[0].ranks, 2);
  EXPECT_DOUBLE_EQ(ranks.steps[0].tps, 5400);
  EXPECT_DOUBLE_EQ(*ranks.steps[0].tflops, (336.40 + 290.00) / 2);
  EXPECT_DOUBLE_EQ(*ranks.steps[0].mfu_pct, (34.01 + 29.32) / 2);
  EXPECT_DOUBLE_EQ(*ranks.steps[0].mem_reserved_bytes, 41.0 * (1ull << 30));

  const std::string restart =
      "[rank0]:step: 30  loss:  3.0000  memory: 40.00GiB(50.00%)  tps: 4,000\n"
      "[rank0]:step: 30  loss:  2.9000  memory: 40.00GiB(50.00%)  tps: 5,800\n";
  const TrainLog again = parse_torchtitan_log(restart, "s.log");
  ASSERT_EQ(again.steps.size(), 1u);
  EXPECT_EQ(again.steps[0].ranks, 1);
  EXPECT_DOUBLE_EQ(again.steps[0].tps, 5800);
  EXPECT_DOUBLE_EQ(again.steps[0].loss, 2.9);
  auto says = [](const std::vector<std::string>& notes, const std::string& what) {
    return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(says(again.notes, "(a restart): the later line kept"));

  // Unprefixed lines (LOG_RANK=0,1 without torchrun --tee): a repeat within a run is another
  // rank's line, but after a "Training starts at step N" line that begins the run again (the log
  // had reached step N + 1 or later) a repeat is the restart. Each rank's own start line, beside
  // the first steps, is not a restart.
  const std::string plain =
      "[titan] 2026-01-01 00:00:00,000 - root - INFO - Training starts at step 1\n"
      "step: 1  loss:  9.0000  memory: 40.00GiB(50.00%)  tps: 1,000\n"
      "[titan] 2026-01-01 00:00:00,000 - root - INFO - Training starts at step 1\n"
      "step: 1  loss:  9.0000  memory: 41.00GiB(51.25%)  tps: 3,000\n"
      "step: 2  loss:  8.0000  memory: 40.00GiB(50.00%)  tps: 5,000\n"
      "step: 2  loss:  8.0000  memory: 40.00GiB(50.00%)  tps: 6,000\n"
      "step: 3  loss:  7.0000  memory: 40.00GiB(50.00%)  tps: 5,000\n"
      "[titan] 2026-01-01 00:10:00,000 - root - INFO - Training starts at step 2\n"
      "step: 2  loss:  7.5000  memory: 40.00GiB(50.00%)  tps: 4,000\n"
      "step: 2  loss:  7.5000  memory: 40.00GiB(50.00%)  tps: 4,400\n";
  const TrainLog plain_log = parse_torchtitan_log(plain, "p.log");
  ASSERT_EQ(plain_log.steps.size(), 3u);
  EXPECT_EQ(plain_log.steps[0].ranks, 2);                 // step 1: both ranks, one run
  EXPECT_DOUBLE_EQ(plain_log.steps[0].tps, 2000);
  EXPECT_EQ(plain_log.steps[1].ranks, 2);                 // step 2: the restarted run's two ranks
  EXPECT_DOUBLE_EQ(plain_log.steps[1].loss, 7.5);
  EXPECT_DOUBLE_EQ(plain_log.steps[1].tps, 4200);
  EXPECT_TRUE(says(plain_log.notes, "1 metric lines repeated a step the same rank had logged, or a step logged before"));

  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  std::string warm = "step:  1  loss: 12.0000  grad_norm:     inf  memory: 40.00GiB(50.00%)  tps: 1,000\n";
  for (int step = 2; step <= 4; ++step)
    warm += "step:  " + std::to_string(step) + "  loss:  7.0000  grad_norm:  1.0000  memory: 40.00GiB(50.00%)  tps: 5,800\n";
  const ImportedRun r = import_run(parse_torchtitan_log(warm, "w.log"), titan_8b(), hw, 1);
  EXPECT_EQ(r.report.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(r.report.tokens_per_s_per_gpu, 5800);
  EXPECT_TRUE(says(r.notes, "1 warm-up steps (step <= 1) with a non-finite number"));
  EXPECT_THROW(import_run(parse_torchtitan_log(warm, "w.log"), titan_8b(), hw, 0), InputError);  // counted: refused
}

// An output that cannot be written exits 2 (UsageError) as emit's does, before writing.
TEST(ImportHostile, UnwritableOutputIsUsage) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const ImportedRun r = import_run(parse_torchtitan_log(slurp(data("torchtitan_2024.log")), "t.log"), titan_8b(), hw, 10);
  const fs::path dir = fs::temp_directory_path() / ("shardcast_import_out_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "run.toml");  // a directory where a file goes
  EXPECT_THROW(write_run_dir(r, dir.string()), UsageError);
  EXPECT_FALSE(fs::exists(dir / "run_report.json"));
  std::ofstream(dir / "file") << "x";
  EXPECT_THROW(write_run_dir(r, (dir / "file" / "sub").string()), UsageError);  // a file where a directory goes
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shardcast::planner
