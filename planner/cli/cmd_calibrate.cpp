// `shardcast calibrate`: measure this machine or fit efficiency parameters to measured runs.
//
//   shardcast calibrate --hardware-out FILE [--base cpu] [--name local] [--trainer PATH] [--quick]
//       runs `shardcast-train microbench --json` (a subprocess: the planner never links LibTorch;
//       started by posix_spawn with an argument vector, no shell) and writes a hardware profile
//       with the measured numbers.
//   shardcast calibrate --runs RUN_DIR... --hardware H --out NEW.toml [--fit-params k,...] [--prior w]
//       fits [efficiency] keys of H to the trainer runs' step times; before/after per run.
//   shardcast calibrate --published FILE.csv --hardware H --out NEW.toml [--fit-params k,...]
//       the same on a published-runs CSV (tokens/s/GPU).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "planner/evidence/calibrate.h"
#include "planner/cli/commands.h"
#include "planner/cli/config_flags.h"
#include "planner/evidence/fit.h"
#include "planner/evidence/published_csv.h"
#include "planner/evidence/run_validation.h"
#include "planner/evidence/validate.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::cli {

namespace {

namespace fs = std::filesystem;

struct CalibrateArgs {
  std::string hardware_out, base = "cpu", name = "local", trainer;
  bool quick = false;
  std::vector<std::string> fit_dirs;
  std::string published, hardware, out;
  std::vector<std::string> params;
  double prior = 0;
};

std::string find_trainer(const std::string& flag) {
  if (!flag.empty()) return flag;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path p = self.parent_path() / "shardcast-train";
    if (fs::exists(p)) return p.string();
  }
  throw UsageError("calibrate: shardcast-train not found next to shardcast; pass --trainer PATH");
}

// Runs argv[0] with `argv` (no shell: nothing in a path is parsed as a command) and returns its
// stdout. UsageError naming --trainer when it cannot be started (exit 2); InputError when it
// exits non-zero or is killed (exit 1).
std::string run_capture(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw InputError(std::string("calibrate: pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on 1
  std::vector<char*> args;
  for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw UsageError(fmt::format("calibrate: --trainer {}: cannot run it: {}", argv[0], std::strerror(rc)));
  }
  std::string out;
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = ::read(fds[0], buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf.data(), size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw InputError(fmt::format("calibrate: {} {} was killed by signal {}", argv[0], argv[1], WTERMSIG(status)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw InputError(fmt::format("calibrate: {} {} failed (exit {})", argv[0], argv[1], WEXITSTATUS(status)));
  return out;
}

void hardware_out(const CalibrateArgs& a) {
  const std::string exe = find_trainer(a.trainer);
  std::vector<std::string> argv{exe, "microbench", "--json"};
  if (a.quick) argv.push_back("--quick");
  fmt::print("running {}{} ...\n", exe, a.quick ? " microbench --json --quick" : " microbench --json");
  std::fflush(stdout);
  const std::string text = run_capture(argv);
  const planner::MicrobenchData mb = planner::parse_microbench(text, "shardcast-train microbench --json");
  std::vector<std::string> notes;
  const HardwareSpec hw = planner::profile_from_microbench(mb, load_hardware(a.base), a.name, &notes);
  for (const auto& n : notes) fmt::print("  {}\n", n);
  const std::string toml = planner::hardware_to_toml(hw);
  parse_hardware_toml(toml, a.hardware_out);  // what we write must read back
  write_file_atomic(a.hardware_out, toml);
  fmt::print("wrote {}\n", a.hardware_out);
}

// One fitted value for the table: keys in seconds (`*_s`) in ms, the others as fractions or
// counts, 4 significant digits; a value that is zero to 1e-12 (a fit at its lower bound,
// e.g. 1.4e-31) prints as 0. The profile written keeps the exact values.
std::string param_text(const std::string& key, double v) {
  const bool seconds = key.size() > 2 && key.compare(key.size() - 2, 2, "_s") == 0;
  if (std::fabs(v) < 1e-12) v = 0;
  return seconds ? fmt::format("{:.4g} ms", v * 1e3) : fmt::format("{:.4g}", v);
}

void print_values(const std::map<std::string, double>& before, const std::map<std::string, double>& after) {
  fmt::print("  {:<28} {:>14} {:>14}\n", "parameter", "before", "after");
  for (const auto& [k, v] : before)
    fmt::print("  {:<28} {:>14} {:>14}\n", k, param_text(k, v), param_text(k, after.at(k)));
}

void fit_runs(const CalibrateArgs& a) {
  const HardwareSpec hw = load_hardware(a.hardware);
  std::vector<planner::MeasuredRun> runs;
  for (const auto& d : a.fit_dirs) {
    const planner::RunDir r = planner::read_run_dir(d);
    fs::path name = fs::path(d).filename();
    if (name.empty()) name = fs::path(d).parent_path().filename();  // "dir/" spelling
    runs.push_back({name.string(), r.cfg, r.report.median_step_time_s});
  }
  planner::CalibrateOptions o;
  if (!a.params.empty()) o.params = a.params;
  o.prior_weight = a.prior;
  const planner::CalibrationResult res = planner::calibrate_to_runs(runs, hw, o);
  fmt::print("fitted {} parameters of {} to {} runs ({} iterations)\n", o.params.size(), hw.name, runs.size(),
             res.iterations);
  print_values(res.before, res.after);
  // "held out": predicted by a fit made without that run (leave-one-out), the error a new run sees.
  const bool loo = res.mape_held_out >= 0;
  fmt::print("\n  {:<34} {:>10} {:>10} {:>8} {:>10} {:>8}{}\n", "run (step time)", "measured", "before", "err%",
             "after", "err%", loo ? fmt::format(" {:>10} {:>8}", "held out", "err%") : "");
  for (const auto& r : res.rows)
    fmt::print("  {:<34} {:>8.1f}ms {:>8.1f}ms {:>+8.1f} {:>8.1f}ms {:>+8.1f}{}\n", r.name, r.measured_s * 1e3,
               r.before_s * 1e3, r.err_before_pct(), r.after_s * 1e3, r.err_after_pct(),
               loo ? fmt::format(" {:>8.1f}ms {:>+8.1f}", r.held_out_s * 1e3, r.err_held_out_pct()) : "");
  fmt::print("  MAPE before {:.1f}%, after {:.1f}%", res.mape_before, res.mape_after);
  if (loo) fmt::print(", held out {:.1f}% (each run predicted by a fit without it)", res.mape_held_out);
  else
    fmt::print(" (no held-out column: leave-one-out needs more than {} runs)",
               o.params.size() * size_t(std::max(1, o.min_runs_per_param)));
  fmt::print("\n");
  HardwareSpec out = res.fitted;
  out.source = hw.source + "; [efficiency] fitted by `shardcast calibrate --runs` on " + std::to_string(runs.size()) +
               " runs";
  write_file_atomic(a.out, planner::hardware_to_toml(out));
  fmt::print("wrote {}\n", a.out);
}

void fit_published(const CalibrateArgs& a) {
  std::vector<planner::PublishedRow> rows = planner::read_published_csv(a.published);
  planner::HardwareSet hardware;
  hardware.emplace(a.hardware, load_hardware(a.hardware));
  const auto cases = planner::resolve_cases(rows, hardware);
  size_t n = 0;
  for (const auto& c : cases)
    if (c.hardware == a.hardware && rows[c.row].tokens_per_s_per_gpu) ++n;
  planner::FitSpec spec;
  spec.hardware = {a.hardware};
  spec.params = a.params.empty() ? std::vector<std::string>{"matmul_eff", "attention_eff", "intra_node_bw_eff",
                                                            "inter_node_bw_eff", "step_overhead_s"}
                                 : a.params;
  spec.prior_weight = a.prior;
  if (n < 2 * spec.params.size())
    throw UsageError(fmt::format("calibrate: {} published runs with tokens/s on {} are too few to fit {} parameters; "
                                 "need at least {}",
                                 n, a.hardware, spec.params.size(), 2 * spec.params.size()));
  const HardwareSpec before_hw = hardware.at(a.hardware);
  const auto before = planner::validate_cases(rows, cases, hardware);
  const planner::FitResult fit = planner::fit_efficiency(rows, cases, hardware, spec);
  const auto after = planner::validate_cases(rows, cases, hardware);
  std::map<std::string, double> b, f;
  for (const auto& k : spec.params) {
    b[k] = before_hw.efficiency_param(k);
    f[k] = fit.values.at(k);
  }
  fmt::print("fitted {} parameters of {} to {} published runs\n", spec.params.size(), a.hardware, fit.n_runs);
  print_values(b, f);
  fmt::print("\n  {:<48} {:>9} {:>8} {:>8}\n", "row (tokens/s/GPU)", "measured", "before%", "after%");
  for (size_t i = 0; i < before.rows.size(); ++i) {
    const auto& r0 = before.rows[i];
    const auto& r1 = after.rows[i];
    if (!r0.skip_reason.empty() || !r0.has_tps || r0.hardware != a.hardware) continue;
    fmt::print("  {:<48} {:>9.0f} {:>+8.1f} {:>+8.1f}\n", r0.row_id.substr(0, 48), r0.measured_tps, r0.err_tps_pct,
               r1.err_tps_pct);
  }
  HardwareSpec out = hardware.at(a.hardware);
  out.source += "; [efficiency] fitted by `shardcast calibrate --published " + a.published + "`";
  write_file_atomic(a.out, planner::hardware_to_toml(out));
  fmt::print("wrote {}\n", a.out);
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "Measure this machine (--hardware-out) or fit efficiency parameters to "
                                              "measured runs (--runs RUN_DIR... | --published CSV)");
  auto* ho = cmd->add_option("--hardware-out", a->hardware_out, "run the trainer's micro-benchmarks, write a profile");
  cmd->add_option("--base", a->base, "preset whose other keys the measured profile keeps (default cpu)");
  cmd->add_option("--name", a->name, "name of the measured profile (default local)");
  cmd->add_option("--trainer", a->trainer, "shardcast-train binary (default: next to shardcast)");
  cmd->add_flag("--quick", a->quick, "fewer shapes and sizes");
  auto* fit = cmd->add_option("--runs", a->fit_dirs, "trainer run directories to fit to");
  auto* pub = cmd->add_option("--published", a->published, "published-runs CSV to fit to");
  add_hardware_flag(cmd, a->hardware, "hardware preset (name or .toml) whose [efficiency] is fitted");
  cmd->add_option("--out", a->out, "where to write the fitted profile");
  cmd->add_option("--fit-params", a->params,
                  "efficiency keys to fit (--runs default: attention_eff, unit_overhead_s, step_overhead_s, "
                  "overlap_compute_slowdown, the keys micro-benchmarks do not measure; --published default: see docs/validation.md)")->delimiter(',');
  cmd->add_option("--prior", a->prior, "weight w of the pull towards the starting values: w·log(value/start) per key");
  ho->excludes(fit)->excludes(pub);
  fit->excludes(pub);
  cmd->callback([a] {
    if (!a->hardware_out.empty()) return hardware_out(*a);
    if (a->fit_dirs.empty() && a->published.empty())
      throw UsageError("calibrate: give --hardware-out FILE, --runs RUN_DIR..., or --published FILE.csv");
    if (a->hardware.empty() || a->out.empty()) throw UsageError("calibrate: --runs/--published need --hardware and --out");
    for (size_t i = 0; i < a->params.size(); ++i)
      if (std::find(a->params.begin(), a->params.begin() + std::ptrdiff_t(i), a->params[i]) !=
          a->params.begin() + std::ptrdiff_t(i))
        throw UsageError("calibrate: --fit-params names " + a->params[i] + " twice");
    if (!a->fit_dirs.empty()) return fit_runs(*a);
    return fit_published(*a);
  });
}

}  // namespace shardcast::cli
