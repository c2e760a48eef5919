// FSDP runtime: flat units, gather/free state machine, autograd Functions. See fsdp.h.
#include "trainer/fsdp/fsdp.h"

#include <cmath>
#include <stdexcept>

#include <ATen/core/grad_mode.h>
#include <ATen/native/Resize.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "shared/errors.h"
#include "trainer/fsdp/initial_load.h"
#include "trainer/model/fused_ops.h"
#include "trainer/model/tensor_parallel.h"
#include "trainer/profile/op_classify.h"
#include "trainer/train/optim.h"

#ifdef SHARDCAST_WITH_NCCL
#include <ATen/native/cuda/Resize.h>
#endif

namespace shardcast::trainer {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

// Storage of a gathered buffer: 0 bytes when resharded, refilled before use. Autograd's
// saved views keep pointing at the same StorageImpl, so they see the refilled data.
void resize_storage(const at::Tensor& t, size_t bytes) {
  auto* impl = t.storage().unsafeGetStorageImpl();
  if (t.is_cpu()) {
    at::native::resize_bytes_cpu(impl, bytes);
    return;
  }
#ifdef SHARDCAST_WITH_NCCL
  at::native::resize_bytes_cuda(impl, bytes);  // CI has no GPU; ran on one H200 (tests/gpu/)
#else
  TORCH_CHECK(false, "resize_storage: device ", t.device(), " not supported in this build");
#endif
}

FsdpModel* self_of(AutogradContext* ctx) {
  return reinterpret_cast<FsdpModel*>(ctx->saved_data["self"].toInt());
}

// forward: the unit's gathered flat parameters (no copy); backward: post-backward
// (reduce the unsharded gradient into the unit's gradient shard). Returns no gradient to
// `shard` itself: FsdpModel writes FlatUnit::grad directly.
struct GatherFn : torch::autograd::Function<GatherFn> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor shard, int64_t self, int64_t unit) {
    ctx->saved_data["self"] = self;
    ctx->saved_data["unit"] = unit;
    return reinterpret_cast<FsdpModel*>(self)->wait_full(static_cast<int>(unit));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    self_of(ctx)->post_backward(static_cast<int>(ctx->saved_data["unit"].toInt()), grads[0]);
    return {at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// A checkpointed block: forward computes without keeping activations (only the input x is
// saved); backward re-gathers (done by the pre-backward hook), recomputes with grad on and
// back-propagates through the recomputation, then runs the unit's post-backward.
struct CheckpointFn : torch::autograd::Function<CheckpointFn> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor x, at::Tensor shard, int64_t self,
                            int64_t unit) {
    ctx->saved_data["self"] = self;
    ctx->saved_data["unit"] = unit;
    ctx->save_for_backward({x});
    auto* f = reinterpret_cast<FsdpModel*>(self);
    const int u = static_cast<int>(unit);
    at::Tensor full = f->wait_full(u);
    return block_forward(f->spec(), f->rope(), x, f->unit_weights(u, full), f->seq_parallel());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* f = self_of(ctx);
    const int u = static_cast<int>(ctx->saved_data["unit"].toInt());
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    at::Tensor full = f->wait_full(u).detach().requires_grad_(true);
    at::Tensor y;
    {
      at::AutoGradMode enable(true);
      y = block_forward(f->spec(), f->rope(), x, f->unit_weights(u, full), f->seq_parallel());
    }
    auto g = torch::autograd::grad({y}, {x, full}, {grads[0]});
    f->post_backward(u, g[1]);
    return {g[0], at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::ScalarType parse_dtype(const std::string& name) {
  if (name == "fp32") return at::kFloat;
  if (name == "bf16") return at::kBFloat16;
  if (name == "fp16") return at::kHalf;
  throw ConfigError("", "precision", "unknown dtype '" + name + "' (allowed: fp32 | bf16 | fp16)");
}

// Power-of-two pre-divide factor for low-precision reductions, as FSDP1's default hook
// (DefaultState._get_gradient_predivide_factor, see fsdp.h): the largest f = 2^k with world % f == 0 and world / f > f
// (doubling while both hold), so neither the pre-divided addends nor the sum overflow or
// lose the small values.
static double predivide_factor(int world) {
  int f = 1;
  while (world % f == 0 && world / f > f) f *= 2;
  return double(f);
}

FsdpModel::FsdpModel(const ModelSpec& m, const FsdpOptions& opts, ProcessGroups groups)
    : spec_(m), opts_(opts), groups_(std::move(groups)), reduce_scatter_stream_(opts.device) {
  TORCH_CHECK(opts_.max_inflight_all_gathers >= 1, "max_inflight_all_gathers must be >= 1");
  TORCH_CHECK(opts_.max_inflight_reductions >= 0, "max_inflight_reductions must be >= 0");
  TORCH_CHECK(groups_.world->device() == opts_.device, "FsdpModel on ", opts_.device,
              " but the process groups' compute device is ", groups_.world->device());
  if (!groups_.tp) groups_.tp = make_self_group(opts_.device);
  const int tp = groups_.tp->size();
  if (tp > 1) {
    TORCH_CHECK(m.n_heads % tp == 0 && m.n_kv_heads % tp == 0 && m.ffn_dim % tp == 0 && m.vocab % tp == 0,
                "tensor parallel ", tp, " does not divide n_heads, n_kv_heads, ffn_dim and vocab");
    TORCH_CHECK(opts_.initial_load_path.empty(), "initial weights from safetensors are not loaded under tensor parallel");
    seq_parallel_ = make_seq_parallel(groups_.tp);
  }
  const int S = groups_.shard->size();
  const int r = groups_.shard->rank();
  auto infos = unit_param_infos(m, tp, groups_.tp->rank());
  const int n = static_cast<int>(infos.size());
  for (int i = 0; i < n; ++i) {
    FlatUnit u;
    u.index = i;
    u.params = infos[i];
    for (const auto& p : u.params) {
      if (tp > 1 && p.tp_dim < 0) u.tp_replicated.emplace_back(u.numel, p.numel);
      u.split_sizes.push_back(p.numel);
      u.numel += p.numel;
    }
    u.padded_numel = (u.numel + S - 1) / S * S;
    u.shard_numel = u.padded_numel / S;
    if (u.padded_numel > u.numel) u.split_sizes.push_back(u.padded_numel - u.numel);
    const bool sharded = S > 1;
    const bool resharding = opts_.sharding_strategy == ShardingStrategy::full_shard ||
                            opts_.sharding_strategy == ShardingStrategy::hybrid_shard;
    // The last unit is needed again right at the start of backward, and a tied embedding is
    // used by the head too: neither is freed after forward (torchtitan does the same).
    const bool keep = i == n - 1 || (i == 0 && m.tied_embeddings);
    u.reshard_after_forward = sharded && resharding && !keep;
    u.checkpoint = i >= 1 && i <= m.n_layers &&
                   opts_.activation_checkpointing.mode != AcMode::none &&
                   (opts_.activation_checkpointing.mode == AcMode::full ||
                    opts_.activation_checkpointing.block_checkpointed(i - 1));
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(opts_.device);
    if (!opts_.initial_load_path.empty()) {
      u.shard = at::zeros({u.shard_numel}, f32).requires_grad_(true);  // filled below
    } else {
      // Sharding-independent init: build the unit's full flat vector, keep my chunk.
      std::vector<at::Tensor> flat;
      for (const auto& p : u.params) flat.push_back(init_param(p, opts_.seed).reshape({-1}));
      if (u.padded_numel > u.numel) flat.push_back(at::zeros({u.padded_numel - u.numel}, at::kFloat));
      u.shard = at::cat(flat).chunk(S)[r].to(opts_.device).clone().requires_grad_(true);
    }
    // u.grad stays undefined: the step's first reduction allocates it (ensure_grad).
    u.exp_avg = at::zeros({u.shard_numel}, f32);
    u.exp_avg_sq = at::zeros({u.shard_numel}, f32);
    units_.push_back(std::move(u));
  }
  // Every shard is allocated first, so the load's only extra memory is one unit's buffer.
  if (!opts_.initial_load_path.empty()) load_initial_weights(opts_.initial_load_path, spec_, units_, groups_);
}

void FsdpModel::issue_gather(int i) {
  FlatUnit& u = units_[i];
  if (u.issued) return;
  u.issued = true;
  {
    RECORD_USER_SCOPE(op_scope::fsdp_cast);  // the op profile's `copy`; the all-gather is its own scope
    if (groups_.shard->size() == 1) {  // replicated: the "gathered" tensor is the shard itself
      u.full = opts_.param_dtype == at::kFloat ? u.shard.detach() : u.shard.detach().to(opts_.param_dtype);
      return;
    }
    u.send = u.shard.detach().to(opts_.param_dtype).contiguous();
  }
  at::Tensor target;
  const size_t bytes = size_t(u.padded_numel) * at::elementSize(opts_.param_dtype);
  if (u.full.defined()) {
    // Refill the storage autograd still references; write through variable_data() so the
    // version counter autograd checks is not bumped.
    TORCH_CHECK(u.full.storage().nbytes() == 0, "unit ", i, ": refill of a live buffer");
    resize_storage(u.full, bytes);
    target = u.full.variable_data();
  } else {
    u.full = at::empty({u.padded_numel}, at::TensorOptions().dtype(opts_.param_dtype).device(opts_.device));
    target = u.full;
  }
  u.work = groups_.shard->all_gather(target, u.send);
  int issued = 0;
  for (const auto& v : units_) issued += v.issued ? 1 : 0;
  peak_gathered_units_ = std::max(peak_gathered_units_, issued);
}

at::Tensor FsdpModel::wait_full(int i) {
  issue_gather(i);
  FlatUnit& u = units_[i];
  u.work.wait();
  u.send = at::Tensor();
  return u.full;
}

std::vector<at::Tensor> FsdpModel::unit_weights(int i, const at::Tensor& full) const {
  RECORD_USER_SCOPE(op_scope::fsdp_unit_views);  // backward: the flat gradient assembled from them
  const FlatUnit& u = units_[i];
  auto parts = full.split_with_sizes(u.split_sizes);
  std::vector<at::Tensor> w;
  for (size_t k = 0; k < u.params.size(); ++k) w.push_back(parts[k].view(u.params[k].shape));
  return w;
}

void FsdpModel::reshard(int i) {
  FlatUnit& u = units_[i];
  u.work.wait();  // never free a buffer a collective still writes
  u.send = at::Tensor();
  if (groups_.shard->size() > 1 && u.full.defined()) resize_storage(u.full, 0);
  u.issued = false;
}

void FsdpModel::reshard_all() {
  for (size_t i = 0; i < units_.size(); ++i) {
    reshard(static_cast<int>(i));
    units_[i].full = at::Tensor();
  }
}

void FsdpModel::post_forward(int i) {
  if (units_[i].reshard_after_forward) reshard(i);
}

void FsdpModel::pre_backward(int i) {
  wait_full(i);
  // Backward prefetch in reverse unit order, bounded by the in-flight limit.
  for (int k = 1; k < opts_.max_inflight_all_gathers && i - k >= 0; ++k) issue_gather(i - k);
}

FsdpModel::~FsdpModel() {
  // CPU: a Gloo Work owns its tensors, so reductions still in flight (only when unwinding
  // from an error) are dropped unwaited; waiting could block on a dead peer until the timeout.
  pending_.clear();
  try {
    wait_for_reductions();
  } catch (...) {  // a failed stream wait while unwinding: the process is going down anyway
  }
}

void FsdpModel::wait_for_reductions() {
  while (!pending_.empty()) finish_oldest_reduction();
  if (!inflight_) return;
  inflight_->done.block_current();
  inflight_.reset();
}

void FsdpModel::finish_oldest_reduction() {
  PendingReduction r = std::move(pending_.front());
  pending_.pop_front();
  r.work.wait();
  if (r.replicate_after) groups_.replicate->all_reduce(r.out);
  RECORD_USER_SCOPE(op_scope::fsdp_grad_add);
  add_reduced(units_[r.unit], r.out, r.scale);
}

void FsdpModel::ensure_grad(FlatUnit& u) {
  if (u.grad.defined()) return;
  u.grad = at::empty({u.shard_numel}, u.shard.options().dtype(at::kFloat));
  u.grad_stale = true;  // garbage that reads as zero until add_reduced writes it
}

void FsdpModel::add_reduced(FlatUnit& u, const at::Tensor& reduced, double scale) {
  const at::Tensor x = reduced.to(at::kFloat);
  ensure_grad(u);  // CPU overlap: allocated as the step's first reduction of the unit lands
  if (!u.grad_stale) {
    u.grad.add_(x, scale);
    return;
  }
  at::mul_out(u.grad, x, at::scalar_tensor(scale, x.options().device(at::kCPU)));
  u.grad_stale = false;
}

void FsdpModel::zero_stale_grads() {
  for (auto& u : units_) {
    ensure_grad(u);      // released and no reduction since (none in a training step)
    if (u.grad_stale) {  // allocated, never written
      u.grad.zero_();
      u.grad_stale = false;
    }
  }
}

void FsdpModel::settle_grads() {
  zero_stale_grads();
  apply_pending_clip();
}

void FsdpModel::post_backward(int i, at::Tensor grad_full) {
  FlatUnit& u = units_[i];
  // (padded_numel) in param_dtype, on the compute stream.
  at::Tensor g = grad_full.defined()
                     ? grad_full
                     : at::zeros({u.padded_numel}, u.shard.options().dtype(opts_.param_dtype));
  if (!sync_ && !opts_.sync_every_micro_step) {  // no communication on non-final micro-steps
    RECORD_USER_SCOPE(op_scope::fsdp_grad_add);
    if (u.acc.defined()) u.acc.add_(g);
    else u.acc = g.to(g.options().dtype(at::kFloat), /*non_blocking=*/false, /*copy=*/true);
  } else {
    at::Tensor src = g;  // (padded_numel): this micro-step's gradient, or the fp32 sum
    if (u.acc.defined()) {
      RECORD_USER_SCOPE(op_scope::fsdp_grad_add);
      src = u.acc.add_(g);
      u.acc = at::Tensor();
    }
    reduce_replicated_over_tp(u, src);
    // Averaged over the data-parallel ranks (= world without tp; a tp group shares its batch).
    const int dp = groups_.dp_size();
    const double world = double(dp);
    const bool low_precision = opts_.reduce_dtype != at::kFloat;
    const double pre = low_precision ? predivide_factor(dp) : 1.0;
    // No copy when src already has reduce_dtype: autograd hands this Function a gradient
    // buffer nothing else reads afterwards (the split/recompute backward made it), so it is
    // pre-divided and (no_shard) all-reduced in place. Sum over ranks of
    // per-rank mean gradients -> mean over the global batch: scaled by pre / world.
    const bool overlap = opts_.device.is_cpu() && opts_.max_inflight_reductions > 0;
    if (overlap) {
      // Issue now, wait later (oldest first): Gloo's threads reduce while backward goes on.
      PendingReduction r;
      r.unit = i;
      r.src = src;
      {
        RECORD_USER_SCOPE(op_scope::fsdp_cast);
        r.red = src.to(opts_.reduce_dtype).contiguous();
        if (pre != 1.0) r.red.div_(pre);
      }
      r.scale = pre / world;
      if (groups_.shard->size() == 1) {
        r.out = r.red;  // the reduce-scatter of a group of one is the identity
      } else {
        r.out = at::empty({u.shard_numel}, r.red.options());
        r.work = groups_.shard->reduce_scatter_async(r.out, r.red);
      }
      if (groups_.replicate->size() > 1) {
        if (r.work.pending()) r.replicate_after = true;  // hybrid_shard: after the reduce-scatter
        else r.work = groups_.replicate->all_reduce_async(r.out);
      }
      pending_.push_back(std::move(r));
      while (int(pending_.size()) > opts_.max_inflight_reductions) finish_oldest_reduction();
    } else {
      // At most one reduction in flight: the previous unit's must be done before this one's
      // buffers are allocated (FSDP2 bounds reduce-scatter memory the same way).
      wait_for_reductions();
      // The gradient shard is allocated here, on the compute stream, not inside the reduce
      // stream's work: the caching allocator then never hands its block to that stream's next
      // allocation while the compute stream still reads it (it is freed by zero_grad).
      ensure_grad(u);
      auto r = std::make_unique<InflightReduction>();
      r->done = reduce_scatter_stream_.run([&] {
        at::Tensor red;
        {
          RECORD_USER_SCOPE(op_scope::fsdp_cast);
          red = src.to(opts_.reduce_dtype).contiguous();
          if (pre != 1.0) red.div_(pre);
        }
        at::Tensor out = at::empty({u.shard_numel}, red.options());
        groups_.shard->reduce_scatter(out, red);
        if (groups_.replicate->size() > 1) groups_.replicate->all_reduce(out);
        RECORD_USER_SCOPE(op_scope::fsdp_grad_add);
        add_reduced(u, out, pre / world);
        r->keep = {src, red, out};
      });
      // CPU: the reduction is complete; drop the buffers now.
      if (!opts_.device.is_cpu()) inflight_ = std::move(r);
    }
  }
  // Reshard after backward (every strategy that gathers).
  reshard(i);
  u.full = at::Tensor();
}

void FsdpModel::reduce_replicated_over_tp(const FlatUnit& u, at::Tensor& g) {
  if (u.tp_replicated.empty()) return;
  if (!g.is_contiguous()) g = g.contiguous();
  std::vector<at::Tensor> parts;
  for (const auto& [off, n] : u.tp_replicated) parts.push_back(g.narrow(0, off, n));
  at::Tensor buf = at::cat(parts);  // one all-reduce per unit (the norms: d_model elements each)
  groups_.tp->all_reduce(buf);
  int64_t at = 0;
  for (auto& p : parts) {
    p.copy_(buf.narrow(0, at, p.numel()));
    at += p.numel();
  }
}

at::Tensor FsdpModel::forward(const at::Tensor& tokens) {
  const int T = static_cast<int>(tokens.size(1));
  if (T > rope_len_) {
    rope_ = make_rope(spec_, T);
    rope_.cos = rope_.cos.to(opts_.device);
    rope_.sin = rope_.sin.to(opts_.device);
    rope_len_ = T;
  }
  const int n = static_cast<int>(units_.size());
  const int64_t self = reinterpret_cast<int64_t>(this);
  at::Tensor x, tied_embed;
  for (int i = 0; i < n; ++i) {
    FlatUnit& u = units_[i];
    // Forward prefetch: this unit and the next ones, up to the in-flight limit.
    for (int k = 0; k < opts_.max_inflight_all_gathers && i + k < n; ++k) issue_gather(i + k);
    at::Tensor y;
    if (u.checkpoint) {
      y = CheckpointFn::apply(x, u.shard, self, int64_t(i));
    } else {
      at::Tensor full = GatherFn::apply(u.shard, self, int64_t(i));
      auto w = unit_weights(i, full);
      const SeqParallel* sp = seq_parallel();
      if (i == 0) {
        // tp: vocab-parallel rows, partial sums reduce-scattered to sequence shards (B,T/tp,D).
        y = sp ? sp->scatter(vocab_parallel_embedding(tokens.to(opts_.device), w[0], vocab_offset()))
               : embedding_forward(tokens.to(opts_.device), w[0]);
        tied_embed = w[0];
      } else if (i < n - 1) {
        y = block_forward(spec_, rope_, x, w, sp);
      } else {
        const at::Tensor& head = spec_.tied_embeddings ? tied_embed : w[1];
        // tp: the norm on the sequence shard, the whole sequence into the vocab-parallel head.
        y = sp ? at::linear(sp->gather(fused_rms_norm(x, w[0], spec_.norm_eps)), head) : head_forward(spec_, x, w[0], head);
      }
    }
    post_forward(i);
    if (y.requires_grad()) y.register_hook([this, i](const at::Tensor&) { pre_backward(i); });
    x = y;
  }
  if (!at::GradMode::is_enabled()) reshard_all();  // no backward will free them
  return x;
}

int64_t FsdpModel::accumulator_bytes() const {
  int64_t b = 0;
  for (const auto& u : units_)
    if (u.acc.defined()) b += u.acc.nbytes();
  return b;
}

void FsdpModel::zero_grad() {
  wait_for_reductions();
  RECORD_USER_SCOPE(op_scope::zero_grad);
  pending_clip_ = 1.0;  // the gradient it would have scaled is gone
  for (auto& u : units_) {
    // Released, as torch's zero_grad(set_to_none=True): no pass over the buffer, and no
    // gradient memory until the next step's first reduction allocates it (ensure_grad).
    u.grad = at::Tensor();
    u.grad_stale = false;
    u.acc = at::Tensor();
  }
}

void FsdpModel::apply_pending_clip() {
  if (pending_clip_ == 1.0) return;
  for (auto& u : units_)
    if (u.grad.defined()) u.grad.mul_(pending_clip_);
  pending_clip_ = 1.0;
}

double FsdpModel::clip_grad_norm(double max_norm) {
  wait_for_reductions();
  settle_grads();  // a second clip measures the gradient the first one left
  // Sum of squares over my shards (padding gradients are zero), summed over the shard
  // group; replicas hold identical shards after the replicate all-reduce.
  at::Tensor sq;
  {
    RECORD_USER_SCOPE(op_scope::clip_grad_norm);  // the op profile's `optimizer`, its all-reduce apart
    sq = at::zeros({1}, at::TensorOptions().dtype(at::kDouble).device(opts_.device));
    if (!units_.empty() && fused_optimizer_applies(units_.front().grad)) {
      std::vector<at::Tensor> grads;
      for (const auto& u : units_) grads.push_back(u.grad);
      sq += square_sum_fused(grads);
    } else {
      for (const auto& u : units_) sq += square_sum_fp64(u.grad);
    }
    // tp: every tp rank holds the replicated elements; count them 1/tp per rank (tp is a
    // small power of two in practice, the division exact), the tp all-reduce below adds them up.
    const int tp = tp_size();
    if (tp > 1) {
      const int64_t r = groups_.shard->rank();
      for (const auto& u : units_) {
        const int64_t s0 = r * u.shard_numel, s1 = s0 + u.shard_numel;  // my elements of the flat unit
        for (const auto& [off, cnt] : u.tp_replicated) {
          const int64_t a = std::max(off, s0), b = std::min(off + cnt, s1);
          if (a < b) sq -= square_sum_fp64(u.grad.narrow(0, a - s0, b - a)) * (1.0 - 1.0 / tp);
        }
      }
    }
  }
  groups_.shard->all_reduce(sq);
  if (tp_size() > 1) groups_.tp->all_reduce(sq);
  RECORD_USER_SCOPE(op_scope::clip_grad_norm);
  const double norm = std::sqrt(sq.item<double>());
  if (max_norm > 0) {
    const double coef = max_norm / (norm + 1e-6);
    if (coef < 1.0) {
      pending_clip_ = coef;
      // Only the fused AdamW takes the scale in its pass (as a divisor 1/coef: coef > 0); every
      // other path, and an infinite norm's coef of 0, clips here as before.
      if (coef <= 0 || units_.empty() || !fused_optimizer_applies(units_.front().shard)) apply_pending_clip();
    }
  }
  return norm;
}

void FsdpModel::optimizer_step(const OptimizerConfig& o, double lr) {
  wait_for_reductions();
  zero_stale_grads();
  reshard_all();  // any gathered copy is stale after the update
  ++opt_step_;
  at::NoGradGuard no_grad;
  RECORD_USER_SCOPE(op_scope::adamw);
  if (!units_.empty() && fused_optimizer_applies(units_.front().shard)) {
    std::vector<at::Tensor> p, g, m, v;
    for (auto& u : units_) {
      p.push_back(u.shard.detach());
      g.push_back(u.grad);
      m.push_back(u.exp_avg);
      v.push_back(u.exp_avg_sq);
    }
    adamw_update_fused(p, g, m, v, opt_step_, o, lr, /*grad_divisor=*/1.0 / pending_clip_);
    pending_clip_ = 1.0;
    return;
  }
  apply_pending_clip();
  for (auto& u : units_) {
    at::Tensor p = u.shard.detach();
    adamw_update(p, u.grad, u.exp_avg, u.exp_avg_sq, opt_step_, o, lr);
  }
}

std::vector<std::pair<std::string, at::Tensor>> FsdpModel::gather_named(bool grads) {
  wait_for_reductions();
  reshard_all();
  if (grads) settle_grads();  // the gradient as clip_grad_norm left it
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (auto& u : units_) {
    at::Tensor src = grads ? u.grad : u.shard.detach();
    at::Tensor full = at::empty({u.padded_numel}, src.options());
    groups_.shard->all_gather(full, src.contiguous()).wait();
    auto parts = full.split_with_sizes(u.split_sizes);
    for (size_t k = 0; k < u.params.size(); ++k) {
      const ParamInfo& info = u.params[k];
      at::Tensor p = parts[k].view(info.shape);
      if (info.tp_dim >= 0) {  // the tp ranks' pieces, concatenated along the split dimension
        const int tp = tp_size();
        at::Tensor all = at::empty({tp * info.numel}, p.options());
        groups_.tp->all_gather(all, p.contiguous().view({-1})).wait();
        std::vector<at::Tensor> pieces;
        for (const auto& c : all.chunk(tp)) pieces.push_back(c.view(info.shape));
        p = at::cat(pieces, info.tp_dim);
      }
      out.emplace_back(info.name, p.is_cpu() ? p.clone() : p.to(at::kCPU));
    }
  }
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> FsdpModel::full_parameters() { return gather_named(false); }
std::vector<std::pair<std::string, at::Tensor>> FsdpModel::full_gradients() { return gather_named(true); }

StateBytes FsdpModel::state_bytes() const {
  StateBytes b;
  for (const auto& u : units_) {
    b.params += u.shard.nbytes();
    b.grads += u.shard_numel * int64_t(sizeof(float));  // while alive (first reduction to zero_grad)
    b.optimizer += u.exp_avg.nbytes() + u.exp_avg_sq.nbytes();
  }
  return b;
}

int64_t FsdpModel::gathered_bytes() const {
  if (groups_.shard->size() == 1) return 0;  // replicated: no separate gathered copy
  int64_t b = 0;
  for (const auto& u : units_)
    if (u.full.defined()) b += static_cast<int64_t>(u.full.storage().nbytes());
  return b;
}

}  // namespace shardcast::trainer
