// One rank's run from a run.toml, as its named steps (train_loop.h run_rank): the config and
// its overrides, the checks before any rendezvous, the engine on its process groups, the step
// loop with its log line, and what rank 0 writes after it. The engines and the step itself are
// train_loop.cpp's.
#include "trainer/train/train_loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "shared/config_io.h"
#include "shared/emitted_text.h"
#include "shared/errors.h"
#include "shared/trainer_checks.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/comm/collectives.h"
#include "trainer/comm/liveness.h"
#include "trainer/launch/dist_env.h"
#include "trainer/launch/parent_death.h"
#include "trainer/launch/run_lock.h"
#include "trainer/profile/op_profile_report.h"
#include "trainer/profile/op_recorder.h"
#include "trainer/train/engine.h"
#include "trainer/train/host_malloc.h"
#include "trainer/train/memory.h"
#include "trainer/train/metrics_log.h"
#include "trainer/train/run_path.h"
#include "trainer/validation/validation.h"

namespace shardcast::trainer {

namespace {

namespace fs = std::filesystem;

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  try {
    return std::stoi(v);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("environment variable {}='{}' is not an integer", name, v));
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Why an MFU above 100% can be printed: MFU is measured against the hardware profile's peak,
// and a profile measured on a slower machine (the shipped `cpu` is one fixed 2-core VM,
// docs/trainer.md) puts that peak below what this machine does. `peak` in FLOP/s.
std::string mfu_above_peak_note(double mfu, const std::string& dtype, const std::string& hardware, double peak) {
  return fmt::format(
      "MFU {:.0f}% is above 100%: this machine computes faster than the {} peak of hardware profile '{}' "
      "({:.3g} GFLOP/s), so that profile does not describe it (nor do the planner's predictions with it). "
      "Measure this machine while it is quiet (a busy one measures a low peak) with `shardcast calibrate "
      "--hardware-out build/local.toml` and pass `--hardware build/local.toml` (or set cluster.hardware to that "
      "file; docs/trainer.md)",
      100 * mfu, dtype, hardware, peak / 1e9);
}

// What every step of the run reads: the config as it runs and the file its errors name, the
// command line's overrides, this rank's place, and the peak MFU is measured against.
struct RankRun {
  TrainConfig cfg;
  std::string file;
  const RunOverrides* ov = nullptr;
  DistEnv env;
  std::string backend;        // resolved_backend: gloo | nccl
  std::string hardware_file;  // the loaded preset's file; "" when none loaded (no MFU)
  double peak = 0;            // FLOP/s per rank for param_dtype; 0 = no MFU/HFU
  bool rank0() const { return env.rank == 0; }
  std::string sharding_label() const {
    return ov->reference ? "reference" : to_string(cfg.parallelism.sharding_strategy);
  }
};

// The config with the command line's overrides; a string the run directory's run.toml cannot
// hold is refused now, by key, not after training (shared/emitted_text.h).
TrainConfig read_run_config(const std::string& config_path, const RunOverrides& ov, std::string* file_out) {
  TrainConfig cfg = read_train_config(config_path);
  const std::string file = cfg.source_file.empty() ? config_path : cfg.source_file;
  if (!ov.data_path.empty()) cfg.data.path = ov.data_path;
  if (!ov.metrics_dir.empty()) cfg.metrics.dir = ov.metrics_dir;
  if (!ov.hardware.empty()) {
    try {
      (void)load_hardware(ov.hardware);  // a given profile is used or refused, never skipped
    } catch (const ConfigError& e) {
      throw ConfigError(e.file(), e.key(), fmt::format("--hardware {}: {}", ov.hardware, e.detail()));
    }
    cfg.cluster.hardware = ov.hardware;
  }
  if (ov.steps) cfg.training.steps = *ov.steps;
  if (!ov.initial_load.empty()) cfg.checkpoint.initial_load_path = ov.initial_load;
  require_emittable_strings(cfg, file);
  // The run directory's run.toml may be the config itself (the GUI's Run tab writes it there)
  // only when it already holds exactly what runs: then it is left as it is (its comments and
  // mode kept); a run that differs from it (--steps, --data, another runtime) would replace it.
  std::error_code ec;
  const fs::path written = fs::path(cfg.metrics.dir) / "run.toml";
  if (!file.empty() && fs::equivalent(written, file, ec) && !run_toml_holds(written, cfg))
    throw ConfigError(file, "metrics.dir",
                      fmt::format("{} is the folder of this config, and the run (with its overrides) differs from "
                                  "it: the run writes its own run.toml there and would replace {}; give another "
                                  "metrics.dir (--metrics-dir), or write the overrides into the config",
                                  cfg.metrics.dir, file));
  *file_out = file;
  return cfg;
}

// A profile run: the same loop, warm-up + profiled steps, from step 1, nothing saved.
void prepare_profile(const RunOverrides& ov, TrainConfig* cfg, OpProfile* profile) {
  if (!ov.profile) return;
  cfg->training.steps = ov.profile->warmup + ov.profile->steps;
  cfg->checkpoint.dir.clear();
  cfg->checkpoint.resume_from.clear();
  if (!ov.profile->plan_file.empty()) {
    profile->planned = read_planned_ops(ov.profile->plan_file);
    profile->planned_source = ov.profile->plan_file;
  }
}

// The world the launcher started against the config's, and what this trainer refuses to run
// (the list `shardcast check` prints: shared/trainer_checks.h). Returns the backend.
std::string check_world(const TrainConfig& cfg, const std::string& file, const RunOverrides& ov, const DistEnv& env) {
  const int world = env.world_size;
  if (ov.reference && world != 1)
    throw UsageError("--reference runs the plain single-process path; WORLD_SIZE must be 1");
  if (ov.reference && !ov.allocator_trace.empty())
    throw UsageError("--allocator-trace records an FSDP run on a GPU; --reference runs the plain path");
  if (!ov.reference && world != cfg.world_size())
    throw ConfigError(file, "cluster",
                      fmt::format("nodes {} x gpus_per_node {} = {} ranks, but WORLD_SIZE is {} "
                                  "(launch with --nproc-per-node {} or fix [cluster])",
                                  cfg.cluster.nodes, cfg.cluster.gpus_per_node, cfg.world_size(), world,
                                  cfg.world_size()));
  const std::string backend = resolved_backend(cfg, nccl_compiled());
  if (const auto refusals = trainer_refusals(cfg, nccl_compiled()); !refusals.empty()) {
    const TrainerRefusal& r = refusals.front();
    if (r.key.empty()) throw ConfigErrors(r.detail);
    throw ConfigError(file, r.key, r.detail);
  }
  return backend;
}

// One trainer per run directory (launch/run_lock.h): rank 0 holds the locks to the end.
std::vector<RunDirLock> lock_run_dirs(const RankRun& run) {
  std::vector<RunDirLock> locks;
  if (!run.rank0()) return locks;
  const TrainConfig& cfg = run.cfg;
  locks.emplace_back(cfg.metrics.dir, run.file, run.ov->metrics_dir.empty() ? "metrics.dir" : "--metrics-dir");
  if (!cfg.checkpoint.dir.empty() &&
      fs::weakly_canonical(cfg.checkpoint.dir) != fs::weakly_canonical(cfg.metrics.dir))
    locks.emplace_back(cfg.checkpoint.dir, run.file, "checkpoint.dir");
  return locks;
}

// The hardware peak for MFU (the planner's convention: the preset's peak for param_dtype).
void load_peak(RankRun* run) {
  try {
    const HardwareSpec hw = load_hardware(run->cfg.cluster.hardware);
    run->hardware_file = hw.file;
    run->peak = hw.peak_flops(run->cfg.precision.param_dtype);
  } catch (const std::exception& e) {
    if (run->rank0()) fmt::print(stderr, "warning: no MFU/HFU: {}\n", e.what());
  }
}

// This rank's engine: the plain single-process one (--reference), or FSDP on the mesh's
// process groups after the rendezvous, with the data slice it reads and the device it runs on.
struct RankEngine {
  std::unique_ptr<Engine> engine;
  DataSlice slice;
  at::Device device = at::kCPU;
  c10::intrusive_ptr<c10d::Store> store;  // the rendezvous store (also for async checkpoints)
};

RankEngine make_rank_engine(const RankRun& run) {
  const TrainConfig& cfg = run.cfg;
  const RunOverrides& ov = *run.ov;
  const DistEnv& env = run.env;
  RankEngine e;
  if (ov.reference) {
    e.engine = make_reference_engine(cfg);
    e.slice = DataSlice{0, cfg.dp_size(), cfg.dp_size()};  // the global batch of the config
    return e;
  }
  if (env.world_size == 1) e.store = c10::make_intrusive<c10d::HashStore>();
  else e.store = make_tcp_store(env.master_addr, env.master_port, env.rank, env.world_size, cfg.comm.timeout_seconds);
  liveness::start(e.store, env.rank, env.world_size);  // heartbeats: a failure names the missing rank
  CommOptions co;
  co.backend = run.backend;
  co.timeout_seconds = cfg.comm.timeout_seconds;
  co.hostname = loopback_bind_address(env.master_addr);
  // The mesh dp_replicate x dp_shard x tp (cp and pp are refused by check_world).
  const Mesh mesh = resolve_mesh(cfg.parallelism, env.world_size, env.local_world_size);
  // NCCL: cuda:LOCAL_RANK is made current before the process groups and the first CUDA
  // allocation (not in CI: GPU builds only, one GPU per local rank).
  e.device = bind_rank_device(run.backend, env.local_rank);
  if (e.device.is_cuda()) memory::use_cuda_device(e.device.index());
  if (!ov.allocator_trace.empty()) {
    if (!e.device.is_cuda())
      throw UsageError(fmt::format("--allocator-trace {}: the CUDA caching allocator's trace needs a GPU run "
                                   "(backend {} runs on {})", ov.allocator_trace, run.backend, e.device.str()));
    // Before the first CUDA tensor: the whole sequence. 4M entries ≈ 0.6 GB of host memory
    // at most; a 1B step makes ~10^4.
    memory::start_allocator_trace(4000000);
  }
  co.device = e.device;
  ProcessGroups groups = make_mesh_groups(e.store, env.rank, mesh.dp_replicate, mesh.dp_shard, mesh.tp, co);
  e.slice = DataSlice{groups.dp_rank(), 1, groups.dp_size(), groups.tp_size()};
  e.engine = make_fsdp_engine(cfg, std::move(groups), e.device);
  return e;
}

// Rank 0's first lines: the run, the state one rank holds, and what a resume appends to.
void announce_run(const RankRun& run, const Engine& engine, const MetricsLog* jsonl, int first_step) {
  const TrainConfig& cfg = run.cfg;
  const RunOverrides& ov = *run.ov;
  const StateBytes sb = engine.state_bytes();
  const std::string layout =
      ov.reference ? std::string("reference")
      : cfg.parallelism.tp > 1
          ? fmt::format("{}, {}", to_string(cfg.parallelism.sharding_strategy),
                        mesh_label(resolve_mesh(cfg.parallelism, run.env.world_size, run.env.local_world_size)))
          : std::string(to_string(cfg.parallelism.sharding_strategy));
  fmt::print("shardcast-train: {} ranks, {} ({}), model {} ({:.2f} M params), {} steps of {} tokens; "
             "rank 0 state {:.1f} MiB (params {:.1f}, grads {:.1f}, optimizer {:.1f})\n",
             run.env.world_size, layout, ov.reference ? "no comm" : run.backend,
             cfg.model.name.empty() ? cfg.model_preset : cfg.model.name, cfg.model.total_params() / 1e6,
             cfg.training.steps, cfg.tokens_per_step(), sb.total() / 1048576.0, sb.params / 1048576.0,
             sb.grads / 1048576.0, sb.optimizer / 1048576.0);
  if (!cfg.checkpoint.initial_load_path.empty())
    fmt::print("initial weights: {} (checkpoint.initial_load_path)\n", cfg.checkpoint.initial_load_path);
  if (jsonl && !jsonl->kept().empty())
    fmt::print("metrics: kept steps {}..{} of {}/metrics.jsonl; appending from step {}\n", jsonl->kept().front().step,
               jsonl->kept().back().step, cfg.metrics.dir, first_step);
  std::fflush(stdout);
}

// One step's progress line (rank 0); an MFU above 100% is never printed without its reason
// (once per run, before the line).
void print_step_line(const RankRun& run, int s, const StepMetrics& m, bool tty, bool* mfu_note_printed) {
  const bool above_peak = m.mfu > 1.0;
  if (above_peak && !*mfu_note_printed) {
    fmt::print("{}note: {}\n", tty ? "\r\x1b[K" : "",
               mfu_above_peak_note(m.mfu, run.cfg.precision.param_dtype, run.cfg.cluster.hardware, run.peak));
    *mfu_note_printed = true;
  }
  const std::string line = fmt::format(
      "step {:>5}/{}  loss {:.4f}  lr {:.2e}  grad_norm {:.3f}  tokens/s/GPU {:.0f}  mfu {:.2f}%{}  "
      "step {:.0f} ms  mem {:.1f} MiB",
      s, run.cfg.training.steps, m.loss, m.lr, m.grad_norm, m.tokens_per_s_per_gpu, 100 * m.mfu,
      above_peak ? " (above the profile's peak: see note)" : "", 1000 * m.step_time_s, m.mem_peak_bytes / 1048576.0);
  if (tty) fmt::print("\r{}\x1b[K", line);
  else fmt::print("{}\n", line);
  std::fflush(stdout);
}

// What the step loop leaves for the report: this rank's worst phase peaks and, over its steps,
// its largest reserved and live bytes (--allocator-trace), and when the loop began (its wall
// time includes the checkpoint saves, the last one's commit too).
struct LoopOutcome {
  PhasePeaks worst;
  double max_reserved = 0, max_active = 0;  // bytes
  std::chrono::steady_clock::time_point t0;
};

// The steps from the checkpoint's first to training.steps: each trained, checked, checkpointed
// and (rank 0) reported and logged; a profile run's steps after its warm-up are recorded op by op.
LoopOutcome train_steps(const RankRun& run, TrainLoop& loop, CheckpointHook& checkpoints, OpRecorder* recorder,
                        OpProfile* profile, MetricsLog* jsonl, RunReport* report) {
  const TrainConfig& cfg = run.cfg;
  const RunOverrides& ov = *run.ov;
  LoopOutcome out;
  const bool tty = ::isatty(STDOUT_FILENO);
  const int log_freq = std::max(1, cfg.metrics.log_freq);
  // Fault injection for the launcher's tests: this rank fails after step SHARDCAST_FAULT_STEP.
  const int fault_rank = env_int("SHARDCAST_FAULT_RANK", -1);
  const int fault_step = env_int("SHARDCAST_FAULT_STEP", -1);
  out.t0 = std::chrono::steady_clock::now();
  bool mfu_note_printed = false;
  for (int s = checkpoints.first_step(); s <= cfg.training.steps; ++s) {
    if (launcher_gone())  // the parent-death signal did not come (see launch/parent_death.h)
      throw std::runtime_error(fmt::format("step {}: the launcher that started this rank is gone", s));
    const bool profiled = recorder && s > ov.profile->warmup;
    if (profiled) recorder->begin_step();
    StepMetrics m = loop.step(s);
    if (profiled) profile->steps.push_back(recorder->end_step());
    if (run.env.rank == fault_rank && s == fault_step)
      throw std::runtime_error(fmt::format("injected fault at step {} (SHARDCAST_FAULT_STEP)", s));
    const auto& pp = loop.phase_peaks();
    out.worst.forward = std::max(out.worst.forward, pp.forward);
    out.worst.backward = std::max(out.worst.backward, pp.backward);
    out.worst.optimizer = std::max(out.worst.optimizer, pp.optimizer);
    out.max_active = std::max(out.max_active, m.mem_peak_bytes);
    if (m.mem_reserved_peak_bytes) out.max_reserved = std::max(out.max_reserved, *m.mem_reserved_peak_bytes);
    if (!std::isfinite(m.loss)) throw std::runtime_error(fmt::format("step {}: loss is {} (diverged)", s, m.loss));
    checkpoints.after_step(s);
    if (!run.rank0()) continue;
    report->steps.push_back(m);
    if (jsonl) jsonl->append(m);
    if (s % log_freq == 0 || s == 1 || s == cfg.training.steps) print_step_line(run, s, m, tty, &mfu_note_printed);
  }
  return out;
}

// A profile run's result (rank 0): op_profile.json and its table.
void write_op_profile(const RankRun& run, at::Device device, OpProfile* profile) {
  const TrainConfig& cfg = run.cfg;
  const ProfileRequest& req = *run.ov->profile;
  profile->config_file = run.file;
  profile->model = cfg.model.name.empty() ? cfg.model_preset : cfg.model.name;
  profile->device = device.str();
  profile->timing = device.is_cuda() ? "CUDA events on the current stream" : "wall clock (synchronous CPU ops)";
  profile->world_size = run.env.world_size;
  profile->micro_batch = cfg.training.micro_batch;
  profile->seq_len = cfg.training.seq_len;
  profile->grad_accum = cfg.training.grad_accum;
  profile->warmup_steps = req.warmup;
  const fs::path out = req.out_dir.empty() ? fs::path(cfg.metrics.dir) : fs::path(req.out_dir);
  fs::create_directories(out);
  write_file_atomic(out / "op_profile.json", op_profile_json(*profile).dump(2) + "\n");
  fmt::print("{}wrote {}\n", format_op_profile(*profile), (out / "op_profile.json").string());
}

// run_report.json (rank 0): the medians over steady steps, the peaks, the state by the planner's
// names and the path the run took; then validation.json against the config's [prediction].
void write_run_report(const RankRun& run, const Engine& engine, const LoopOutcome& loop, at::Device device,
                      RunReport* report_io) {
  const TrainConfig& cfg = run.cfg;
  RunReport& report = *report_io;
  const fs::path run_dir = cfg.metrics.dir;
  // Summary over steady steps: the first steps (allocator warm-up) are excluded.
  const size_t skip = std::min<size_t>(report.steps.size() / 5, 5);
  std::vector<double> t, tps, mfu, hfu;
  double mem = 0;
  for (size_t i = skip; i < report.steps.size(); ++i) {
    t.push_back(report.steps[i].step_time_s);
    tps.push_back(report.steps[i].tokens_per_s_per_gpu);
    mfu.push_back(report.steps[i].mfu);
    hfu.push_back(report.steps[i].hfu);
  }
  for (const auto& s : report.steps) {
    mem = std::max(mem, s.mem_peak_bytes);
    if (s.mem_reserved_peak_bytes)
      report.mem_reserved_peak_bytes = std::max(report.mem_reserved_peak_bytes.value_or(0), *s.mem_reserved_peak_bytes);
    if (s.alloc_retries) report.alloc_retries = *s.alloc_retries;  // cumulative: the last step's
  }
  report.median_step_time_s = median(t);
  report.tokens_per_s_per_gpu = median(tps);
  report.mfu = median(mfu);
  report.hfu = median(hfu);
  report.mem_peak_bytes = mem;
  const StateBytes sb = engine.state_bytes();
  // The planner's names for the same quantities (Prediction::memory, docs/cost-model.md).
  report.mem_components = {{"sharded_parameters", double(sb.params)},
                           {"sharded_gradients", double(sb.grads)},
                           {"optimizer_states", double(sb.optimizer)},
                           {"peak_forward", double(loop.worst.forward)},
                           {"peak_backward", double(loop.worst.backward)},
                           {"peak_optimizer", double(loop.worst.optimizer)}};
  // After the measured steps: on CUDA the SDPA question allocates (run_path.h).
  report.path = describe_run_path(cfg, device, run.env.world_size, run.ov->reference ? "none" : run.backend);
  nlohmann::json j = report;
  write_file_atomic(run_dir / "run_report.json", j.dump(2) + "\n");
  if (!report.steps.empty())  // steps first_step.. ran (a run with nothing to train returned before)
    fmt::print("done: loss {:.4f} -> {:.4f} (steps {}..{}); median step {:.1f} ms, {:.0f} tokens/s/rank, peak {:.1f} "
               "MiB/rank; wrote {}\n",
               report.steps.front().loss, report.steps.back().loss, report.steps.front().step,
               report.steps.back().step, 1000 * report.median_step_time_s, report.tokens_per_s_per_gpu,
               mem / 1048576.0, (run_dir / "run_report.json").string());
  if (report.mfu > 1.0)
    fmt::print(stderr, "warning: median {} ({})\n",
               mfu_above_peak_note(report.mfu, cfg.precision.param_dtype, cfg.cluster.hardware, run.peak),
               run.hardware_file);
  finish_run_validation(cfg, report, run_dir);  // validation.json: [prediction] vs measured
}

}  // namespace

int run_rank(const std::string& config_path, const RunOverrides& ov) {
  keep_freed_host_memory();  // before any tensor: no per-step unmap/refault of big buffers
  memory::install_counting_allocator();
  RankRun run;
  run.ov = &ov;
  run.cfg = read_run_config(config_path, ov, &run.file);
  OpProfile profile;
  prepare_profile(ov, &run.cfg, &profile);
  run.env = read_dist_env();  // every variable checked before any rendezvous
  run.backend = check_world(run.cfg, run.file, ov, run.env);
  const TrainConfig& cfg = run.cfg;
  const std::vector<RunDirLock> dir_locks = lock_run_dirs(run);
  TokenFile data(cfg.data.path);
  if (run.rank0() && int64_t(data.max_token()) >= cfg.model.vocab)
    throw InputError(fmt::format("{}: token {} is outside the model vocab {}", cfg.data.path, data.max_token(),
                                 cfg.model.vocab));
  load_peak(&run);
  RankEngine rank = make_rank_engine(run);

  // Resume (checkpoint.resume_from) and periodic saves; collective, so before any rank-0-only work.
  CheckpointHook checkpoints(cfg, *rank.engine, rank.store);
  if (checkpoints.first_step() > cfg.training.steps) {
    // A finished run started again: nothing to train, and nothing it wrote is touched.
    if (run.rank0())
      fmt::print("checkpoint: already at step {} and training.steps = {}: the run is complete, nothing to train "
                 "(pass --steps N > {} or raise training.steps to train on); {} left as it is\n",
                 checkpoints.first_step() - 1, cfg.training.steps, checkpoints.first_step() - 1, cfg.metrics.dir);
    return kExitOk;
  }
  std::unique_ptr<MetricsLog> jsonl;
  if (run.rank0() && !ov.profile) jsonl = std::make_unique<MetricsLog>(cfg.metrics.dir, checkpoints.first_step());
  if (run.rank0()) announce_run(run, *rank.engine, jsonl.get(), checkpoints.first_step());

  TrainLoop loop(cfg, *rank.engine, data, rank.slice, run.peak);
  RunReport report;
  report.config_file = run.file;
  report.hardware = cfg.cluster.hardware;
  report.world_size = run.env.world_size;
  report.sharding_strategy = run.sharding_label();
  if (jsonl) report.steps = jsonl->kept();  // a resume reports the whole run
  std::unique_ptr<OpRecorder> recorder;
  if (ov.profile) recorder = std::make_unique<OpRecorder>(rank.device);
  const LoopOutcome done = train_steps(run, loop, checkpoints, recorder.get(), &profile, jsonl.get(), &report);
  checkpoints.finish();  // the last save, if asynchronous, is committed before the run ends
  if (!ov.allocator_trace.empty()) {
    const std::string path = run.rank0() ? ov.allocator_trace : fmt::format("{}.rank{}", ov.allocator_trace, run.env.rank);
    memory::write_allocator_trace(path, int64_t(done.max_reserved), int64_t(done.max_active));
    fmt::print("allocator trace: {}\n", path);
  }
  const bool tty = ::isatty(STDOUT_FILENO);
  if (run.rank0() && tty) fmt::print("\n");
  if (ov.profile) {
    if (run.rank0()) write_op_profile(run, rank.device, &profile);
    return kExitOk;
  }
  if (!run.rank0()) return kExitOk;
  fmt::print("trained steps {}..{} in {:.3f} s wall{}\n", checkpoints.first_step(), cfg.training.steps, seconds_since(done.t0),
             cfg.checkpoint.dir.empty()
                 ? std::string(" (no checkpoints)")
                 : fmt::format(", checkpoint saves included (training blocked {:.3f} s in saves, async_mode {})",
                               checkpoints.blocked_seconds(), cfg.checkpoint.async_mode));
  write_run_report(run, *rank.engine, done, rank.device, &report);
  return kExitOk;
}

}  // namespace shardcast::trainer
