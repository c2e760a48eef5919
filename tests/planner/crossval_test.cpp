// Cross-validated error bands: the source key, the band table and its choice, leave-one-source-
// out on the published rows (every row predicted by a fit that never saw its source), the
// ceilings, and the three memory numbers.
#include "planner/evidence/crossval.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "planner/model/efficiency.h"
#include "planner/evidence/error_band.h"
#include "planner/model/memory_model.h"
#include "planner/evidence/published_csv.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

std::string calibration_csv() {
  const std::string in_repo = std::string(SHARDCAST_TEST_CONFIG_DIR) + "/published/calibration.csv";
  if (std::filesystem::exists(in_repo)) return in_repo;
  return std::string(SHARDCAST_TEST_PUBLISHED_DIR) + "/calibration.csv";
}

// The calibration rows with their cases and every preset of the shipped fit groups.
struct CalibrationSet {
  std::vector<PublishedRow> rows;
  std::vector<ValidationCase> cases;
  HardwareSet hw;
  std::vector<FitGroup> groups = shipped_fit_groups();
};
CalibrationSet load_calibration_set(const std::string& csv) {
  CalibrationSet c;
  c.rows = read_published_csv(csv, read_annotations(std::string(SHARDCAST_TEST_CONFIG_DIR) + "/published/annotations.csv"));
  c.cases = resolve_cases(c.rows, c.hw);
  for (const auto& g : c.groups)
    for (const auto& h : g.hardware)
      if (!c.hw.count(h)) c.hw.emplace(h, load_hardware(h));
  return c;
}

TEST(Crossval, SourceKeyIsTheDocumentAndVersion) {
  PublishedRow a, b, c;
  a.source = "mosaicml/llm-foundry scripts/train/benchmarking/README.md @5e85bd62d (2024-01-06; x) section 'H100 80GB BF16'";
  b.source = "mosaicml/llm-foundry scripts/train/benchmarking/README.md @5e85bd62d (2024-01-06; x) section 'A100 40GB'";
  c.source = "foundation-model-stack/fms-fsdp README.md @6327da6 (2024-02-21 table)";
  EXPECT_EQ(source_key(a), source_key(b));  // sections of one document at one commit: one source
  EXPECT_EQ(source_key(a), "mosaicml/llm-foundry scripts/train/benchmarking/README.md @5e85bd62d");
  EXPECT_EQ(source_key(c), "foundation-model-stack/fms-fsdp README.md @6327da6");
}

BandTable two_band_table() {
  BandTable t;
  t.min_rows = 2;
  ErrorBand all{"fam", {"H100-80GB-SXM"}, kBandAll, "", 0.10, 2, {"s1", "s2"}, {"r1", "r2"}};
  ErrorBand rt{"fam", {"H100-80GB-SXM"}, kBandRuntime, "fms-fsdp", 0.04, 2, {"s1"}, {"r1", "r2"}};
  ErrorBand ac{"fam", {"H100-80GB-SXM"}, kBandCheckpointing, "full", 0.15, 2, {"s2"}, {"r1", "r2"}};
  t.bands = {all, rt, ac};
  return t;
}

TEST(ErrorBand, WidestMatchingRegimeAndPriorOnly) {
  const BandTable t = two_band_table();
  // Matching runtime band narrower than the family's: the family's (the widest) is stated.
  BandChoice c = choose_band(t, {"H100-80GB-SXM", "fms-fsdp", "none", "multi-node"}, 0.5, 0);
  EXPECT_DOUBLE_EQ(c.rel_1sigma, 0.10);
  EXPECT_FALSE(c.prior_only);
  // Full checkpointing is the widest regime that matches.
  c = choose_band(t, {"H100-80GB-SXM", "fms-fsdp", "full", "multi-node"}, 0.5, 0);
  EXPECT_DOUBLE_EQ(c.rel_1sigma, 0.15);
  // A runtime never measured on the family: prior only, at least the widest runtime band.
  c = choose_band(t, {"H100-80GB-SXM", "accelerate", "none", "multi-node"}, 0.5, 0);
  EXPECT_TRUE(c.prior_only);
  EXPECT_GE(c.rel_1sigma, 0.10);
  EXPECT_NE(c.note.find("prior only"), std::string::npos);
  // A GPU in no family: the preset's prior, said to be one.
  c = choose_band(t, {"MI300X", "torchtitan", "none", "single-node"}, 0.3, 0);
  EXPECT_DOUBLE_EQ(c.rel_1sigma, 0.3);
  EXPECT_TRUE(c.prior_only);
  EXPECT_NE(c.note.find("prior only"), std::string::npos);
}

TEST(ErrorBand, TomlRoundTripAndStrictKeys) {
  const BandTable t = two_band_table();
  const BandTable back = parse_bands_toml(write_bands_toml(t), "bands.toml");
  ASSERT_EQ(back.bands.size(), t.bands.size());
  for (size_t i = 0; i < t.bands.size(); ++i) {
    EXPECT_EQ(back.bands[i].dimension, t.bands[i].dimension);
    EXPECT_EQ(back.bands[i].value, t.bands[i].value);
    EXPECT_DOUBLE_EQ(back.bands[i].rel_1sigma, t.bands[i].rel_1sigma);
    EXPECT_EQ(back.bands[i].rows, t.bands[i].rows);
  }
  EXPECT_THROW(parse_bands_toml("min_rows = 2\nbogus = 1\n", "b.toml"), ConfigError);
  EXPECT_THROW(parse_bands_toml(
                   "min_rows = 2\n[[band]]\nfamily='f'\nhardware=['x']\ndimension='gpu'\nvalue=''\n"
                   "rel_1sigma=0.1\nn_rows=0\nsources=[]\nrows=[]\n",
                   "b.toml"),
               ConfigError);
}

TEST(ErrorBand, ShippedBandsCoverThePublishedFamilies) {
  const BandTable& t = shipped_bands();
  std::set<std::string> covered;
  for (const auto& b : t.bands)
    if (b.dimension == kBandAll) covered.insert(b.hardware.begin(), b.hardware.end());
  EXPECT_TRUE(covered.count("A100-80GB-SXM"));
  EXPECT_TRUE(covered.count("H100-80GB-SXM"));
  EXPECT_FALSE(covered.count("MI300X"));  // no published run: prior only
  for (const auto& b : t.bands) EXPECT_EQ(int(b.rows.size()), b.n_rows);
}

// A GPU no published run measured takes a fitted family's fractions on its own ceilings and
// states its preset's prior band (docs/cost-model.md §8). That prior is never narrower than
// the widest cross-validated band of the family it takes them from: a part predicted with
// Hopper's fractions is not known better than Hopper's own worst regime. The shipped bands
// move when the model is refitted; this holds the priors to them.
TEST(ErrorBand, PriorsOfUnmeasuredGpusAreWiderThanTheirFamilysWidestBand) {
  const BandTable& t = shipped_bands();
  std::map<std::string, double> widest;  // family -> widest band
  std::map<std::string, std::string> family_of;
  for (const auto& b : t.bands) {
    widest[b.family] = std::max(widest[b.family], b.rel_1sigma);
    for (const auto& h : b.hardware) family_of[h] = b.family;
  }
  // The family whose fitted values a preset carries: the one whose member shares its matmul_eff.
  int checked = 0;
  for (const std::string& name : list_hardware_presets()) {
    const HardwareSpec hw = load_hardware(name);
    if (family_of.count(name) || hw.gpu.sm_count <= 0 || hw.efficiency_param("error_band_runs") > 0) continue;
    std::string from;
    for (const auto& [member, fam] : family_of)
      if (load_hardware(member).efficiency_param("matmul_eff") == hw.efficiency_param("matmul_eff")) from = fam;
    ASSERT_FALSE(from.empty()) << name << ": no fitted family shares its matmul_eff";
    EXPECT_GT(hw.efficiency_param("error_band_rel"), widest[from])
        << name << " states a prior of " << hw.efficiency_param("error_band_rel") << ", narrower than " << from
        << "'s widest cross-validated band " << widest[from];
    ++checked;
  }
  EXPECT_GE(checked, 7);  // B200, B300, GB200, GB300, MI300X, MI325X, MI355X
}

TEST(Crossval, LeaveOneSourceOutPredictsEveryRowWithoutItsSource) {
  const std::string csv = calibration_csv();
  if (!std::filesystem::exists(csv)) GTEST_SKIP() << "no calibration CSV";
  const CalibrationSet set = load_calibration_set(csv);
  const auto& rows = set.rows;
  const auto& cases = set.cases;
  const HardwareSet& hw = set.hw;
  const auto& groups = set.groups;
  LmOptions lm;
  lm.max_iterations = 15;  // enough to move every fold away from its prior; keeps the test short
  const CrossvalResult cv = leave_one_source_out(rows, cases, hw, groups, lm);
  int with_tps = 0;
  std::map<std::string, int> per_source;
  for (const auto& c : cases)
    if (rows[c.row].tokens_per_s_per_gpu) {
      ++with_tps;
      ++per_source[source_key(rows[c.row])];
    }
  EXPECT_EQ(int(cv.rows.size()), with_tps);
  ASSERT_EQ(cv.folds.size(), per_source.size());
  for (const auto& f : cv.folds) {
    // The fit of each fold saw every row but the left-out source's: its notes count them.
    int fitted = 0;
    for (const auto& note : f.notes) {
      const auto at = note.find("refitted on ");
      if (at == std::string::npos) continue;
      fitted += std::stoi(note.substr(at + 12));
      // The note states every fitted key of its family with its value, in the group's order.
      const FitGroup* g = nullptr;
      for (const auto& c : groups)
        if (note.rfind(c.family + ":", 0) == 0) g = &c;
      ASSERT_NE(g, nullptr) << note;
      size_t from = at;
      for (const auto& k : g->params) {
        const size_t kat = note.find(" " + k + " = ", from);
        ASSERT_NE(kat, std::string::npos) << k << " in " << note;
        const double v = std::stod(note.substr(kat + k.size() + 4));
        EXPECT_TRUE(std::isfinite(v) && v >= 0) << note;
        from = kat + 1;
      }
    }
    EXPECT_EQ(fitted, with_tps - per_source[f.source]) << f.source;
  }
  for (const auto& r : cv.rows) EXPECT_TRUE(std::isfinite(r.rel_err)) << r.row_id;
  // Bands: every band's rows are out-of-sample rows of its family, and its 1σ is their rms.
  const BandTable t = build_bands(cv.rows, groups, 4);
  for (const auto& b : t.bands) {
    EXPECT_GE(b.n_rows, 4);
    EXPECT_GT(b.rel_1sigma, 0);
  }
}

// The leave-one-source-out numbers of docs/validation.md "Cross-validation", with the shipped
// procedure (default fitter options), held as a regression bound like outside_runs_test.cpp's:
// each bound is the measurement (stated beside it) rounded away to the next 0.5 point, or the
// issue's target where it is met. The MAPE target (<= 8 %) is met since AWS's rows run the cuDNN
// attention their stated torch nightly ran; the bias (|bias| <= 3 %) and 2σ coverage (95 %) targets
// are not; the bounds hold what is.
TEST(Crossval, LeaveOneSourceOutHoldsItsMeasuredBounds) {
  const std::string csv = calibration_csv();
  if (!std::filesystem::exists(csv)) GTEST_SKIP() << "no calibration CSV";
  const CalibrationSet set = load_calibration_set(csv);
  const CrossvalResult cv = leave_one_source_out(set.rows, set.cases, set.hw, set.groups);
  ASSERT_EQ(cv.rows.size(), 244u);
  double abs_sum = 0, signed_sum = 0;
  for (const auto& r : cv.rows) {
    abs_sum += std::fabs(r.rel_err);
    signed_sum += r.rel_err;
  }
  const double mape = 100 * abs_sum / cv.rows.size();
  const double bias = 100 * signed_sum / cv.rows.size();
  EXPECT_LE(mape, 8.0);   // the target; measured 7.12 % since AWS's four rows run cuDNN attention (their sample states
                          // torch 2.5.0.dev20240906, inside the 2024 cuDNN window: docs/validation.md "AWS's torch build,
                          // stated"): in sample -10.1 ... -11.6 -> -1.0 ... -3.3 %, so the GH100 fit without llm-foundry
                          // no longer raises attention_eff to meet them (0.85 -> 0.70) and its 216 left-out rows go
                          // 8.8 / +6.0 -> 7.4 / +4.4 %; 8.50 % before, since compiled tensorwise float8 Linears take the H200 grid measured on
                          // 2026-11-28: AWS's two float8 rows -3.7 / -7.2 -> -10.8 / -11.6 %, as slow as its bf16
                          // rows, so the GH100 fit without llm-foundry raises attention_eff 0.77 -> 0.87 and its
                          // 216 left-out rows go 8.1 / +5.2 -> 8.8 / +6.0 % (docs/validation.md "Measured float8
                          // Linear speed-ups, tensorwise"); 7.77 % before (7.72 % before the optimizer step was charged as each runtime runs it;
                          // 8.1 % while hbm_eff was fitted)
  EXPECT_LE(bias, 4.0);   // measured +3.50 % since AWS's rows run cuDNN attention (above); +4.84 % since the tensorwise grid; +4.10 % before that (+3.52 % before the optimizer step as run: fms-fsdp's foreach AdamW and
                          // FSDP1 clipping, 23 accesses an element where 8 were charged, slow its left-out rows;
                          // docs/validation.md "The optimizer step as each runtime runs it"; +4.4 % while hbm_eff was fitted)
  EXPECT_GE(bias, -5.0);
  const Coverage nested = nested_coverage(cv.rows, set.groups, 4, set.hw);
  EXPECT_EQ(nested.n, 244);
  EXPECT_GE(nested.frac1(), 0.68);  // the target; measured 73 % (78 % before AWS's rows ran cuDNN attention: the GH100 bands
                                    // narrowed with the better left-out fits, all rows 16.5 -> 10.0 %)
  EXPECT_GE(nested.frac2(), 0.885); // measured 89 % since AWS's rows run cuDNN attention, 90 % since the tensorwise grid, 91 % before (target 95 %, not met)
}

// Carrying one family's fitted fractions to the other (carry_across_families) against the
// same prediction made by hand: the other family's presets given the values the shipped
// presets hold for the fitting family (the full fit, written to 4 significant digits) and their
// own prior for keys only they fit. Tolerance 2e-3 relative: each shipped value is the fit
// rounded to 4 significant digits (at most 5e-5 of the value), and a prediction moves by less
// than its keys' relative change; a key carried wrongly or left at the wrong prior moves the
// rows it touches by a percent or more (fp8_matmul_eff 0.835 vs its prior 0.85: the fp8 rows).
TEST(Crossval, CarriedFractionsAreTheFittingFamilysShippedValues) {
  const std::string csv = calibration_csv();
  if (!std::filesystem::exists(csv)) GTEST_SKIP() << "no calibration CSV";
  const CalibrationSet set = load_calibration_set(csv);
  const auto& rows = set.rows;
  const auto& cases = set.cases;
  const HardwareSet& hw = set.hw;
  const auto& groups = set.groups;
  ASSERT_EQ(groups.size(), 2u);
  const CrossvalResult carried = carry_across_families(rows, cases, hw, groups);
  ASSERT_EQ(carried.folds.size(), 2u);
  int with_tps = 0;
  for (const auto& c : cases) with_tps += rows[c.row].tokens_per_s_per_gpu.has_value();
  EXPECT_EQ(int(carried.rows.size()), with_tps);  // every row once, by the other family's fit

  size_t checked = 0;
  for (size_t from = 0; from < 2; ++from) {
    const FitGroup& f = groups[from];
    const FitGroup& t = groups[1 - from];
    const std::string fold = f.family + " → " + t.family;
    HardwareSet by_hand = hw;
    const auto shipped = load_hardware(f.hardware.front()).efficiency;
    for (const auto& h : t.hardware) {
      if (!by_hand.count(h)) continue;
      for (const auto& k : t.params) by_hand.at(h).efficiency[k] = t.prior.at(k);
      for (const auto& k : f.params) by_hand.at(h).efficiency[k] = shipped.at(k);
    }
    std::map<size_t, const ValidationCase*> case_of;
    for (const auto& c : cases) case_of[c.row] = &c;
    for (const auto& r : carried.rows) {
      if (r.source != fold) continue;
      const ValidationCase& c = *case_of.at(r.row);
      EXPECT_NE(std::find(t.hardware.begin(), t.hardware.end(), c.hardware), t.hardware.end()) << r.row_id;
      const double expected = plan(c.cfg, by_hand.at(c.hardware), c.options).tokens_per_s_per_gpu;
      EXPECT_NEAR(r.predicted_tps / expected, 1.0, 2e-3) << fold << " " << r.row_id;
      ++checked;
    }
  }
  EXPECT_EQ(checked, carried.rows.size());
}

TEST(Crossval, OutOfSampleCsvReadsBackRowForRow) {
  // Two ways to the same numbers: the rows in memory and the CSV written from them, read back
  // with the published-runs reader's RFC 4180 parser. Sources hold commas and quotes, as the
  // published ones do. Tolerance: half a unit of the printed decimals (0.1 tokens/s, 0.01 %).
  CrossvalResult cv;
  CrossvalRow a;
  a.row_id = "r1";
  a.source = "pytorch/torchtitan commit message of 83c879f18 (2024-03-28, PR #165 \"Used per-parameter FSDP\")";
  a.hardware = "H100-96GB-HBM2e";
  a.regime = {"H100-96GB-HBM2e", "torchtitan", "selective", "single-node"};
  a.predicted_tps = 7457.25;
  a.measured_tps = 6600;
  a.rel_err = a.predicted_tps / a.measured_tps - 1;
  CrossvalRow b = a;
  b.row_id = "r2";
  b.source = "AWS ML Blog, plain";
  b.regime.checkpointing = "full";
  b.predicted_tps = 5000;
  b.measured_tps = 5400;
  b.rel_err = b.predicted_tps / b.measured_tps - 1;
  cv.rows = {a, b};
  const auto records = parse_csv(out_of_sample_csv(cv), "out_of_sample.csv");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].front(), "row_id");
  EXPECT_EQ(records[0].back(), "err_tokens_per_s_pct");
  for (size_t i = 0; i < cv.rows.size(); ++i) {
    const auto& f = records[i + 1];
    const CrossvalRow& r = cv.rows[i];
    ASSERT_EQ(f.size(), records[0].size());
    EXPECT_EQ(f[0], r.row_id);
    EXPECT_EQ(f[1], r.source);
    EXPECT_EQ(f[2], r.hardware);
    EXPECT_EQ(f[3], r.regime.runtime);
    EXPECT_EQ(f[4], r.regime.checkpointing);
    EXPECT_EQ(f[5], r.regime.scale);
    EXPECT_NEAR(std::stod(f[6]), r.predicted_tps, 0.05 + 1e-9);  // a tie (7457.25) may round either way
    EXPECT_NEAR(std::stod(f[7]), r.measured_tps, 0.05 + 1e-9);
    EXPECT_NEAR(std::stod(f[8]), 100 * r.rel_err, 0.005 + 1e-9);
  }
  for (const std::string v : {"plain", "a,b", "say \"x\"", "two\nlines", ""})
    EXPECT_EQ(parse_csv("h,g\n" + csv_field(v) + ",x\n", "t").at(1).at(0), v) << v;
}

TEST(Ceilings, GemmRateIsPeakTimesCeilingTimesEfficiency) {
  EfficiencyParams p;
  p.matmul_ceiling = 0.8;
  p.matmul_eff = 0.9;
  p.fp8_matmul_ceiling = 0.7;
  p.fp8_matmul_eff = 0.5;
  p.attention_ceiling = 0.4;
  p.attention_eff = 0.25;
  p.hbm_ceiling = 0.9;
  p.hbm_eff = 0.5;
  const EfficiencyParams r = of_datasheet(p);
  EXPECT_DOUBLE_EQ(r.matmul_eff, 0.72);
  EXPECT_DOUBLE_EQ(r.fp8_matmul_eff, 0.35);
  EXPECT_DOUBLE_EQ(r.attention_eff, 0.1);
  EXPECT_DOUBLE_EQ(r.hbm_eff, 0.45);
  // Every GPU preset states its ceilings, each a fraction of its datasheet.
  for (const auto& name : list_hardware_presets()) {
    const EfficiencyParams e = read_efficiency(load_hardware(name));
    EXPECT_GT(e.matmul_ceiling, 0.4) << name;
    EXPECT_LE(e.matmul_ceiling, 1.0) << name;
    EXPECT_LE(e.hbm_ceiling, 1.0) << name;
  }
}

TEST(Ceilings, LowerCeilingSlowsAGemmBoundConfigInProportion) {
  // Same preset, ceiling halved: the GEMM time doubles, so tokens/s drops by well over a third
  // (not exactly half: attention, elementwise and communication are unchanged or scale too).
  const TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 1, 4096);
  HardwareSpec hw = load_hardware("H100-80GB-SXM");
  const double fast = plan(c, hw).tokens_per_s_per_gpu;
  hw.efficiency["matmul_ceiling"] *= 0.5;
  const double slow = plan(c, hw).tokens_per_s_per_gpu;
  EXPECT_LT(slow, 0.7 * fast);
  EXPECT_GT(slow, 0.45 * fast);
}

TEST(DeviceMemory, ReservedAndDeviceTotal) {
  AllocatorInputs in;
  in.allocated_peak = 100;
  in.fragmentation = 0.1;
  in.outside_allocator = 2;
  // No caching allocator (CPU): the proportional margin.
  DeviceMemory d = device_memory(in);
  EXPECT_DOUBLE_EQ(d.allocated, 100);
  EXPECT_DOUBLE_EQ(d.reserved, 110);
  EXPECT_DOUBLE_EQ(d.device_total, 112);
  // The allocator replay's peak replaces the margin, and is never below the allocated peak.
  in.replayed_reserved = 125;
  EXPECT_DOUBLE_EQ(device_memory(in).reserved, 125);
  EXPECT_DOUBLE_EQ(device_memory(in).device_total, 127);
  in.replayed_reserved = 90;
  EXPECT_DOUBLE_EQ(device_memory(in).reserved, 100);
}

TEST(DeviceMemory, PlanReportsThreeOrderedNumbers) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 2, 8192);
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  for (const char* rt : {"torchtitan", "fms-fsdp"}) {
    c.runtime = rt;
    c.precision.reduce_dtype = std::string(rt) == "fms-fsdp" ? "bf16" : "fp32";
    const Prediction p = plan(c, hw, resolve_plan_options(c, hw));
    EXPECT_GT(p.mem_reserved_bytes, p.mem_peak_bytes) << rt;
    EXPECT_GT(p.mem_device_total_bytes, p.mem_reserved_bytes) << rt;
    EXPECT_DOUBLE_EQ(p.mem_device_total_bytes - p.mem_reserved_bytes, test::component(p, "runtime_overhead")) << rt;
    EXPECT_EQ(p.fits, p.mem_device_total_bytes <= p.mem_capacity_bytes) << rt;
  }
}

}  // namespace
}  // namespace shardcast::planner
