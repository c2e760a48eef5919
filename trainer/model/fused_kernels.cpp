// One-pass RMSNorm, rotary and SwiGLU loops. See fused_kernels.h.
#include "trainer/model/fused_kernels.h"

#include <cmath>

namespace shardcast::trainer {

namespace {

constexpr int kLanes = 16;  // independent partial sums: the adds vectorize and do not wait

// Σ a[i]·b[i] over n fp32 values, in kLanes interleaved fp32 partial sums then the tail.
float dot_fp32(const float* __restrict a, const float* __restrict b, int64_t n) {
  float part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) part[k] += a[i + k] * b[i + k];
  for (int k = 0; i < n; ++i, ++k) part[k] += a[i] * b[i];
  float sum = 0;
  for (float p : part) sum += p;
  return sum;
}

}  // namespace

void rms_norm_forward_rows(const float* x, const float* w, float* y, float* rstd, int64_t d, float eps,
                           int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* __restrict xr = x + r * d;
    float* __restrict yr = y + r * d;
    const float s = 1.0f / std::sqrt(dot_fp32(xr, xr, d) / float(d) + eps);
    rstd[r] = s;
    for (int64_t i = 0; i < d; ++i) yr[i] = w[i] * (xr[i] * s);
  }
}

void rms_norm_backward_rows(const float* dy, const float* x, const float* w, const float* rstd, float* dx,
                            double* dw_part, int64_t d, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* __restrict gr = dy + r * d;
    const float* __restrict xr = x + r * d;
    float* __restrict dr = dx + r * d;
    const float s = rstd[r];
    // Σ_j ĝ_j·x̂_j = s · Σ_j (g_j·w_j)·x_j; the row's dx holds ĝ meanwhile (it is in cache).
    for (int64_t i = 0; i < d; ++i) dr[i] = gr[i] * w[i];
    const float c = s * dot_fp32(dr, xr, d) / float(d);
    for (int64_t i = 0; i < d; ++i) {
      const float xh = xr[i] * s;
      dw_part[i] += double(gr[i] * xh);
      dr[i] = s * (dr[i] - xh * c);
    }
  }
}

void rms_norm_sum_weight_grad(const double* parts, int64_t chunks, int64_t d, float* dw) {
  for (int64_t i = 0; i < d; ++i) {
    double sum = 0;
    for (int64_t c = 0; c < chunks; ++c) sum += parts[c * d + i];
    dw[i] = float(sum);
  }
}

void rotary_forward_row(const float* x, const float* cos, const float* sin, float* out, int64_t hd) {
  const int64_t h = hd / 2;
  for (int64_t i = 0; i < h; ++i) out[i] = x[i] * cos[i] + (-x[i + h]) * sin[i];
  for (int64_t i = h; i < hd; ++i) out[i] = x[i] * cos[i] + x[i - h] * sin[i];
}

void rotary_backward_row(const float* g, const float* cos, const float* sin, float* dx, int64_t hd) {
  const int64_t h = hd / 2;
  for (int64_t i = 0; i < h; ++i) dx[i] = g[i] * cos[i] + g[i + h] * sin[i + h];
  for (int64_t i = h; i < hd; ++i) dx[i] = g[i] * cos[i] - g[i - h] * sin[i - h];
}

// σ as LibTorch's CPU silu computes it (x / (1 + e^−x)), so that h has the reference's bits
// wherever the product does.
void swiglu_forward(const float* gate, const float* up, float* h, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) {
    const float g = gate[i];
    h[i] = (g / (1.0f + std::exp(-g))) * up[i];
  }
}

void swiglu_backward(const float* dh, const float* gate, const float* up, float* dgate, float* dup, int64_t i0,
                     int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) {
    const float g = gate[i], s = 1.0f / (1.0f + std::exp(-g));
    dup[i] = dh[i] * (g * s);
    dgate[i] = (dh[i] * up[i]) * (s * (1.0f + g * (1.0f - s)));
  }
}

}  // namespace shardcast::trainer
