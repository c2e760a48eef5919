// AdamW update, the learning-rate schedule and clipping's square sum, shared by the
// reference path and FSDP.
//
// What it is: one elementwise AdamW step on a tensor (a whole parameter for the reference,
// a flat fp32 shard for FSDP — elementwise, so the two agree exactly), and lr(step) with
// linear warmup then cosine/linear/constant decay to lr·min_lr_factor.
// What it is not: parameter grouping (weight decay applies to every parameter, as torchtitan
// does) or state storage (callers own exp_avg/exp_avg_sq). Pure functions, thread-safe.
#pragma once

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "shared/train_config.h"

namespace shardcast::trainer {

// In place on param/exp_avg/exp_avg_sq (all fp32, same shape). `step` counts from 1.
inline void adamw_update(at::Tensor& param, const at::Tensor& grad, at::Tensor& exp_avg,
                         at::Tensor& exp_avg_sq, int step, const OptimizerConfig& o, double lr) {
  exp_avg.mul_(o.beta1).add_(grad, 1.0 - o.beta1);
  exp_avg_sq.mul_(o.beta2).addcmul_(grad, grad, 1.0 - o.beta2);
  const double bc1 = 1.0 - std::pow(o.beta1, step);
  const double bc2 = 1.0 - std::pow(o.beta2, step);
  param.mul_(1.0 - lr * o.weight_decay);  // decoupled weight decay
  auto denom = (exp_avg_sq / bc2).sqrt_().add_(o.eps);
  param.addcdiv_(exp_avg, denom, -lr / bc1);
}

// Σ x² in fp64 of an fp32 tensor, for gradient clipping: the squares of fp32 values are exact
// in fp64, so squaring the fp64 copy in place gives the values of .pow(2) without a second
// fp64 tensor (same sum, bit for bit).
inline at::Tensor square_sum_fp64(const at::Tensor& x) {
  at::Tensor d = x.to(at::kDouble);
  if (x.scalar_type() == at::kDouble) d = d.clone();  // never square the caller's tensor
  d.mul_(d);
  return d.sum();
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
