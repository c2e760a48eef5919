// The trainer's fused RMSNorm, rotary embedding and SwiGLU: autograd Functions whose CPU fp32
// path is one loop per row or element (model/fused_kernels.h), forward and backward.
//
// What it is: fused_rms_norm, fused_rotary and fused_swiglu, with the results of the reference
// ops (rms_norm below; x·cos + rotate_half(x)·sin; silu(gate)·up) and what they keep for
// backward cut to what the gradient needs. RMSNorm saves its input, its weight and one fp32 statistic per row, not
// the reference's x² and x·rsqrt(·) (two (…,D) fp32 tensors a norm); its output is a new tensor
// the next Linear saves. The rotary embedding saves nothing but the cos/sin rows it was given
// (views of the model's tables), and writes its output contiguous (B,H,T,hd), so the attention
// that follows reshapes it without a copy; its input gradient has the input's strides (the
// transposed view of the q/k GEMM's output), so the GEMM's backward reads it without a copy.
// SwiGLU saves its two inputs (the gate and up GEMMs' outputs) and recomputes σ(gate) in
// backward, where the reference keeps silu(gate) as a third (…,F) tensor.
// Each opens the op profile's scope (shardcast::rms_norm, shardcast::rope, shardcast::swiglu)
// in forward and in backward. The weight gradient of RMSNorm is summed in a fixed order (fused_kernels.h), so it
// has the same bits on any number of intra-op threads.
// What it is not: a GPU kernel. On any tensor that is not a CPU fp32 one (CUDA, bf16) each
// returns the reference ops' result through plain autograd, so the GPU path is unchanged
// (runtime profile shardcast-train: [terms] rmsnorm = rope = swiglu = "fused", [gpu] "eager").
// The reference ops are declared beside them as the oracle (tests/trainer/fused_ops_test.cpp).
// Threading: rows are spread over LibTorch's intra-op threads (at::parallel_for); no state.
#pragma once

#include <ATen/ATen.h>

namespace shardcast::trainer {

// RMSNorm over the last dimension: x (…,D), w (D) -> (…,D) in x's dtype.
at::Tensor fused_rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);

// The reference: RMSNorm over the last dimension in fp32, times w, result in x's dtype (HF
// LlamaRMSNorm, LibTorch ops): the oracle and the path of every tensor that is not CPU fp32.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);            // (…,D) -> (…,D)

// Rotary embedding: x (B,H,T,hd), any strides; cos, sin (T,hd) in x's dtype -> (B,H,T,hd).
at::Tensor fused_rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// x·cos + rotate_half(x)·sin in LibTorch ops: the oracle and the path of every tensor that is
// not CPU fp32.
at::Tensor rotary_reference(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// SwiGLU's product: gate, up (…,F) of one shape -> silu(gate) · up (…,F).
at::Tensor fused_swiglu(const at::Tensor& gate, const at::Tensor& up);

// silu(gate) · up in LibTorch ops: the oracle and the path of every tensor that is not CPU fp32.
at::Tensor swiglu_reference(const at::Tensor& gate, const at::Tensor& up);

}  // namespace shardcast::trainer
