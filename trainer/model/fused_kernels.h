// One-pass RMSNorm, rotary embedding and SwiGLU over fp32 host arrays: the CPU fast paths of
// trainer/model/fused_ops.h.
//
// What it is: the arithmetic of the reference ops of fused_ops.h (rms_norm; the rotate_half
// rotary; silu(gate) · up), each as one loop over a row that reads its inputs once and writes its
// output once, forward and backward, in fp32 with the reference's order of multiplications.
// RMSNorm's row statistic is summed over sixteen interleaved fp32 partial sums (fixed order:
// every call on the same data gives the same bits); the weight gradient is accumulated per
// chunk of rows in fp64 and the chunks are added in chunk order, so it does not depend on how
// the caller spreads chunks over threads.
// What it is not: bitwise equal to the reference (LibTorch's mean sums in another order;
// tests/trainer/fused_ops_test.cpp bounds the difference), and not for device memory
// (fused_ops.h runs the reference there). No LibTorch: compiles in milliseconds.
// Pure functions over caller-owned arrays; thread-safe for disjoint outputs.
#pragma once

#include <cstdint>

namespace shardcast::trainer {

// Rows per weight-gradient chunk of rms_norm_backward_rows: the caller's parallel grain and the
// fixed summation unit of dw.
inline constexpr int64_t kNormRowsPerChunk = 64;

// RMSNorm forward of rows [r0, r1) of x (rows, d), contiguous:
//   rstd[r] = 1 / √(Σ_i x[r,i]² / d + eps)      (rows) fp32, kept for backward
//   y[r,i]  = w[i] · (x[r,i] · rstd[r])          (rows, d) fp32
void rms_norm_forward_rows(const float* x, const float* w, float* y, float* rstd, int64_t d, float eps,
                           int64_t r0, int64_t r1);

// RMSNorm backward of rows [r0, r1): with x̂ = x·rstd and ĝ = dy ⊙ w,
//   dx[r,i] = rstd[r] · (ĝ[r,i] − x̂[r,i] · Σ_j ĝ[r,j]·x̂[r,j] / d)     (rows, d) fp32
//   dw_part[i] += Σ_{r in [r0,r1)} dy[r,i] · x̂[r,i]                    (d) fp64, the caller's
// partial of this range (zeroed by the caller; one per chunk of kNormRowsPerChunk rows).
void rms_norm_backward_rows(const float* dy, const float* x, const float* w, const float* rstd, float* dx,
                            double* dw_part, int64_t d, int64_t r0, int64_t r1);

// Sum of the chunk partials (chunks, d) fp64, in chunk order, into dw (d) fp32.
void rms_norm_sum_weight_grad(const double* parts, int64_t chunks, int64_t d, float* dw);

// Rotary embedding of one row of hd values (hd even, h = hd/2), rotate_half form:
//   out[i] = x[i]·cos[i] + rot[i]·sin[i],  rot = (−x[h..hd), x[0..h))
// x's row is read with element stride 1; out may not alias x.
void rotary_forward_row(const float* x, const float* cos, const float* sin, float* out, int64_t hd);

// Its backward (the transpose of the rotation): with gc = g ⊙ cos, gs = g ⊙ sin,
//   dx[i] = gc[i] + (i < h ? gs[i + h] : −gs[i − h])
void rotary_backward_row(const float* g, const float* cos, const float* sin, float* dx, int64_t hd);

// SwiGLU's product of elements [i0, i1): with σ(g) = 1 / (1 + e^−g),
//   h[i] = (g[i] · σ(g[i])) · u[i]                                     fp32
void swiglu_forward(const float* gate, const float* up, float* h, int64_t i0, int64_t i1);

// Its backward over [i0, i1), σ recomputed from g:
//   du[i] = dh[i] · g[i]·σ(g[i])
//   dg[i] = dh[i] · u[i] · σ(g[i]) · (1 + g[i] · (1 − σ(g[i])))
void swiglu_backward(const float* dh, const float* gate, const float* up, float* dgate, float* dup, int64_t i0,
                     int64_t i1);

}  // namespace shardcast::trainer
