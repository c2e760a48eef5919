// Engines and the step loop. See engine.h; one rank's run is run_rank.cpp.
#include "trainer/train/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "trainer/fsdp/initial_load.h"
#include "trainer/model/chunked_loss.h"
#include "trainer/model/llama.h"
#include "trainer/model/tensor_parallel.h"
#include "trainer/train/memory.h"
#include "trainer/train/optim.h"

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

}  // namespace shardcast::trainer
