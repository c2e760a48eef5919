// Engines, the step loop and one rank's run. See engine.h and train_loop.h.
#include "trainer/train/engine.h"
#include "trainer/train/train_loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "shared/config_io.h"
#include "shared/emitted_text.h"
#include "shared/errors.h"
#include "shared/trainer_checks.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/comm/liveness.h"
#include "trainer/fsdp/initial_load.h"
#include "trainer/launch/dist_env.h"
#include "trainer/launch/parent_death.h"
#include "trainer/launch/run_lock.h"
#include "trainer/model/chunked_loss.h"
#include "trainer/model/llama.h"
#include "trainer/model/tensor_parallel.h"
#include "trainer/profile/op_recorder.h"
#include "trainer/train/host_malloc.h"
#include "trainer/train/memory.h"
#include "trainer/train/metrics_log.h"
#include "trainer/train/optim.h"
#include "trainer/train/run_path.h"
#include "trainer/validation/validation.h"

namespace shardcast::trainer {

namespace {

// ---------------------------------------------------------------- engines

FsdpOptions with_device(FsdpOptions o, at::Device d) {
  o.device = d;
  return o;
}

class ReferenceEngine final : public Engine {
 public:
  explicit ReferenceEngine(const TrainConfig& cfg) : model_(cfg.model, cfg.training.seed) {
    if (!cfg.checkpoint.initial_load_path.empty())
      load_initial_weights_unsharded(cfg.checkpoint.initial_load_path, cfg.model, model_.named_parameters());
    for (auto& [name, p] : model_.named_parameters()) {
      params_.push_back(p);
      exp_avg_.push_back(at::zeros_like(p).detach());
      exp_avg_sq_.push_back(at::zeros_like(p).detach());
    }
  }
  at::Tensor forward_loss(const at::Tensor& tokens, const at::Tensor& targets, bool) override {
    return chunked_lm_loss(model_.forward(tokens), targets);  // the FSDP engine's loss, its oracle apart
  }
  void zero_grad() override {
    for (auto& p : params_)
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
  double clip_grad_norm(double max_norm) override {
    at::Tensor sq = at::zeros({1}, at::kDouble);
    for (auto& p : params_)
      if (p.grad().defined()) sq += square_sum_fp64(p.grad());
    const double norm = std::sqrt(sq.item<double>());
    if (max_norm > 0 && max_norm / (norm + 1e-6) < 1.0)
      for (auto& p : params_)
        if (p.grad().defined()) p.mutable_grad().mul_(max_norm / (norm + 1e-6));
    return norm;
  }
  void optimizer_step(const OptimizerConfig& o, double lr) override {
    ++step_;
    at::NoGradGuard g;
    for (size_t i = 0; i < params_.size(); ++i) {
      at::Tensor grad = params_[i].grad().defined() ? params_[i].grad() : at::zeros_like(params_[i]);
      at::Tensor p = params_[i].detach();
      adamw_update(p, grad, exp_avg_[i], exp_avg_sq_[i], step_, o, lr);
    }
  }
  std::vector<std::pair<std::string, at::Tensor>> full_parameters() override {
    auto out = model_.named_parameters();
    for (auto& [n, t] : out) t = t.detach().clone();
    return out;
  }
  std::vector<std::pair<std::string, at::Tensor>> full_gradients() override {
    auto out = model_.named_parameters();
    for (auto& [n, t] : out) t = t.grad().defined() ? t.grad().clone() : at::zeros_like(t).detach();
    return out;
  }
  StateBytes state_bytes() const override {
    StateBytes b;
    for (size_t i = 0; i < params_.size(); ++i) {
      b.params += params_[i].nbytes();
      b.grads += params_[i].nbytes();
      b.optimizer += exp_avg_[i].nbytes() + exp_avg_sq_[i].nbytes();
    }
    return b;
  }
  void reduce_sum(std::vector<double>&) override {}
  void reduce_max(std::vector<double>&) override {}
  int world_size() const override { return 1; }
  int rank() const override { return 0; }

 private:
  ReferenceModel model_;
  std::vector<at::Tensor> params_, exp_avg_, exp_avg_sq_;
  int step_ = 0;
};

class FsdpEngine final : public Engine {
 public:
  FsdpEngine(const TrainConfig& cfg, ProcessGroups groups, const FsdpOptions& opts)
      : model_(cfg.model, opts, std::move(groups)) {}
  at::Tensor forward_loss(const at::Tensor& tokens, const at::Tensor& targets, bool sync) override {
    model_.set_sync(sync);
    const at::Tensor t = targets.to(model_.units().front().shard.device());
    // tp: the logits are this rank's vocab columns; loss parallel (model/tensor_parallel.h).
    if (model_.tp_size() > 1) return vocab_parallel_loss(model_.forward(tokens), t, model_.vocab_offset(), model_.groups().tp);
    // Chunked over tokens: no fp32 copy of all logits (model/chunked_loss.h; its oracle, lm_loss,
    // is checked against it in tests/trainer/chunked_loss_test.cpp).
    return chunked_lm_loss(model_.forward(tokens), t);
  }
  void zero_grad() override { model_.zero_grad(); }
  double clip_grad_norm(double max_norm) override { return model_.clip_grad_norm(max_norm); }
  void optimizer_step(const OptimizerConfig& o, double lr) override { model_.optimizer_step(o, lr); }
  std::vector<std::pair<std::string, at::Tensor>> full_parameters() override { return model_.full_parameters(); }
  std::vector<std::pair<std::string, at::Tensor>> full_gradients() override { return model_.full_gradients(); }
  StateBytes state_bytes() const override { return model_.state_bytes(); }
  void reduce_sum(std::vector<double>& v) override { reduce(v, ReduceOp::sum); }
  void reduce_max(std::vector<double>& v) override { reduce(v, ReduceOp::max); }
  int world_size() const override { return model_.groups().world->size(); }
  int rank() const override { return model_.groups().world->rank(); }
  FsdpModel& model() { return model_; }

 private:
  // Staged through the world group's compute device (NCCL takes CUDA tensors only).
  void reduce(std::vector<double>& v, ReduceOp op) { all_reduce_host(*model_.groups().world, v, op); }
  FsdpModel model_;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

FsdpOptions fsdp_options(const TrainConfig& cfg) {
  FsdpOptions o;
  o.sharding_strategy = cfg.parallelism.sharding_strategy;
  o.max_inflight_all_gathers = cfg.parallelism.max_inflight_all_gathers;
  o.sync_every_micro_step =
      cfg.parallelism.sync_every_micro_step.value_or(ParallelismConfig::kSyncEveryMicroStepDefault);
  o.param_dtype = parse_dtype(cfg.precision.param_dtype);
  o.reduce_dtype = parse_dtype(cfg.precision.reduce_dtype);
  o.activation_checkpointing = cfg.activation_checkpointing;
  o.seed = cfg.training.seed;
  o.initial_load_path = cfg.checkpoint.initial_load_path;
  return o;
}

std::unique_ptr<Engine> make_reference_engine(const TrainConfig& cfg) {
  return std::make_unique<ReferenceEngine>(cfg);
}
std::unique_ptr<Engine> make_fsdp_engine(const TrainConfig& cfg, ProcessGroups groups, at::Device device) {
  return std::make_unique<FsdpEngine>(cfg, std::move(groups), with_device(fsdp_options(cfg), device));
}
std::unique_ptr<Engine> make_fsdp_engine(const TrainConfig& cfg, ProcessGroups groups, const FsdpOptions& opts) {
  return std::make_unique<FsdpEngine>(cfg, std::move(groups), opts);
}
FsdpModel* fsdp_model_of(Engine& e) {
  auto* f = dynamic_cast<FsdpEngine*>(&e);
  return f ? &f->model() : nullptr;
}

// ---------------------------------------------------------------- the step

TrainLoop::TrainLoop(const TrainConfig& cfg, Engine& engine, const TokenFile& data, DataSlice slice,
                     double peak_flops)
    : cfg_(cfg), engine_(engine), data_(data), slice_(slice), peak_flops_(peak_flops) {
  batch_ = at::empty({int64_t(slice.n_ranks) * cfg.training.micro_batch, cfg.training.seq_len + 1},
                     at::kLong);
}

StepMetrics TrainLoop::step(int step, const Hooks& hooks) {
  const auto& tr = cfg_.training;
  const int b = tr.micro_batch, T = tr.seq_len, k = tr.grad_accum, W = slice_.world;
  const int64_t t0 = now_ns();
  const double lr = lr_at(step, tr.steps, cfg_.optimizer, cfg_.lr_schedule);
  peaks_ = {};
  const bool cuda_stats = memory::cuda_stats_active();
  int64_t reserved = 0;  // bytes: CUDA caching allocator, max over this step's phases
  engine_.zero_grad();  // a no-op after a previous step (it released them); first step, resume
  double loss_sum = 0;
  for (int m = 0; m < k; ++m) {
    int64_t* out = batch_.data_ptr<int64_t>();
    for (int r = slice_.first_rank; r < slice_.first_rank + slice_.n_ranks; ++r) {
      read_sequences(data_, tr.seed, step, int64_t(m * W + r) * b, b, T, out);
      out += int64_t(b) * (T + 1);
    }
    at::Tensor tokens = batch_.narrow(1, 0, T);
    at::Tensor targets = batch_.narrow(1, 1, T);
    memory::reset_peak();
    at::Tensor loss = engine_.forward_loss(tokens, targets, m == k - 1);
    peaks_.forward = std::max(peaks_.forward, memory::peak_bytes());
    if (cuda_stats) reserved = std::max(reserved, memory::reserved_peak_bytes());
    memory::reset_peak();
    (loss / double(k)).backward();
    peaks_.backward = std::max(peaks_.backward, memory::peak_bytes());
    if (cuda_stats) reserved = std::max(reserved, memory::reserved_peak_bytes());
    loss_sum += loss.item<double>();
  }
  if (hooks.after_backward) hooks.after_backward(step);
  memory::reset_peak();
  const double norm = engine_.clip_grad_norm(tr.max_grad_norm);
  engine_.optimizer_step(cfg_.optimizer, lr);
  peaks_.optimizer = memory::peak_bytes();
  if (cuda_stats) reserved = std::max(reserved, memory::reserved_peak_bytes());
  // The gradients are spent: released until the next step's first reduction (FSDP2's
  // optimizer.zero_grad(set_to_none=True) after the step; fsdp/fsdp.h FsdpModel::zero_grad).
  engine_.zero_grad();
  const double step_s = double(now_ns() - t0) * 1e-9;

  std::vector<double> sums{loss_sum / k};
  engine_.reduce_sum(sums);
  const double mem = double(std::max({peaks_.forward, peaks_.backward, peaks_.optimizer}));
  std::vector<double> maxes{step_s, mem};
  if (cuda_stats) maxes.insert(maxes.end(), {double(reserved), double(memory::alloc_retries())});
  engine_.reduce_max(maxes);

  StepMetrics s;
  s.step = step;
  s.loss = sums[0] / engine_.world_size();
  s.lr = lr;
  s.grad_norm = norm;
  s.step_time_s = maxes[0];
  s.mem_peak_bytes = maxes[1];
  if (cuda_stats) {
    s.mem_reserved_peak_bytes = maxes[2];
    s.alloc_retries = maxes[3];
  }
  // Processed by this rank: a tp group's ranks share their sequences.
  const double tokens = double(slice_.n_ranks) * b * T * k / slice_.sharers;
  s.tokens_per_s_per_gpu = tokens / s.step_time_s;
  if (peak_flops_ > 0) {
    const auto& ac = cfg_.activation_checkpointing;
    s.mfu = cfg_.model.flops_per_token(T) * s.tokens_per_s_per_gpu / peak_flops_;
    s.hfu = cfg_.model.hardware_flops_per_token(T, ac.recompute_fraction(cfg_.model.n_layers)) * s.tokens_per_s_per_gpu /
            peak_flops_;
  }
  return s;
}

// ---------------------------------------------------------------- one rank

namespace {

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

}  // namespace

int run_rank(const std::string& config_path, const RunOverrides& ov) {
  keep_freed_host_memory();  // before any tensor: no per-step unmap/refault of big buffers
  memory::install_counting_allocator();
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
  // The run directory's run.toml is written from cfg at the end: a string it cannot hold is
  // refused now, by key, not after training (shared/emitted_text.h); and it must not be the
  // config itself (a metrics.dir of the config's own folder would replace the user's file, its
  // comments and mode, with the overrides baked in).
  require_emittable_strings(cfg, file);
  {
    // The run directory's run.toml may be the config itself (the GUI's Run tab writes it there)
    // only when it already holds exactly what runs: then it is left as it is (its comments and
    // mode kept); a run that differs from it (--steps, --data, another runtime) would replace it.
    std::error_code ec;
    const std::filesystem::path written = std::filesystem::path(cfg.metrics.dir) / "run.toml";
    if (!file.empty() && std::filesystem::equivalent(written, file, ec) && !run_toml_holds(written, cfg))
      throw ConfigError(file, "metrics.dir",
                        fmt::format("{} is the folder of this config, and the run (with its overrides) differs from "
                                    "it: the run writes its own run.toml there and would replace {}; give another "
                                    "metrics.dir (--metrics-dir), or write the overrides into the config",
                                    cfg.metrics.dir, file));
  }
  OpProfile profile;
  if (ov.profile) {
    // The same loop, warm-up + profiled steps, from step 1, nothing saved.
    cfg.training.steps = ov.profile->warmup + ov.profile->steps;
    cfg.checkpoint.dir.clear();
    cfg.checkpoint.resume_from.clear();
    if (!ov.profile->plan_file.empty()) {
      profile.planned = read_planned_ops(ov.profile->plan_file);
      profile.planned_source = ov.profile->plan_file;
    }
  }

  const DistEnv env = read_dist_env();  // every variable checked before any rendezvous
  const int world = env.world_size;
  const int rank = env.rank;
  const int local_world = env.local_world_size;
  const std::string& master_addr = env.master_addr;
  const int master_port = env.master_port;
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
  // The same list `shardcast check` prints (shared/trainer_checks.h).
  if (const auto refusals = trainer_refusals(cfg, nccl_compiled()); !refusals.empty()) {
    const TrainerRefusal& r = refusals.front();
    if (r.key.empty()) throw ConfigErrors(r.detail);
    throw ConfigError(file, r.key, r.detail);
  }
  // One trainer per run directory (launch/run_lock.h): rank 0 holds the locks to the end.
  std::vector<RunDirLock> dir_locks;
  if (rank == 0) {
    dir_locks.emplace_back(cfg.metrics.dir, file, ov.metrics_dir.empty() ? "metrics.dir" : "--metrics-dir");
    if (!cfg.checkpoint.dir.empty() && std::filesystem::weakly_canonical(cfg.checkpoint.dir) !=
                                           std::filesystem::weakly_canonical(cfg.metrics.dir))
      dir_locks.emplace_back(cfg.checkpoint.dir, file, "checkpoint.dir");
  }
  TokenFile data(cfg.data.path);
  if (rank == 0 && int64_t(data.max_token()) >= cfg.model.vocab)
    throw InputError(fmt::format("{}: token {} is outside the model vocab {}", cfg.data.path,
                                 data.max_token(), cfg.model.vocab));

  // Hardware peak for MFU (the planner's convention: the preset's peak for param_dtype).
  double peak = 0;
  std::string hardware_name = cfg.cluster.hardware, hardware_file;
  try {
    const HardwareSpec hw = load_hardware(cfg.cluster.hardware);
    hardware_file = hw.file;
    peak = hw.peak_flops(cfg.precision.param_dtype);
  } catch (const std::exception& e) {
    if (rank == 0) fmt::print(stderr, "warning: no MFU/HFU: {}\n", e.what());
  }

  std::unique_ptr<Engine> engine;
  DataSlice slice;
  at::Device device = at::kCPU;
  c10::intrusive_ptr<c10d::Store> store;  // the rendezvous store (also for async checkpoints)
  if (ov.reference) {
    engine = make_reference_engine(cfg);
    slice = DataSlice{0, cfg.dp_size(), cfg.dp_size()};  // the global batch of the config
  } else {
    if (world == 1) store = c10::make_intrusive<c10d::HashStore>();
    else store = make_tcp_store(master_addr, master_port, rank, world, cfg.comm.timeout_seconds);
    liveness::start(store, rank, world);  // heartbeats: a failure names the missing rank
    CommOptions co;
    co.backend = backend;
    co.timeout_seconds = cfg.comm.timeout_seconds;
    co.hostname = loopback_bind_address(master_addr);
    // The mesh dp_replicate x dp_shard x tp (cp and pp are refused above).
    const Mesh mesh = resolve_mesh(cfg.parallelism, world, local_world);
    // NCCL: cuda:LOCAL_RANK is made current before the process groups and the first CUDA
    // allocation (not in CI: GPU builds only, one GPU per local rank).
    device = bind_rank_device(backend, env.local_rank);
    if (device.is_cuda()) memory::use_cuda_device(device.index());
    if (!ov.allocator_trace.empty()) {
      if (!device.is_cuda())
        throw UsageError(fmt::format("--allocator-trace {}: the CUDA caching allocator's trace needs a GPU run "
                                     "(backend {} runs on {})", ov.allocator_trace, backend, device.str()));
      // Before the first CUDA tensor: the whole sequence. 4M entries ≈ 0.6 GB of host memory
      // at most; a 1B step makes ~10^4.
      memory::start_allocator_trace(4000000);
    }
    co.device = device;
    ProcessGroups groups = make_mesh_groups(store, rank, mesh.dp_replicate, mesh.dp_shard, mesh.tp, co);
    slice = DataSlice{groups.dp_rank(), 1, groups.dp_size(), groups.tp_size()};
    engine = make_fsdp_engine(cfg, std::move(groups), device);
  }

  namespace fs = std::filesystem;
  const fs::path run_dir = cfg.metrics.dir;
  // Resume (checkpoint.resume_from) and periodic saves; collective, so before any rank-0-only work.
  CheckpointHook checkpoints(cfg, *engine, store);
  if (checkpoints.first_step() > cfg.training.steps) {
    // A finished run started again: nothing to train, and nothing it wrote is touched.
    if (rank == 0)
      fmt::print("checkpoint: already at step {} and training.steps = {}: the run is complete, nothing to train "
                 "(pass --steps N > {} or raise training.steps to train on); {} left as it is\n",
                 checkpoints.first_step() - 1, cfg.training.steps, checkpoints.first_step() - 1, run_dir.string());
    return kExitOk;
  }
  std::unique_ptr<MetricsLog> jsonl;
  if (rank == 0) {
    if (!ov.profile) jsonl = std::make_unique<MetricsLog>(run_dir, checkpoints.first_step());
    const StateBytes sb = engine->state_bytes();
    fmt::print("shardcast-train: {} ranks, {} ({}), model {} ({:.2f} M params), {} steps of {} tokens; "
               "rank 0 state {:.1f} MiB (params {:.1f}, grads {:.1f}, optimizer {:.1f})\n",
               world,
               ov.reference ? std::string("reference")
               : cfg.parallelism.tp > 1
                   ? fmt::format("{}, {}", to_string(cfg.parallelism.sharding_strategy),
                                 mesh_label(resolve_mesh(cfg.parallelism, world, local_world)))
                   : std::string(to_string(cfg.parallelism.sharding_strategy)),
               ov.reference ? "no comm" : backend, cfg.model.name.empty() ? cfg.model_preset : cfg.model.name,
               cfg.model.total_params() / 1e6, cfg.training.steps, cfg.tokens_per_step(),
               sb.total() / 1048576.0, sb.params / 1048576.0, sb.grads / 1048576.0, sb.optimizer / 1048576.0);
    if (!cfg.checkpoint.initial_load_path.empty())
      fmt::print("initial weights: {} (checkpoint.initial_load_path)\n", cfg.checkpoint.initial_load_path);
    if (jsonl && !jsonl->kept().empty())
      fmt::print("metrics: kept steps {}..{} of {}/metrics.jsonl; appending from step {}\n",
                 jsonl->kept().front().step, jsonl->kept().back().step, run_dir.string(), checkpoints.first_step());
    std::fflush(stdout);
  }

  TrainLoop loop(cfg, *engine, data, slice, peak);
  RunReport report;
  report.config_file = file;
  report.hardware = hardware_name;
  report.world_size = world;
  report.sharding_strategy = ov.reference ? "reference" : to_string(cfg.parallelism.sharding_strategy);
  if (jsonl) report.steps = jsonl->kept();  // a resume reports the whole run
  std::unique_ptr<OpRecorder> recorder;
  if (ov.profile) recorder = std::make_unique<OpRecorder>(device);
  PhasePeaks worst;
  double max_reserved = 0, max_active = 0;  // this rank's, over its steps (--allocator-trace)  // bytes
  const bool tty = ::isatty(STDOUT_FILENO);
  const int log_freq = std::max(1, cfg.metrics.log_freq);
  // Fault injection for the launcher's tests: this rank fails after step SHARDCAST_FAULT_STEP.
  const int fault_rank = env_int("SHARDCAST_FAULT_RANK", -1);
  const int fault_step = env_int("SHARDCAST_FAULT_STEP", -1);
  const int64_t loop_t0 = now_ns();  // the loop's wall time includes checkpoint saves
  bool mfu_note_printed = false;
  for (int s = checkpoints.first_step(); s <= cfg.training.steps; ++s) {
    if (launcher_gone())  // the parent-death signal did not come (see launch/parent_death.h)
      throw std::runtime_error(fmt::format("step {}: the launcher that started this rank is gone", s));
    const bool profiled = recorder && s > ov.profile->warmup;
    if (profiled) recorder->begin_step();
    StepMetrics m = loop.step(s);
    if (profiled) profile.steps.push_back(recorder->end_step());
    if (rank == fault_rank && s == fault_step)
      throw std::runtime_error(fmt::format("injected fault at step {} (SHARDCAST_FAULT_STEP)", s));
    const auto& pp = loop.phase_peaks();
    worst.forward = std::max(worst.forward, pp.forward);
    worst.backward = std::max(worst.backward, pp.backward);
    worst.optimizer = std::max(worst.optimizer, pp.optimizer);
    max_active = std::max(max_active, m.mem_peak_bytes);
    if (m.mem_reserved_peak_bytes) max_reserved = std::max(max_reserved, *m.mem_reserved_peak_bytes);
    if (!std::isfinite(m.loss))
      throw std::runtime_error(fmt::format("step {}: loss is {} (diverged)", s, m.loss));
    checkpoints.after_step(s);
    if (rank != 0) continue;
    report.steps.push_back(m);
    if (jsonl) jsonl->append(m);
    if (s % log_freq == 0 || s == 1 || s == cfg.training.steps) {
      // An MFU above 100% is never printed without its reason (once per run, before the line).
      const bool above_peak = m.mfu > 1.0;
      if (above_peak && !mfu_note_printed) {
        fmt::print("{}note: {}\n", tty ? "\r\x1b[K" : "",
                   mfu_above_peak_note(m.mfu, cfg.precision.param_dtype, hardware_name, peak));
        mfu_note_printed = true;
      }
      const std::string line = fmt::format(
          "step {:>5}/{}  loss {:.4f}  lr {:.2e}  grad_norm {:.3f}  tokens/s/GPU {:.0f}  mfu {:.2f}%{}  "
          "step {:.0f} ms  mem {:.1f} MiB",
          s, cfg.training.steps, m.loss, m.lr, m.grad_norm, m.tokens_per_s_per_gpu, 100 * m.mfu,
          above_peak ? " (above the profile's peak: see note)" : "", 1000 * m.step_time_s, m.mem_peak_bytes / 1048576.0);
      if (tty) fmt::print("\r{}\x1b[K", line);
      else fmt::print("{}\n", line);
      std::fflush(stdout);
    }
  }
  checkpoints.finish();  // the last save, if asynchronous, is committed before the run ends
  if (!ov.allocator_trace.empty()) {
    const std::string path = rank == 0 ? ov.allocator_trace : fmt::format("{}.rank{}", ov.allocator_trace, rank);
    memory::write_allocator_trace(path, int64_t(max_reserved), int64_t(max_active));
    fmt::print("allocator trace: {}\n", path);
  }
  if (ov.profile) {
    if (rank == 0 && tty) fmt::print("\n");
    if (rank == 0) {
      profile.config_file = file;
      profile.model = cfg.model.name.empty() ? cfg.model_preset : cfg.model.name;
      profile.device = device.str();
      profile.timing = device.is_cuda() ? "CUDA events on the current stream" : "wall clock (synchronous CPU ops)";
      profile.world_size = world;
      profile.micro_batch = cfg.training.micro_batch;
      profile.seq_len = cfg.training.seq_len;
      profile.grad_accum = cfg.training.grad_accum;
      profile.warmup_steps = ov.profile->warmup;
      const fs::path out = ov.profile->out_dir.empty() ? run_dir : fs::path(ov.profile->out_dir);
      fs::create_directories(out);
      write_file_atomic(out / "op_profile.json", op_profile_json(profile).dump(2) + "\n");
      fmt::print("{}wrote {}\n", format_op_profile(profile), (out / "op_profile.json").string());
    }
    return kExitOk;
  }
  if (rank == 0 && tty) fmt::print("\n");
  if (rank == 0)
    fmt::print("trained steps {}..{} in {:.3f} s wall{}\n", checkpoints.first_step(), cfg.training.steps,
               double(now_ns() - loop_t0) * 1e-9,
               cfg.checkpoint.dir.empty() ? std::string(" (no checkpoints)")
                                          : fmt::format(", checkpoint saves included (training blocked {:.3f} s in "
                                                        "saves, async_mode {})",
                                                        checkpoints.blocked_seconds(), cfg.checkpoint.async_mode));

  if (rank == 0) {
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
    const StateBytes sb = engine->state_bytes();
    // The planner's names for the same quantities (Prediction::memory, docs/cost-model.md).
    report.mem_components = {{"sharded_parameters", double(sb.params)},
                             {"sharded_gradients", double(sb.grads)},
                             {"optimizer_states", double(sb.optimizer)},
                             {"peak_forward", double(worst.forward)},
                             {"peak_backward", double(worst.backward)},
                             {"peak_optimizer", double(worst.optimizer)}};
    // After the measured steps: on CUDA the SDPA question allocates (run_path.h).
    report.path = describe_run_path(cfg, device, world, ov.reference ? "none" : backend);
    nlohmann::json j = report;
    write_file_atomic(run_dir / "run_report.json", j.dump(2) + "\n");
    if (!report.steps.empty())  // steps first_step.. ran (a run with nothing to train returned above)
      fmt::print("done: loss {:.4f} -> {:.4f} (steps {}..{}); median step {:.1f} ms, {:.0f} tokens/s/rank, peak {:.1f} "
               "MiB/rank; wrote {}\n",
               report.steps.front().loss, report.steps.back().loss, report.steps.front().step,
               report.steps.back().step, 1000 * report.median_step_time_s, report.tokens_per_s_per_gpu,
               mem / 1048576.0, (run_dir / "run_report.json").string());
    if (report.mfu > 1.0)
      fmt::print(stderr, "warning: median {} ({})\n",
                 mfu_above_peak_note(report.mfu, cfg.precision.param_dtype, hardware_name, peak), hardware_file);
    finish_run_validation(cfg, report, run_dir);  // validation.json: [prediction] vs measured
  }
  return kExitOk;
}

}  // namespace shardcast::trainer
