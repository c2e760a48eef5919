// One-pass AdamW and fp64 square sum over contiguous fp32 host arrays: the CPU fast path of
// trainer/train/optim.h.
//
// What it is: the same arithmetic as optim.h's reference (LibTorch ops, one pass each over
// the tensor: mul_, add_, mul_, addcmul_, mul_, div, sqrt_, add_, addcdiv_) fused into one loop
// that reads and writes each element once, in fp32 with the same fp32 constants; and Σ x²
// accumulated in fp64 over eight interleaved partial sums (fixed order, so every call on the
// same data gives the same bits).
// What it is not: bitwise equal to the reference (LibTorch's vectorized add may fuse a
// multiply-add; tests/trainer/optim_test.cpp bounds the difference) and not for device
// memory (optim.h uses the reference on GPUs). No LibTorch: compiles in milliseconds.
// Pure functions over caller-owned arrays; thread-safe for disjoint arrays.
#pragma once

#include <cstdint>

namespace shardcast::trainer {

// The fp32 constants of one AdamW step (optim.h adamw_scalars computes them).
struct AdamwScalars {
  float beta1 = 0, one_minus_beta1 = 0;  // exp_avg = exp_avg·β1 + g·(1−β1)
  float beta2 = 0, one_minus_beta2 = 0;  // exp_avg_sq = exp_avg_sq·β2 + (1−β2)·g²
  float decay = 1;                       // param ·= 1 − lr·weight_decay
  float inv_bias_correction2 = 1;        // denom = √(exp_avg_sq · (1/bc2)) + eps (as LibTorch
                                         // divides by a scalar: times its fp32 reciprocal)
  float eps = 0;
  float step_size = 0;                   // param += −lr/bc1 · exp_avg / denom
};

// In place on param, exp_avg, exp_avg_sq (n fp32 each); grad is read only. The arrays must
// not overlap.
void adamw_step_fp32(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                     const AdamwScalars& s);

// Σ x[i]² in fp64 (each square exact in fp64).
double square_sum_fp64(const float* x, int64_t n);

}  // namespace shardcast::trainer
