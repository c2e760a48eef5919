// AdamW update, the learning-rate schedule and clipping's square sum, shared by the
// reference path and FSDP.
//
// What it is: one elementwise AdamW step on a tensor (a whole parameter for the reference,
// a flat fp32 shard for FSDP — elementwise, so the two agree exactly), and lr(step) with
// linear warmup then cosine/linear/constant decay to lr·min_lr_factor. Host tensors take the
// one-pass loops of adamw_kernel.h; device tensors (and the tests' oracle) take the LibTorch
// ops of adamw_update_reference / square_sum_fp64_reference, or, for CUDA tensors under
// LibTorch >= 2.0, the multi-tensor kernels torch.optim.AdamW(fused=True) and
// clip_grad_norm_(foreach=True) run (adamw_update_fused, square_sum_fused): one pass over
// every unit's state where the reference makes nine; the reference stays their oracle
// (tests/gpu/gpu_smoke.cpp fused-adamw).
// What it is not: parameter grouping (weight decay applies to every parameter, as torchtitan
// does) or state storage (callers own exp_avg/exp_avg_sq). Pure functions, thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include <ATen/ATen.h>
#include <torch/version.h>

#include "shared/train_config.h"
#include "trainer/train/adamw_kernel.h"

namespace shardcast::trainer {

// The reference: LibTorch ops, one pass each. In place on param/exp_avg/exp_avg_sq (all
// fp32, same shape). `step` counts from 1.
inline void adamw_update_reference(at::Tensor& param, const at::Tensor& grad, at::Tensor& exp_avg,
                                   at::Tensor& exp_avg_sq, int step, const OptimizerConfig& o, double lr) {
  exp_avg.mul_(o.beta1).add_(grad, 1.0 - o.beta1);
  exp_avg_sq.mul_(o.beta2).addcmul_(grad, grad, 1.0 - o.beta2);
  const double bc1 = 1.0 - std::pow(o.beta1, step);
  const double bc2 = 1.0 - std::pow(o.beta2, step);
  param.mul_(1.0 - lr * o.weight_decay);  // decoupled weight decay
  auto denom = (exp_avg_sq / bc2).sqrt_().add_(o.eps);
  param.addcdiv_(exp_avg, denom, -lr / bc1);
}

// The reference's scalars in fp32, as LibTorch converts them for fp32 tensors.
inline AdamwScalars adamw_scalars(int step, const OptimizerConfig& o, double lr) {
  AdamwScalars s;
  s.beta1 = float(o.beta1);
  s.one_minus_beta1 = float(1.0 - o.beta1);
  s.beta2 = float(o.beta2);
  s.one_minus_beta2 = float(1.0 - o.beta2);
  s.decay = float(1.0 - lr * o.weight_decay);
  s.inv_bias_correction2 = 1.0f / float(1.0 - std::pow(o.beta2, step));
  s.eps = float(o.eps);
  s.step_size = float(-lr / (1.0 - std::pow(o.beta1, step)));
  return s;
}

// AdamW step: one pass over host memory (adamw_kernel.h), the reference on a device.
inline void adamw_update(at::Tensor& param, const at::Tensor& grad, at::Tensor& exp_avg,
                         at::Tensor& exp_avg_sq, int step, const OptimizerConfig& o, double lr) {
  if (!param.is_cpu()) return adamw_update_reference(param, grad, exp_avg, exp_avg_sq, step, o, lr);
  TORCH_CHECK(param.scalar_type() == at::kFloat && grad.scalar_type() == at::kFloat &&
                  exp_avg.scalar_type() == at::kFloat && exp_avg_sq.scalar_type() == at::kFloat,
              "adamw_update: fp32 parameter, gradient and state expected");
  TORCH_CHECK(param.is_contiguous() && exp_avg.is_contiguous() && exp_avg_sq.is_contiguous() &&
                  grad.numel() == param.numel() && exp_avg.numel() == param.numel() &&
                  exp_avg_sq.numel() == param.numel(),
              "adamw_update: contiguous tensors of one size expected");
  const at::Tensor g = grad.contiguous();
  adamw_step_fp32(param.data_ptr<float>(), g.data_ptr<float>(), exp_avg.data_ptr<float>(),
                  exp_avg_sq.data_ptr<float>(), param.numel(), adamw_scalars(step, o, lr));
}

#if TORCH_VERSION_MAJOR >= 2
// The fused path exists (at::_fused_adamw_, at::_foreach_norm) and takes these tensors.
inline bool fused_optimizer_applies(const at::Tensor& t) { return t.is_cuda(); }

// One AdamW step over many fp32 CUDA tensors in one multi-tensor kernel (at::_fused_adamw_,
// torch/optim/adamw.py _fused_adamw): the reference's update, in fp32 and with
// √v / √(1 − β₂ᵗ) where the reference takes √(v / (1 − β₂ᵗ)) — a few ulp apart per step.
// `step` counts from 1; every list has one tensor per unit, each list's tensors the same shapes.
// `grad_divisor` != 1: the kernel divides each gradient by it before the update (its grad_scale,
// torch.amp's unscale, an fp32 device scalar) and stores the divided gradient back
// (aten/src/ATen/native/cuda/fused_adam_utils.cuh adam_math, `grad_to_store`): gradient clipping's
// scale in the update's own pass, where a separate mul_ reads and writes every gradient once more.
inline void adamw_update_fused(std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                               std::vector<at::Tensor>& exp_avgs, std::vector<at::Tensor>& exp_avg_sqs, int step,
                               const OptimizerConfig& o, double lr, double grad_divisor = 1.0) {
  if (params.empty()) return;
  // The kernel reads the step count from a device scalar per tensor (fp32, as torch.optim keeps it).
  std::vector<at::Tensor> steps;
  steps.reserve(params.size());
  const at::Tensor one = at::full({}, double(step), params.front().options().dtype(at::kFloat));
  for (size_t i = 0; i < params.size(); ++i) steps.push_back(one);
  TORCH_CHECK(grad_divisor > 0 && std::isfinite(grad_divisor), "adamw_update_fused: grad_divisor ", grad_divisor,
              " must be positive and finite");
  std::optional<at::Tensor> grad_scale;
  if (grad_divisor != 1.0) grad_scale = at::full({}, grad_divisor, params.front().options().dtype(at::kFloat));
  at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, lr, o.beta1, o.beta2,
                    o.weight_decay, o.eps, /*amsgrad=*/false, /*maximize=*/false, grad_scale);
}

// Σ over tensors of ‖x‖² as a 0-dim fp64 tensor: one multi-tensor pass (at::_foreach_norm,
// fp32 accumulation per tensor, as clip_grad_norm_(foreach=True)), the per-tensor norms
// squared and summed in fp64. Relative difference from square_sum_fp64_reference: fp32
// accumulation, ~1e-6.
inline at::Tensor square_sum_fused(const std::vector<at::Tensor>& xs) {
  const std::vector<at::Tensor> norms = at::_foreach_norm(xs, 2);
  return at::stack(norms).to(at::kDouble).square().sum();
}
#else
// LibTorch 1.x has neither kernel: the reference ops run on every device.
inline bool fused_optimizer_applies(const at::Tensor&) { return false; }
inline void adamw_update_fused(std::vector<at::Tensor>&, const std::vector<at::Tensor>&, std::vector<at::Tensor>&,
                               std::vector<at::Tensor>&, int, const OptimizerConfig&, double, double = 1.0) {
  throw std::logic_error("adamw_update_fused: needs LibTorch >= 2.0 (fused_optimizer_applies is false)");
}
inline at::Tensor square_sum_fused(const std::vector<at::Tensor>&) {
  throw std::logic_error("square_sum_fused: needs LibTorch >= 2.0 (fused_optimizer_applies is false)");
}
#endif

// Σ x² in fp64 of an fp32 tensor, for gradient clipping: the squares of fp32 values are exact
// in fp64, so squaring the fp64 copy in place gives the values of .pow(2) without a second
// fp64 tensor (same sum, bit for bit).
inline at::Tensor square_sum_fp64_reference(const at::Tensor& x) {
  at::Tensor d = x.to(at::kDouble);
  if (x.scalar_type() == at::kDouble) d = d.clone();  // never square the caller's tensor
  d.mul_(d);
  return d.sum();
}

// Σ x² in fp64 as a 0-dim double tensor on x's device: one pass over an fp32 host tensor
// (adamw_kernel.h; the same value up to the order of the fp64 additions), the reference
// otherwise.
inline at::Tensor square_sum_fp64(const at::Tensor& x) {
  if (!x.is_cpu() || x.scalar_type() != at::kFloat) return square_sum_fp64_reference(x);
  const at::Tensor c = x.contiguous();
  return at::scalar_tensor(square_sum_fp64(c.data_ptr<float>(), c.numel()), at::kDouble);
}

// Learning rate for optimizer step `step` (1-based) of `total_steps`.
inline double lr_at(int step, int total_steps, const OptimizerConfig& o, const LrScheduleConfig& s) {
  const int warm = std::max(0, s.warmup_steps);
  if (warm > 0 && step <= warm) return o.lr * double(step) / double(warm);
  const double min_lr = o.lr * s.min_lr_factor;
  const int decay_steps = std::max(1, total_steps - warm);
  const double progress = std::clamp(double(step - warm) / double(decay_steps), 0.0, 1.0);
  if (s.decay == "constant") return o.lr;
  if (s.decay == "linear") return o.lr + (min_lr - o.lr) * progress;
  return min_lr + 0.5 * (o.lr - min_lr) * (1.0 + std::cos(M_PI * progress));  // cosine
}

}  // namespace shardcast::trainer
