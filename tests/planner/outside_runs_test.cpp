// configs/published/outside.csv: published FSDP runs the planner was never fitted on (see
// docs/validation.md "Outside runs"). Checks that the file parses, that every row is either
// predicted or skipped for the reason its row states, that no row repeats a row of
// calibration.csv or holdout.csv, and holds the accuracy measured on it as a regression bound.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "planner/evidence/published_csv.h"
#include "planner/evidence/validate.h"
#include "shared/config_io.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

std::string published(const char* name) { return std::string(SHARDCAST_TEST_PUBLISHED_DIR) + "/" + name; }

// The file's shape and the regression bounds of the planner's error on it, in one place: change
// them here when rows are added or the cost model moves (docs/validation.md "Outside runs" shows
// the same numbers; `build/bench_outside` prints them). Each bound is what
// `shardcast validate --published configs/published/outside.csv` measured on the 77-row file
// (stated beside it), rounded away from the measurement to the next 0.5 point so that a
// float-level change does not trip it while a change of the cost model that moves it does, on
// purpose. The targets for runs never seen are not all met (tokens/s MAPE 8 %: 11.9 %
// today; 95 % within 2σ: 93.5 %; no row more than 5 % under on memory: a torchtitan pair at
// -5.9 %): the bounds hold what is, the targets what should be.
struct OutsideBounds {
  size_t rows = 81;                  // 77 before torchtitan d66b72a6a's four Qwen3-32B FSDP rows (2026-12-06, planned with
                                     // model.head_dim and qk_norm); 64 before litgpt's TinyLlama table, YaFSDP's two 8192-token FSDP rows, lightning-thunder
                                     // PR #1536's torchtitan run and torchtitan PRs #1287, #1881, #701 and #3105 (2026-11-28, fifth
                                     // session); 50 before torchtitan PRs #822, #808 and #355 and lightning-thunder PR #997
  int predicted = 81, skipped = 0;   // the float8 rowwise rows are predicted with their recipe
  double mape_tps = 12.0;            // measured 11.50 % on 81 rows since the four Qwen3-32B rows (-2.6 / -6.2 / -11.3 % eager,
                                     // -19.9 % compiled); 11.60 % on 77 rows since lit-llama's row runs its own profile (torch 2.0's
                                     // FlashAttention-1 SDPA backend, pure bf16, no_sync accumulation: +58.5 -> +38.5 %);
                                     // 11.86 % since a node's NIC bandwidth follows its GPUs per node
                                     // (effective_inter_node_bandwidth: KempnerForge's two multi-node rows on 4-GPU nodes
                                     // +12.5 / +11.2 -> +11.6 / +10.1 %); 11.88 % since AWS's calibration rows run the cuDNN attention of their
                                     // stated torch nightly and the GH100 fractions were refitted (docs/validation.md "AWS's torch
                                     // build, stated": attention_eff 0.5474 -> 0.5431, step_overhead_s 27.1 -> 28.0 ms, fp8_matmul_eff
                                     // 0.7924 -> 0.8008); 11.86 % before, since litgpt's loss runs on the fp32 logits Lightning
                                     // Fabric returns (litgpt-2024-03, litgpt: its three rows 0.8 points slower); 11.83 % before,
                                     // since compiled tensorwise float8 Linears take the H200 grid
                                     // measured on 2026-11-28 (configs/kernels/float8_linear.csv; docs/validation.md "Measured float8
                                     // Linear speed-ups, tensorwise"): torchao's H100 / MI300X / B200 tensorwise rows +11.0 / +27.6 /
                                     // +58.6 -> +2.7 / +9.1 / +38.9 %, OLMo-core's five float8 rows +7.3 ... +38.8 -> -0.6 ... +26.1 %,
                                     // torchtitan PR #701's pair +21 -> +12 %, lightning-thunder's ten float8 rows -14 ... -25 ->
                                     // -21 ... -30 %; 12.34 % before, since torchtitan's runs from 2025-07-24 (torchtitan-2025-07, torchtitan) run
                                     // torch's fused RMSNorm (docs/validation.md "torch's fused RMSNorm"): PR #1881's eager row -23.9 -> -16.5 %,
                                     // PR #3105's eager GB200 row -14.4 -> -8.5 %; 12.51 % before, since the runs of torch's 2024 cuDNN window run cuDNN attention
                                     // (docs/validation.md "The 2024 cuDNN window"): OLMo-core's ten rows (its nightly image, torch
                                     // 2.6.0.dev20241009) MAPE 7.9 -> 10.9 %, the bf16 ones -1.9 ... +10.8 %, the float8 ones +7.3 ...
                                     // +38.8 %; lightning-thunder PR #997's six rows (torch of 2024-08-21) -23.6 ... -28.5 -> -14.1 ...
                                     // -18.1 % (12.12 % with those alone); 12.89 % before: the 64 of before 12.66 %, the 13 added 14.0 %, bias -7.6 %
                                     // (torchtitan's eager 8B rows of 2025 -15 ... -24 %, litgpt's compiled TinyLlama -25 %, torchtitan
                                     // PR #701's compiled float8 pair +20 / +21 %, GB200 -11 / -14 %); 12.66 % on 64 rows: the 50 rows of before 12.06 %, the 14 added 14.8 % (torchtitan's
                                     // eager 8B rows of February 2025 -12 ... -14 %, lightning-thunder's float8 rows of PR #997 -24 ... -28 %);
                                     // on the 50-row file 12.25 % before the optimizer step was charged as each runtime runs it (foreach or
                                     // fused AdamW, clipping: 7 ... 23 accesses an element where every runtime was charged 8), 12.25 % (12.31 % before the unsynced gradient sum of KempnerForge's grad_accum
                                     // steps was charged byte for byte, its five rows +0.6 ... +0.7 points slower; 13.07 % before the B200 preset's power limit followed its datasheet
                                     // curve through B100's 700 W rating, clock ~ power^0.705 instead of the cube-root law: torchao's
                                     // three 750 W rows +54.1 / +70.5 / +58.0 -> +41.5 / +58.3 / +45.1 %; 12.93 % before table-timed plans charged FSDP2's copies and overlapped the host time: KempnerForge's multi-GPU rows +1.4 points; 13.00 % before a kernel table timed eager RMSNorms by shape: KempnerForge's
                                     // eager 13B row +15.5 -> +11.9 %; 13.63 % before the measured kernel tables timed the runtimes of
                                     // their torch release, 2.11: KempnerForge's five H200 rows -16.5 / -17.1 / -6.6 / -14.4 /
                                     // -12.6 -> -1.0 / +3.3 / +15.5 / +7.1 / +8.9 %, docs/validation.md "Measured on one H200:
                                     // the KempnerForge stack"; 13.75 % before TinyLlama's runtime profile, its row -12.1 -> -5.9 %;
                                     // 13.76 % with hbm_eff fitted; 13.78 % on the 49 rows before PR #1196's flash-backend
                                     // row, -12.8 %; 14.04 % on the 48 rows before torchtitan PR #1196's
                                     // B200 row, +1.5 %; 16.10 % before compiled float8 rowwise Linears took
                                     // torchao's measured per-shape speed-ups, configs/kernels/float8_linear.csv:
                                     // the four rowwise rows +19.1 / +16.9 / +28.5 / +95.2 -> +1.1 / -0.9 /
                                     // -0.7 / +58.0 %; 16.21 % with the AMD fp8 ceilings at the bf16
                                     // fraction, before their prior took the measured accelerators'
                                     // fp8/bf16 ratio, 0.9586; 16.36 % before the SDPA backend: cuDNN attention
                                     // where the runtime runs it, docs/cost-model.md §2.2 — KempnerForge's
                                     // five H200 rows -21 / -22 % -> -13 %, the B200 rows +47 ... +83 ->
                                     // +54 ... +95 %; 18.63 % before the power limit of the B200 rows
                                     // (750 W) and of the H100-96GB preset (500 W): docs/cost-model.md
                                     // §2.4; 33-row file: 14.37 %; the B200 and lit-llama rows add +44 ... +77 %)
  double abs_bias_tps = 3.3;         // the bound is 3 % and is NOT met since the four Qwen3-32B rows: measured -3.21 % on 81
                                     // rows (all four slow, the compiled one -19.9 %); -2.84 % on 77 rows since lit-llama's own profile (its +58.5 % row came to +38.5 %), -2.58 % with the NIC rule, -2.55 % since AWS's rows run cuDNN attention (the GH100 refit is 0.3 points slower on the Hopper rows); -2.21 % since litgpt's fp32 logits; -2.18 % since the tensorwise float8 grid (above: the float8 rows that were
                                     // fast moved more than those that were slow); the bound is 3 %; +0.005 % on 77 rows since torch's fused RMSNorm, -0.17 % since the cuDNN window (-1.82 % with PR #997's rows alone on cuDNN, -2.58 % before), -1.57 % on 64 rows (the 50 of before +1.96 %, +1.95 % before the optimizer step as run; +2.01 % before the unsynced gradient sum, +2.76 % before the B200 datasheet power curve, +2.58 % before FSDP2's copies, +2.7 % before the eager RMSNorm by shape, +0.63 % before the kernel tables timed KempnerForge's rows; +0.51 % before TinyLlama's profile, +0.48 % with hbm_eff fitted, +0.75 % on 49 rows, +0.74 % on 48 rows, +2.87 % before the float8 rowwise table, +2.98 % before the AMD fp8 prior), the bound (+1.51 % before the SDPA backend:
                                     // the B200 rows ran cuDNN attention, measured 3.3x the flash backend
                                     // there, and moved 7 ... 12 points further over, while KempnerForge's
                                     // slow rows moved 4 ... 8 points up; fast and slow regimes cancel: see docs; +3.78 %
                                     // before the power limit); the lightning-thunder profile (pure
                                     // bf16, bf16 reduction) moved its 7 rows 1-2 points faster, from +3.49 %
  int min_within_1sigma = 57;        // measured 57 of 81 (70.4 %) since the Qwen3-32B rows (three inside their 1σ);
                                     // 54 of 77 (70.1 %) since a node's NIC bandwidth follows its GPUs per node
                                     // (KempnerForge's 8-node row, +10.1 % on ±10.0 %, came inside its 1σ);
                                     // 53 of 77 (68.8 %, the target 68 %) since AWS's rows run cuDNN attention: the
                                     // GH100 leave-one-source-out bands narrowed (all rows 16.5 -> 10.0 %, single-node 23.4 -> 14.0 %)
                                     // while no outside error moved by more than 0.6 points: ten H100 rows of lightning-thunder and
                                     // torchtitan's eager PR logs (-14 ... -22 %) left their 1σ; 63 of 77 (81.8 %) since the tensorwise float8 grid, with the GH100 bands
                                     // written again (17 % where they were 13 %); 62 of 77 (80.5 %) since torch's fused RMSNorm (PR #1881's eager row, -16.5 % on +-18 %); 61 of 77 (79.2 %) since the cuDNN window; 55 of 77 before (71 %; 9 of the 13 rows added on 2026-11-28); 46 of 64 (72 %; 8 of the 14 added rows); 38 of 50 since a kernel table times eager RMSNorms by shape (KempnerForge's
                                     // eager 13B row back inside its ±15 %, +11.9 %); 37 of 50 between, when the kernel tables
                                     // first timed KempnerForge's rows: that row -6.6 -> +15.5 % (eager elementwise ops ran
                                     // 1.4-1.6x the planner's bytes over the measured copy rate in the stack probes);
                                     // 38 of 50 with TinyLlama's runtime profile (its row came inside its 1σ);
                                     // 37 of 50 between, since hbm_eff left the fitted keys (docs/validation.md
                                     // "Memory-bound ops at the measured bandwidth": leave-one-source-out 8.1 -> 7.7 %
                                     // narrowed the GH100 bands 20 -> 17.6 %, and thunder940_llama2_7b_8g_zero2_fsdp1_compile,
                                     // -19.7 %, left its 1σ; no error moved); 38 of 50 before, 37 of 49 before PR #1196's flash-backend row; 36 of 48 before the PR #1196 row; 35 before the AMD fp8 prior: the MI300X rowwise row, +30.5 -> +28.5 %
                                     // inside its ±30 % prior; 31 before the SDPA backend: four KempnerForge rows came in)
  int min_within_2sigma = 76;        // measured 76 of 81 (93.8 %, under the 95 % target) since the Qwen3-32B rows (all four inside
                                     // their 2σ); 72 of 77 (93.5 %) since AWS's rows run cuDNN attention (above):
                                     // lightning-thunder's three -31 % rows on ±14 % left their 2σ; 75 of 77 (97.4 %) since the Blackwell priors follow their rule again (±21 -> ±24 %,
                                     // wider than GH100's widest band, 23.4 %: torchao's B200 bf16 and rowwise rows, +42.4 / +46.0 %, inside
                                     // their 2σ of 48 %); 73 of 77 (94.8 %) since the tensorwise float8 grid (OLMo-core's 13B float8
                                     // row +26.1 % on a ±17 % band, inside its 2σ again); 72 of 77 (93.5 %) since the cuDNN window: OLMo-core's 13B float8 row, +38.8 % on a
                                     // ±18 % band, left its 2σ; 73 of 77 before (94.8 %, under the 95 % target: litgpt's compiled TinyLlama row, -25.4 % on a
                                     // ±10 % band, is outside its 2σ); 61 of 64 (95.3 %; all 14 rows added before); 47 of 50 since the B200 datasheet power curve (torchao's bf16 row at +41.5 % inside
                                     // its 2σ of 42 %); 46 of 50 before (45 of 49)
  int n_mem = 63;                    // rows with a memory figure (38 max reserved, 25 max allocated); 59 before the Qwen3-32B rows
                                     // (+1.3 ... +8.4 % over); 52 before the 13 rows, 38 before the 14
  double mape_mem = 5.5;             // measured 5.05 % on 63 figures since the Qwen3-32B rows; 5.06 % on 59 figures since litgpt's loss runs on the fp32 logits Fabric returns
                                     // (its three rows -7.3 / -9.5 / -7.3 -> -2.6 / -3.4 / -2.6 %); 5.32 % before; 5.40 % on 52 figures since torchao's tensorwise Float8Linear keeps its fp8-cast input,
                                     // not the input (runtime term fp8_input_saved): lightning-thunder's 10 float8 rows
                                     // +12.6 ... +24.6 -> +7.7 ... +15.3 % over; 6.73 % before (the 38 of before 5.93 %); 5.93 % on 38 (the flash-backend row +5.7 %; 5.95 % before the PR #1196 row, +5.4 %; 6.45 % before torchtitan's eager block was replayed
                                     // tensor by tensor, planner/model/allocator/block_tensor_sequence.h: the four March-2024
                                     // eager rows -6.8 / -12.6 / -3.5 / -6.0 -> -1.8 / -2.1 / +1.7 / +5.3 %;
                                     // 7.01 % before the SDPA backend: the B200 rows' op SAC
                                     // does not keep cuDNN attention's output, +19.9 -> +13.1 %; 6.90 % before qkv_output_kept moved lightning-
                                     // thunder's MHA rows: the compiled pair -7.6 -> -2.3 %, the eager row
                                     // -1.9 -> +2.7 %, the Llama-2 Float8 pair +8.4 / +10.7 -> +14.7 / +18.5 %;
                                     // 6.62 % before fp8_weight_saved moved the
                                     // lightning-thunder fp8 rows without the recompute flag from
                                     // -10.5 / +9.8 % to +8.4 / +21.7 %; 12.11 % before the atorch profile: the KV
                                     // cache transformers returns in training, the fp32 logits and
                                     // that cache kept by the loop until the next forward, and the
                                     // shifted fp32 copy of its loss; 15.94 % before the
                                     // lightning-thunder profile)
  double worst_mem_under_pct = -6.0;   // measured -5.94 % (the tt355 pair below) since litgpt's loss runs on the fp32 logits
                                       // Lightning Fabric returns (docs/validation.md "litgpt's logits, as Fabric returns them");
                                       // -9.52 % before (litgpt_thunder_tinyllama_8g_fsdp1_compile_24d5eba1, max allocated; its eager
                                       // rows -7.33 %: litgpt's pure-bf16 FSDP1 TinyLlama on 8 A100-40GB, docs/validation.md "New outside
                                       // runs (2026-11-28, fifth session)"); -5.94 % on 64 rows (tt355_llama3_8b_a100_8g_sac_op_foreach and _fused: torchtitan of
                                       // June 2024 on 8 A100 without expandable segments, 59.48 GiB max reserved;
                                       // -12.5 % before torchtitan-2024-05 kept the fp32 logits, e29b6b4d4): the
                                       // issue's target (-5 %) is not met; -2.3 % on the 50-row file
                                       // (thunder940_llama2_7b_8g_zero2_fsdp1_compile, max allocated);
                                       // -12.6 % (tt165_fsdp1_7b_8g_sac_eager) before the eager block
                                       // tensor by tensor
  // The same per metric.
  // The eager torchtitan rows' reserved comes from their blocks' tensors one by one: the holes
  // the fp32 copies and unkept intermediates leave are where the kept tensors go (docs/validation.md
  // "Memory"); with the blocks as lumps tt165_fsdp1_7b_8g_sac_eager was -12.6 %.
  double worst_reserved_under_pct = -6.0;    // measured -5.94 % (the tt355 pair, above); -2.1 % on the 50-row file (tt165_fsdp1_7b_8g_sac_eager)
  double worst_allocated_under_pct = -3.5;   // measured -3.38 % (litgpt's compiled TinyLlama row) since litgpt's fp32 logits;
                                             // -9.52 % before (that row, above); -2.3 % on 64 rows
                                             // (thunder940_llama2_7b_8g_zero2_fsdp1_compile);
                                             // -7.6 % before qkv_output_kept (litgpt's fused q/k/v output),
                                             // -10.5 % before fp8_weight_saved, -58.9 % (atorch, 64
                                             // GPUs) before the atorch profile
  // Rows over several nodes whose source does not state the network (MultiNodeRowsWithout...).
  int multi_node_network_unstated = 6;  // TinyLlama's 16 A100, KempnerForge's 2 and 8 nodes, YaFSDP's 64 and 128 A100 at 8192 tokens,
                                        // torchtitan d66b72a6a's Qwen3-32B FSDP 16 (2 hosts)
  // Every published run ran; measured: every row predicted to fit.
  int max_predicted_not_fitting = 0;
};
constexpr OutsideBounds kBounds{};

ValidationResult validate_outside() { return test::validate_published_file(published("outside.csv")); }

TEST(OutsideRuns, EveryRowIsPredictedOrSkippedForItsStatedReason) {
  const auto rows = read_published_csv(published("outside.csv"));
  ASSERT_EQ(rows.size(), kBounds.rows);
  std::set<std::string> ids;
  for (const auto& r : rows) EXPECT_TRUE(ids.insert(r.row_id).second) << "duplicate row_id " << r.row_id;

  const ValidationResult v = validate_outside();
  // Every row is in scope; the float8 row-wise rows are predicted with their recipe (fp8_key).
  const std::map<std::string, Fp8Recipe> recipe = {{"ao_h100_8b_8g_f8rowwise", Fp8Recipe::rowwise},
                                                   {"ao_mi300x_8b_8g_f8rowwise_gw_hp", Fp8Recipe::rowwise_with_gw_hp},
                                                   {"ao_mi300x_8b_8g_f8rowwise", Fp8Recipe::rowwise},
                                                   {"ao_h100_8b_8g_f8tensorwise_fp8ag", Fp8Recipe::tensorwise}};
  for (const auto& r : rows)
    if (recipe.count(r.row_id)) {
      EXPECT_EQ(r.cfg.precision.fp8, recipe.at(r.row_id)) << r.row_id;
    }
  int predicted = 0;
  for (const auto& r : v.rows) {
    if (recipe.count(r.row_id)) {
      EXPECT_EQ(r.fp8, to_string(recipe.at(r.row_id))) << r.row_id;
    }
    EXPECT_TRUE(r.skip_reason.empty()) << r.row_id << ": " << r.skip_reason;
    EXPECT_TRUE(r.has_tps) << r.row_id;
    EXPECT_TRUE(std::isfinite(r.predicted_tps) && r.predicted_tps > 0) << r.row_id;
    EXPECT_GT(r.band_rel_1sigma, 0) << r.row_id << ": every prediction states its band";
    ++predicted;
  }
  EXPECT_EQ(predicted, kBounds.predicted);
  EXPECT_EQ(v.n_skipped, kBounds.skipped);
}

// (n_layers, d_model, seq_len, gpu_type, n_gpus, micro-batch, measured tokens/s/GPU) of each row.
using RunKey = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string, double>;
std::set<RunKey> run_keys(const std::string& path) {
  const auto records = parse_csv(read_text(path), path);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < records.at(0).size(); ++i) col[records[0][i]] = i;
  std::set<RunKey> keys;
  for (size_t i = 1; i < records.size(); ++i) {
    const auto& r = records[i];
    auto at = [&](const char* c) { return col.at(c) < r.size() ? r[col.at(c)] : std::string(); };
    const std::string tps = at("measured_tokens_per_sec_per_gpu");
    keys.insert({at("n_layers"), at("d_model"), at("seq_len"), at("gpu_type"), at("n_gpus"), at("micro_batch_per_gpu"),
                 tps.empty() ? -1.0 : std::stod(tps)});
  }
  return keys;
}

TEST(OutsideRuns, NoRowRepeatsACalibrationOrHoldoutRow) {
  const auto outside = run_keys(published("outside.csv"));
  EXPECT_EQ(outside.size(), kBounds.rows) << "two rows of outside.csv describe the same run";
  for (const char* other : {"calibration.csv", "holdout.csv"}) {
    const auto theirs = run_keys(published(other));
    for (const auto& k : outside) EXPECT_FALSE(theirs.count(k)) << "a row of outside.csv repeats a row of " << other;
  }
}

// A run over several nodes whose source does not state the network (empty inter_node_gbps: the
// preset's NICs stand in) tests the planner only if its prediction does not hang on that guess.
// The file's rule (docs/validation.md "New outside runs (2026-11-28, fifth session)"): from a 400 Gb/s
// node (one 400G or two 200G NICs) to the preset's full complement, the predicted tokens/s moves
// less than the row's own 1σ band. Measured: TinyLlama 16 A100 1.3 points (band 10 %),
// KempnerForge's 2 and 8 H200 nodes 6.0 and 8.6 (15 %), YaFSDP's 64 and 128 A100 at 8192 tokens
// 5.3 (11 %); YaFSDP's other 14 FSDP1 rows (2048–4096 tokens a GPU) moved 18–117 points and
// torchtitan PR #1881's 64-H100 row 17.6 (13 %): they are not in the file.
TEST(OutsideRuns, MultiNodeRowsWithoutTheirNetworkDoNotHangOnIt) {
  auto rows = read_published_csv(published("outside.csv"), read_annotations(published("annotations.csv")));
  std::vector<bool> network_stated(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) network_stated[i] = rows[i].cfg.cluster.inter_node_gbps > 0;
  HardwareSet hw;
  const std::vector<ValidationCase> cases = resolve_cases(rows, hw);
  int checked = 0;
  for (const ValidationCase& c : cases) {
    if (network_stated[c.row] || c.cfg.cluster.nodes < 2) continue;
    ValidationCase slow = c;
    slow.cfg.cluster.inter_node_gbps = 400;
    const ValidationRowResult as_given = validate_cases(rows, {c}, hw).rows[c.row];
    const ValidationRowResult at_400 = validate_cases(rows, {slow}, hw).rows[c.row];
    ASSERT_TRUE(as_given.has_tps && at_400.has_tps) << as_given.row_id;
    const double swing = std::fabs(as_given.predicted_tps - at_400.predicted_tps) / as_given.measured_tps;
    EXPECT_LT(swing, as_given.band_rel_1sigma)
        << as_given.row_id << ": the prediction moves " << 100 * swing << " points between 400 Gb/s and "
        << hw.at(c.hardware).node.inter_node_bandwidth * 8e-9 << " Gb/s per node, which the source does not state";
    ++checked;
  }
  EXPECT_EQ(checked, kBounds.multi_node_network_unstated);
}

TEST(OutsideRuns, AccuracyHoldsItsMeasuredBounds) {
  // Targets for runs never seen (docs/validation.md "Summary"): tokens/s/GPU MAPE ≤ 8 % with
  // |bias| ≤ 3 %, memory MAPE ≤ 8 % with no row more than 5 % under its measured value, ≥ 68 % of
  // the rows inside their stated 1σ band and ≥ 95 % inside 2σ. The bounds are kBounds (above).
  const ValidationResult v = validate_outside();
  const ValidationSummary& s = v.overall;
  ASSERT_EQ(s.n, kBounds.predicted);
  EXPECT_LE(s.mape_tps, kBounds.mape_tps);
  EXPECT_LE(std::fabs(s.bias_tps), kBounds.abs_bias_tps);
  EXPECT_GE(s.within_1sigma, kBounds.min_within_1sigma);
  EXPECT_GE(s.within_2sigma, kBounds.min_within_2sigma);
  ASSERT_EQ(s.n_mem, kBounds.n_mem);
  EXPECT_LE(s.mape_mem, kBounds.mape_mem);
  int not_fitting = 0;
  for (const auto& r : v.rows) {
    if (!r.skip_reason.empty()) continue;
    if (!r.fits) ++not_fitting;
    if (!r.has_mem) continue;
    EXPECT_GE(r.err_mem_pct, kBounds.worst_mem_under_pct)
        << r.row_id << ": an under-predicted peak is an OOM the user did not see coming";
    if (r.mem_metric == "max_reserved_GiB") {
      EXPECT_GE(r.err_mem_pct, kBounds.worst_reserved_under_pct) << r.row_id;
    } else if (r.mem_metric == "max_allocated_GiB") {
      EXPECT_GE(r.err_mem_pct, kBounds.worst_allocated_under_pct) << r.row_id;
    } else {
      ADD_FAILURE() << r.row_id << ": memory metric '" << r.mem_metric << "' has no bound here";
    }
  }
  EXPECT_LE(not_fitting, kBounds.max_predicted_not_fitting) << "every published run ran";
}

}  // namespace
}  // namespace shardcast::planner
