// One-pass AdamW and fp64 square sum. See adamw_kernel.h.
#include "trainer/train/adamw_kernel.h"

#include <cmath>

namespace shardcast::trainer {

void adamw_step_fp32(float* __restrict param, const float* __restrict grad, float* __restrict exp_avg,
                     float* __restrict exp_avg_sq, int64_t n, const AdamwScalars& s) {
  const float b1 = s.beta1, c1 = s.one_minus_beta1, b2 = s.beta2, c2 = s.one_minus_beta2;
  const float decay = s.decay, inv_bc2 = s.inv_bias_correction2, eps = s.eps, step = s.step_size;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m = exp_avg[i] * b1 + g * c1;
    const float v = exp_avg_sq[i] * b2 + c2 * g * g;  // addcmul: value·t1·t2
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = std::sqrt(v * inv_bc2) + eps;
    param[i] = param[i] * decay + step * (m / denom);  // addcdiv (vectorized): value·(t1/t2)
  }
}

double square_sum_fp64(const float* x, int64_t n) {
  constexpr int kLanes = 8;  // independent partial sums: no add waits on the previous one
  double part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const double d = x[i + k];
      part[k] += d * d;
    }
  for (int k = 0; i < n; ++i, ++k) {
    const double d = x[i];
    part[k] += d * d;
  }
  double sum = 0;
  for (double p : part) sum += p;
  return sum;
}

}  // namespace shardcast::trainer
