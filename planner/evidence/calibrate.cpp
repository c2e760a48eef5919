// Micro-benchmark profiles and least-squares calibration on trainer runs. See calibrate.h.
#include "planner/evidence/predict.h"
#include "planner/evidence/calibrate.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/evidence/fit.h"
#include "planner/model/plan.h"
#include "planner/evidence/run_validation.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "planner/model/runtime.h"

namespace shardcast::planner {

using nlohmann::json;

namespace {

double num(const json& o, const std::string& where, const char* key, const std::string& label) {
  if (!o.is_object() || !o.contains(key)) throw InputError(fmt::format("{}: {}.{}: missing", label, where, key));
  const json& v = o.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    throw InputError(fmt::format("{}: {}.{}: expected a non-negative number", label, where, key));
  return v.get<double>();
}

// Least squares line y = a + b·x (Eigen, column-pivoting QR).
void line(const std::vector<double>& x, const std::vector<double>& y, double& a, double& b) {
  Eigen::MatrixXd A(x.size(), 2);
  Eigen::VectorXd v(y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    A(Eigen::Index(i), 0) = 1.0;
    A(Eigen::Index(i), 1) = x[i];
    v(Eigen::Index(i)) = y[i];
  }
  const Eigen::Vector2d c = A.colPivHouseholderQr().solve(v);
  a = c(0);
  b = c(1);
}

}  // namespace

MicrobenchData parse_microbench(const std::string& text, const std::string& label) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", label, e.what()));
  }
  if (!j.is_object()) throw InputError(label + ": expected a JSON object");
  if (!j.contains("schema") || j["schema"] != 1) throw InputError(label + ": schema: expected 1");
  MicrobenchData d;
  d.memory_bytes_per_s = num(j, "(top)", "memory_bytes_per_s", label);
  if (!j.contains("matmul") || !j["matmul"].is_array() || j["matmul"].empty())
    throw InputError(label + ": matmul: expected a non-empty array");
  for (size_t i = 0; i < j["matmul"].size(); ++i) {
    const std::string w = fmt::format("matmul[{}]", i);
    const json& g = j["matmul"][i];
    d.matmul.push_back({num(g, w, "m", label), num(g, w, "k", label), num(g, w, "n", label),
                        num(g, w, "flops_per_s", label)});
  }
  if (!j.contains("collectives") || !j["collectives"].is_array())
    throw InputError(label + ": collectives: expected an array");
  for (size_t i = 0; i < j["collectives"].size(); ++i) {
    const std::string w = fmt::format("collectives[{}]", i);
    const json& c = j["collectives"][i];
    if (!c.is_object() || !c.contains("op") || !c["op"].is_string())
      throw InputError(fmt::format("{}: {}.op: expected a string", label, w));
    d.collectives.push_back({c["op"].get<std::string>(), int(num(c, w, "ranks", label)), num(c, w, "bytes", label),
                             num(c, w, "seconds", label)});
  }
  // One line t = latency + bytes / bandwidth per (op, ranks), in order of first appearance.
  for (const auto& first : d.collectives) {
    bool seen = false;
    for (const auto& f : d.fits) seen = seen || (f.op == first.op && f.ranks == first.ranks);
    if (seen) continue;
    std::vector<double> x, y;
    for (const auto& c : d.collectives)
      if (c.op == first.op && c.ranks == first.ranks) x.push_back(c.bytes), y.push_back(c.seconds);
    if (std::count_if(x.begin(), x.end(), [&](double v) { return v != x.front(); }) == 0)
      throw InputError(fmt::format("{}: collectives: {} with {} ranks needs at least two message sizes", label,
                                   first.op, first.ranks));
    double a = 0, b = 0;
    line(x, y, a, b);
    d.fits.push_back({first.op, first.ranks, std::max(0.0, a), b > 0 ? 1.0 / b : 0});
  }
  return d;
}

namespace {

// The fp32 GEMM peak (and matmul_dim_half) from the measured shapes into hw.
void fit_gemm_rates(const MicrobenchData& mb, const HardwareSpec& base, HardwareSpec& hw,
                    std::vector<std::string>* notes) {
  auto note = [&](const std::string& s) {
    if (notes) notes->push_back(s);
  };
  // GEMMs: rate(k) = P·k/(k + dim_half), k = smallest GEMM dimension. The fp32 peak is the
  // fitted asymptote P (what one core's GEMM reaches on large shapes), so matmul_eff = 1.
  double best = 0;
  for (const auto& g : mb.matmul) best = std::max(best, g.flops_per_s);
  if (!(best > 0)) throw InputError("micro-benchmark: no positive matmul rate");
  hw.gpu.bf16_flops = hw.gpu.fp16_flops = hw.gpu.fp8_flops = 0;  // the CPU trainer computes in fp32
  if (mb.matmul.size() >= 3) {
    auto resid = [&](const Eigen::VectorXd& x) {
      const double P = std::exp(x[0]), h = std::exp(x[1]);
      Eigen::VectorXd r(mb.matmul.size());
      for (size_t i = 0; i < mb.matmul.size(); ++i) {
        const auto& g = mb.matmul[i];
        const double k = std::min({g.m, g.k, g.n});
        r[Eigen::Index(i)] = std::log(P * k / (k + h)) - std::log(std::max(g.flops_per_s, 1.0));
      }
      return r;
    };
    Eigen::VectorXd x0(2);
    x0 << std::log(best), std::log(32.0);
    LmOptions lo;
    lo.max_iterations = 200;
    lo.tolerance = 1e-12;
    const LmResult r = levenberg_marquardt(resid, x0, lo);
    const double rms = std::sqrt(2 * r.cost_after / double(mb.matmul.size()));
    const double fitted_peak = std::exp(r.x[0]);
    hw.efficiency["matmul_eff"] = 1.0;
    if (fitted_peak < best) {
      // The curve never exceeds its asymptote, so a fitted peak below a measured rate is a fit
      // to noise (a busy machine): the peak is the best rate, as with too few shapes. An MFU
      // measured against the fitted peak would read above 100%.
      hw.gpu.fp32_flops = best;
      note(fmt::format("fp32 peak = best GEMM rate {:.2f} GFLOP/s: the fit of rate = peak·k/(k + dim_half) to {} GEMM "
                       "shapes put the peak at {:.2f}, below that rate (rms log error {:.3f}: noisy rates, a busy "
                       "machine?); matmul_dim_half kept from {}; matmul_eff = 1",
                       best / 1e9, mb.matmul.size(), fitted_peak / 1e9, rms, base.name));
    } else {
      hw.gpu.fp32_flops = fitted_peak;
      hw.efficiency["matmul_dim_half"] = std::exp(r.x[1]);
      // A half-rate dimension below 0.01 is the fit at its bound: the rates do not fall with k.
      const double dh = hw.efficiency["matmul_dim_half"];
      note(fmt::format("fp32 peak {:.2f} GFLOP/s and matmul_dim_half {}: fit of rate = peak·k/(k + dim_half) to "
                       "{} GEMM shapes (rms log error {:.3f}; best measured {:.2f} GFLOP/s); matmul_eff = 1",
                       hw.gpu.fp32_flops / 1e9,
                       dh < 0.01 ? std::string("0 (no fall with smaller shapes)") : fmt::format("{:.3g}", dh),
                       mb.matmul.size(), rms, best / 1e9));
    }
  } else {
    hw.gpu.fp32_flops = best;
    note(fmt::format("fp32 peak = best GEMM rate {:.2f} GFLOP/s (fewer than 3 shapes: matmul_eff / matmul_dim_half "
                     "kept from {})", best / 1e9, base.name));
  }
}

// The link's bus bandwidth and the collectives' latency from the Gloo fits into hw.
void fit_collectives(const MicrobenchData& mb, HardwareSpec& hw, std::vector<std::string>* notes) {
  auto note = [&](const std::string& s) {
    if (notes) notes->push_back(s);
  };
  // Collectives: bus bandwidth = (n−1)/n·S/t for all_gather and reduce_scatter (the trainer's
  // Gloo layer composes it from an all-to-all, which moves the same bytes:
  // trainer/comm/collectives.cpp), 2(n−1)/n·S/t for all_reduce. Latency: n − 1 ring steps for
  // all_gather, 2(n − 1) for all_reduce, one round for the all-to-all reduce-scatter (the
  // runtime term gloo_reduce_scatter = "alltoall" the planner times it by).
  std::vector<double> bus, steps, lat;
  for (const auto& f : mb.fits) {
    if (f.ranks < 2 || !(f.bytes_per_s > 0)) continue;
    const double n = f.ranks;
    const double rounds = f.op == "all_reduce" ? 2.0 : 1.0;
    if (f.ranks == 2) bus.push_back(rounds * (n - 1) / n * f.bytes_per_s);
    steps.push_back(f.op == "reduce_scatter" ? 1.0 : rounds * (n - 1));
    lat.push_back(f.latency_s);
  }
  if (bus.empty()) throw InputError("micro-benchmark: no 2-rank collective fits");
  double b = 0;
  for (double x : bus) b += x;
  b /= double(bus.size());
  hw.node.intra_node_bandwidth = b;
  hw.efficiency["intra_node_bw_eff"] = 1.0;
  note(fmt::format("link bus bandwidth {:.3f} GB/s (mean of {} 2-rank Gloo collectives), intra_node_bw_eff = 1",
                   b / 1e9, bus.size()));
  double base_lat = 0, step_lat = 0;
  line(steps, lat, base_lat, step_lat);
  hw.node.intra_node_latency = std::max(0.0, step_lat);
  hw.efficiency["collective_base_latency_s"] = std::max(0.0, base_lat);
  note(fmt::format("latency per ring step {:.1f} us, fixed {:.1f} us (line through {} collective intercepts)",
                   hw.node.intra_node_latency * 1e6, hw.efficiency["collective_base_latency_s"] * 1e6, lat.size()));
}

}  // namespace

HardwareSpec profile_from_microbench(const MicrobenchData& mb, const HardwareSpec& base, const std::string& name,
                                     std::vector<std::string>* notes) {
  auto note = [&](const std::string& s) {
    if (notes) notes->push_back(s);
  };
  HardwareSpec hw = base;
  hw.name = name;
  hw.file.clear();
  fit_gemm_rates(mb, base, hw, notes);
  if (!(mb.memory_bytes_per_s > 0)) throw InputError("micro-benchmark: memory bandwidth is 0");
  hw.gpu.hbm_bandwidth = mb.memory_bytes_per_s;
  hw.efficiency["hbm_eff"] = 1.0;
  note(fmt::format("memory bandwidth {:.2f} GB/s (copy, read + write), hbm_eff = 1", mb.memory_bytes_per_s / 1e9));
  fit_collectives(mb, hw, notes);
  hw.source = "shardcast calibrate --hardware-out: measured on this machine (" + std::to_string(mb.matmul.size()) +
              " GEMM shapes, memory copy, Gloo loopback with 2 and 4 ranks); other keys from " + base.name;
  return hw;
}

std::string hardware_to_toml(const HardwareSpec& h) {
  return "# Hardware profile written by `shardcast calibrate` (units as in configs/hardware/cpu.toml).\n" +
         write_hardware_toml(h);
}

namespace {

// The least-squares fit of o.params to runs, starting from hw (no checks, no report).
HardwareSpec fit_profile(const std::vector<MeasuredRun>& runs, const HardwareSpec& hw, const CalibrateOptions& o,
                         int* iterations) {
  std::vector<double> start;
  for (const auto& k : o.params) start.push_back(hw.efficiency_param(k));
  // Each run is predicted for the runtime that made it (run.toml's runtime).
  std::vector<PlanOptions> opts;
  for (const auto& r : runs) opts.push_back(resolve_plan_options(r.cfg, hw));
  auto with = [&](const std::vector<double>& v) {
    HardwareSpec h = hw;
    for (size_t k = 0; k < v.size(); ++k) h.efficiency[o.params[k]] = v[k];
    return h;
  };
  auto data = [&](const std::vector<double>& v) {
    const HardwareSpec h = with(v);
    Eigen::VectorXd r(Eigen::Index(runs.size()));
    for (size_t i = 0; i < runs.size(); ++i)
      r[Eigen::Index(i)] = std::log(predict(runs[i].cfg, h, opts[i]).step_time_s / runs[i].step_time_s);
    return r;
  };
  // A measured profile has its efficiencies at 1, on or above a bound: start 2% inside the range,
  // and also from the middle of every range (tests/planner/calibrate_test.cpp LeaveOneOut...).
  BoundedFitOptions bo;
  bo.prior_weight = o.prior_weight;
  bo.start_margin = 0.02;
  bo.also_from_middle = true;
  const BoundedFitResult f = fit_bounded(o.params, start, data, bo);
  if (iterations) *iterations = f.lm.iterations;
  return with(f.values);
}

}  // namespace

CalibrationResult calibrate_to_runs(const std::vector<MeasuredRun>& runs, const HardwareSpec& hw,
                                    const CalibrateOptions& o) {
  const int np = int(o.params.size());
  if (np == 0) throw UsageError("calibrate: no parameters to fit");
  const size_t need = size_t(np) * size_t(std::max(1, o.min_runs_per_param));
  if (runs.size() < need)
    throw UsageError(fmt::format("calibrate: {} measured runs are too few to fit {} parameters ({}); need at least {} "
                                 "({} per parameter)",
                                 runs.size(), np, fmt::join(o.params, ", "), need, o.min_runs_per_param));
  CalibrationResult res;
  for (const auto& k : o.params) {
    fit_bounds(k);  // throws for a key that is not fittable
    res.before[k] = hw.efficiency_param(k);
  }
  res.fitted = fit_profile(runs, hw, o, &res.iterations);
  for (const auto& k : o.params) res.after[k] = res.fitted.efficiency.at(k);
  const bool loo = o.leave_one_out && runs.size() > need;
  if (loo) res.mape_held_out = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const MeasuredRun& r = runs[i];
    const PlanOptions opt = resolve_plan_options(r.cfg, hw);
    CalibrationRow row{r.name, r.step_time_s, predict(r.cfg, hw, opt).step_time_s, predict(r.cfg, res.fitted, opt).step_time_s};
    if (loo) {
      std::vector<MeasuredRun> rest = runs;
      rest.erase(rest.begin() + std::ptrdiff_t(i));
      row.held_out_s = predict(r.cfg, fit_profile(rest, hw, o, nullptr), opt).step_time_s;
      res.mape_held_out += std::abs(row.err_held_out_pct()) / double(runs.size());
    }
    res.mape_before += std::abs(row.err_before_pct()) / double(runs.size());
    res.mape_after += std::abs(row.err_after_pct()) / double(runs.size());
    res.rows.push_back(row);
  }
  return res;
}

}  // namespace shardcast::planner
