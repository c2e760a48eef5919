// Calibration: a hardware profile from this machine's micro-benchmarks, and efficiency
// parameters fitted to the trainer's measured runs.
//
// What it is: (1) parse_microbench() reads `shardcast-train microbench --json`;
// profile_from_microbench() turns it into a HardwareSpec: the fp32 peak and matmul_dim_half
// are fitted to the GEMM shape curve (rate(k) = peak·k/(k + dim_half), k = smallest GEMM
// dimension; the peak is the asymptote, so matmul_eff = 1), the memory bandwidth is
// the measured copy rate (hbm_eff = 1), the link bandwidth is the measured Gloo bus bandwidth
// on loopback (intra_node_bw_eff = 1) and the per-step / fixed latencies come from the
// collectives' intercepts with 2 and 4 ranks; everything else is kept from a base preset.
// hardware_to_toml() writes a preset file parse_hardware_toml() reads back equal.
// (2) calibrate_to_runs() fits named [efficiency] keys to measured step times of trainer
// runs by least squares on log(predicted/measured) (planner/evidence/fit.h's Levenberg–Marquardt,
// each key kept in its physical range, fit_bounds; started from the profile's values and from
// mid-range, the better kept), and reports the error per run before and after the fit and
// held out (refitted without that run: leave-one-out); it refuses to fit with fewer than
// min_runs_per_param runs per fitted key.
// What it is not: running the benchmarks (the trainer does; the planner never links
// LibTorch) or the CLI (cli/cmd_calibrate.cpp). Functions are reentrant.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "shared/hardware_spec.h"
#include "shared/train_config.h"

namespace shardcast::planner {

struct MicrobenchData {
  struct Gemm {
    double m = 0, k = 0, n = 0, flops_per_s = 0;
  };
  struct Fit {
    std::string op;   // all_gather | all_reduce | reduce_scatter
    int ranks = 0;
    double latency_s = 0, bytes_per_s = 0;
  };
  struct Collective {  // one measured point, as `shardcast-train microbench --json` writes it
    std::string op;
    int ranks = 0;
    double bytes = 0, seconds = 0;  // total (gathered / buffer) size  // bytes, s
  };
  std::vector<Gemm> matmul;
  double memory_bytes_per_s = 0;
  std::vector<Collective> collectives;
  // t = latency + bytes / bytes_per_s per (op, ranks), least squares over the collectives
  // (derived by parse_microbench).
  std::vector<Fit> fits;
};

// Strict: InputError "<label>: <key>: <detail>" for anything missing or malformed, or a
// collective measured at fewer than two message sizes (its line cannot be fitted).
MicrobenchData parse_microbench(const std::string& json_text, const std::string& label);

// `notes` receives one line per derived number (what was measured and how it was used).
HardwareSpec profile_from_microbench(const MicrobenchData& mb, const HardwareSpec& base, const std::string& name,
                                     std::vector<std::string>* notes = nullptr);

std::string hardware_to_toml(const HardwareSpec& hw);

struct MeasuredRun {
  std::string name;
  TrainConfig cfg;
  double step_time_s = 0;  // measured median over steady steps  // s
};

struct CalibrateOptions {
  // Default: the keys the micro-benchmarks cannot measure (a --hardware-out profile already has
  // the measured GEMM, copy and Gloo rates, with their efficiencies at 1): the eager attention
  // kernels, host time per unit and per step, and how much compute slows while Gloo's threads
  // share the cores (docs/validation-cpu.md).
  std::vector<std::string> params = {"attention_eff", "unit_overhead_s", "step_overhead_s",
                                     "overlap_compute_slowdown"};
  int min_runs_per_param = 2;
  double prior_weight = 0;  // weight of the pull towards the starting values (log space, fit_bounded)
  // Also fit once per run with that run left out and predict it (leave-one-out): the error a
  // run not used in the fit would see. Needs one run more than the fit itself.
  bool leave_one_out = true;
};

struct CalibrationRow {
  std::string name;
  double measured_s = 0, before_s = 0, after_s = 0;
  double held_out_s = 0;  // predicted by a fit without this run (0 = not computed)  // s
  double err_before_pct() const { return 100 * (before_s - measured_s) / measured_s; }
  double err_after_pct() const { return 100 * (after_s - measured_s) / measured_s; }
  double err_held_out_pct() const { return 100 * (held_out_s - measured_s) / measured_s; }
};

struct CalibrationResult {
  HardwareSpec fitted;
  std::map<std::string, double> before, after;  // fitted keys
  std::vector<CalibrationRow> rows;
  double mape_before = 0, mape_after = 0;       // %
  double mape_held_out = -1;                    // % over the leave-one-out predictions; -1 = not computed
  int iterations = 0;
};

// Throws UsageError when there are too few runs or a key is not fittable.
CalibrationResult calibrate_to_runs(const std::vector<MeasuredRun>& runs, const HardwareSpec& hw,
                                    const CalibrateOptions& opts);

}  // namespace shardcast::planner
