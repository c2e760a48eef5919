// The GPU kernel-ceiling table of `shardcast-train microbench --gpu`: its cases and their FLOP
// and byte counts.
//
// What it is: kernel_cases() lists what is timed — bf16 GEMMs of the Llama block shapes of
// the given presets (q, k/v, o, gate/up, down and lm head projections, each in its forward
// orientation C = X·Wᵀ and both backward ones, dX = dY·W and dW = dYᵀ·X) over token counts,
// causal SDPA forward and backward over sequence lengths and the presets' head layouts,
// RMSNorm, SwiGLU's silu(gate) · up (Llama presets) and cross-entropy forward and backward, a
// device copy, and one optimizer step as
// torch.optim.AdamW(fused=True) after clip_grad_norm_ runs it (the gradients' norm, their scale,
// the fused update) over each preset's parameter tensors in bf16 and in fp32 — each with the FLOPs and
// the fewest bytes it must move, as rows of shared/kernel_table.h (whose format_kernel_csv
// writes the table in the one format the planner reads). No LibTorch, no timing:
// trainer/microbench/gpu_kernels.h times the cases. What it is not: the table's format (the
// row, header, CSV writer and reader are shared/kernel_table.h). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shared/kernel_table.h"
#include "shared/model_spec.h"

namespace shardcast::trainer {

struct KernelCaseOptions {
  std::vector<ModelSpec> models;             // Llama presets whose shapes are timed
  std::vector<int64_t> tokens;               // GEMM / norm / loss rows (tokens per call)
  std::vector<int64_t> seq_lens;             // SDPA sequence lengths
  int64_t sdpa_tokens = 32768;               // SDPA batch = max(1, sdpa_tokens / seq_len)
  int64_t copy_bytes = int64_t(1) << 30;     // device copy size (read + written = 2×)  // bytes
};

// Every case, deduplicated (two presets sharing a shape give one row), seconds < 0.
// Cross-entropy rows only up to 2^31 logits (m·n): the fp32 path holds ~16 bytes per logit.
// Optimizer rows hold at most 2^30 elements (the preset's tensors of its mean size, as many as
// fit): parameters, gradients and both moments of a 70B model would not fit on one GPU.
std::vector<KernelRow> kernel_cases(const KernelCaseOptions& o);

// Causal attention FLOPs as FlashAttention counts them: 4·b·h·s²·d / 2 forward, 2.5× that
// backward (its backward recomputes the scores: 5 matmuls against the forward's 2).
double sdpa_causal_fwd_flop(int64_t batch, int64_t heads, int64_t seq_len, int64_t head_dim);
double sdpa_causal_bwd_flop(int64_t batch, int64_t heads, int64_t seq_len, int64_t head_dim);

}  // namespace shardcast::trainer
