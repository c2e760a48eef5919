// Op listing and compute cost of each FSDP unit: FLOPs and HBM bytes of every op of a
// Llama/MPT block, of the embedding and of the head + loss, timed by a roofline.
//
// What it is: the compute model. Each op is a GEMM, flash attention or a memory-bound elementwise
// op (bytes / (HBM·hbm_eff); torch.compile scales these bytes by compile_elementwise_factor).
// On GPU presets (ComputeContext::grid.sm_count > 0) a GEMM's time comes from its (M, N, K) on
// the SM grid (planner/model/kernel_rates.h: tile and wave quantization at the measured large-GEMM
// rate) and its backward is the two GEMMs dX = dY·Wᵀ (M, K, N) and dW = Xᵀ·dY (K, N, M);
// attention runs at the published flash-attention rate for its sequence length and head
// dimension (configs/kernels/flash_attention.csv), backward 2.5× forward. Without a grid (the
// measured CPU profile) a GEMM is FLOPs / (peak·matmul_eff·k/(k + matmul_dim_half)) and its
// backward two GEMMs of its size, attention FLOPs / (peak·attention_eff). GEMMs are bounded
// below by their bytes. Backward of an elementwise op is twice its forward bytes. Also the bytes each op saves for backward
// (the eager activation count; compile / checkpointing variants are ac_policy.h), and the
// loss's memory for each cross-entropy implementation (loss_memory). What it is not:
// communication or scheduling (simulator.h).
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/model/efficiency.h"
#include "planner/model/fp8_linear_table.h"
#include "planner/model/fp8_recipe.h"
#include "planner/model/kernel_rates.h"
#include "planner/model/kernel_table.h"
#include "shared/hardware_spec.h"
#include "shared/model_spec.h"
#include "shared/train_config.h"

namespace shardcast::planner {

enum class OpKind { matmul, attention, elementwise };

// How the loss is computed from the logits (docs/cost-model.md §2.1):
//   fp32_upcast — F.cross_entropy(logits.float(), ...) (torchtitan, this repo's trainer):
//                 an fp32 copy and fp32 log-probabilities;
//   fp32_upcast_shifted — transformers' LlamaForCausalLM before 4.46: logits = logits.float(),
//                 then CrossEntropyLoss on logits[..., :-1, :].contiguous(): a second fp32 copy
//                 while the loss runs forward;
//   fp32_upcast_chunked — F.cross_entropy(reduction="none") on 128-row chunks of the fp32
//                 logits (litgpt's chunked_cross_entropy behind Lightning Fabric, whose wrapper
//                 up-casts the model's output): log-probabilities as fp32, saved per chunk;
//                 backward frees each chunk's as its gradient lands in split's buffer, then
//                 cats the chunks' gradients into one fp32 gradient of the logits;
//   native      — nn.CrossEntropyLoss on the param_dtype logits (fms-fsdp): log-probabilities
//                 in param_dtype, the logits held by the training loop through backward;
//   fused       — a fused cross-entropy kernel (flash-attn's xentropy, llm-foundry's default
//                 loss_fn "fused_crossentropy"): one pass, keeps the logits and an fp32
//                 log-sum-exp per token, writes the logits' gradient;
//   chunked_lm_head — torchtitan's ChunkedLossWrapper (2026-06 on): the LM head and an fp32
//                 cross_entropy forward and backward on one of 8 sequence chunks at a time
//                 (chunked_loss.h): one chunk's logits at a time, nothing kept for backward.
enum class CrossEntropyImpl { fp32_upcast, fp32_upcast_shifted, fp32_upcast_chunked, native, fused, chunked_lm_head, chunked_rows };
// Rows per chunk of cross_entropy = "chunked_rows" (trainer/model/chunked_loss.h kLossChunkTokens).
inline constexpr double kChunkedRowsTokens = 1024;
const char* to_string(CrossEntropyImpl c);
// Parse "fp32_upcast" | "fp32_upcast_shifted" | "fp32_upcast_chunked" | "native" | "fused" | "chunked_lm_head" |
// "chunked_rows"; false
// for anything else.
bool parse_cross_entropy(const std::string& s, CrossEntropyImpl& out);
// The losses on an fp32 copy of the logits (fp32_upcast, fp32_upcast_shifted, fp32_upcast_chunked):
// the ones whose copy the model may return and the loop keep (runtime term fp32_logits_held) and
// whose tensors allocation_trace.h replays one by one.
constexpr bool is_fp32_upcast(CrossEntropyImpl c) {
  return c == CrossEntropyImpl::fp32_upcast || c == CrossEntropyImpl::fp32_upcast_shifted ||
         c == CrossEntropyImpl::fp32_upcast_chunked;
}

// Memory of the loss for `tokens` tokens (logits of `vocab` entries in act_bytes).
struct LossMemory {
  double saved = 0;          // kept from the head's forward to its backward  // bytes
  double fwd_transient = 0;  // extra while the loss runs forward  // bytes
  double bwd_transient = 0;  // gradients of the logits while the head runs backward  // bytes
};
LossMemory loss_memory(CrossEntropyImpl impl, double tokens, double vocab, int act_bytes);

// An element-wise op a measured kernel table times by shape (kernel_table.h): an eager Llama
// RMSNorm (rmsnorm_fwd / rmsnorm_bwd rows) or SwiGLU's silu(gate) · up (swiglu_fwd / _bwd).
enum class MeasuredOp { none, rmsnorm, swiglu };

struct Op {
  const char* name = "";
  OpKind kind = OpKind::elementwise;
  double flops = 0;        // forward FLOPs (attention: executed, causal)  // FLOP
  double bytes = 0;        // forward HBM traffic, eager  // bytes
  double fused_bytes = 0;  // elementwise: one read of its inputs, one write of its outputs (compile)  // bytes
  double m = 0, n = 0, k = 0;  // GEMM shape (M×K)·(K×N); a `measured` op's rows m (tokens) and
                               // width n (d_model, or the FFN width for SwiGLU); 0 otherwise
  MeasuredOp measured = MeasuredOp::none;  // element-wise: the kernel-table rows that time it
  double saved_bytes = 0;  // tensors this op keeps for backward  // bytes
  bool fp8 = true;         // matmul: runs in fp8 under --fp8 (the LM head stays bf16: torchtitan
                           // filters `output`, MPT's tied head is not a TransformerEngine Linear)
};

// Everything the compute model needs besides the model shape.
struct ComputeContext {
  double peak_flops = 0;      // dense peak of the compute dtype  // FLOP/s
  Fp8Recipe fp8 = Fp8Recipe::none;  // precision.fp8: the recipe of ops with Op::fp8 (fp8_recipe.h)
  double fp8_peak_flops = 0;  // dense fp8 peak, used when fp8 != none  // FLOP/s
  bool fp8_weights_precast = false;  // fp8 all-gather (tensorwise): weights arrive in fp8, no weight cast
  Mxfp8Casts mxfp8_casts = Mxfp8Casts::compile_triton;  // fp8 = mxfp8: the runtime's cast kernels (fp8_recipe.h)
  // The share of the blocks whose Linears run `fp8` (1 but for nvfp4, whose torchtitan recipe keeps
  // a bf16 tail of blocks: fp8_recipe.h nvfp4_block_fraction); a block's fp8 Linear is timed as
  // that share of the recipe's time plus the rest of its bf16 time, the blocks' mean.
  double fp8_block_share = 1;
  // Executed attention work / dense causal work over the whole sequence (planner/model/
  // document_mask.h: per-document masks of a runtime whose attention skips the other documents'
  // keys); 1 = dense causal. Scales the attention op's FLOPs and time.
  double attention_work = 1;
  double hbm_bandwidth = 0;   // bytes/s
  int act_bytes = 2;          // bytes per activation element (2 for bf16/fp16, 4 for fp32)
  bool compile = false;
  EfficiencyParams eff;
  // Per-shape model (GPU presets, gpu.sm_count > 0; planner/model/kernel_rates.h): GEMMs on the
  // tile grid at peak·matmul_eff (matmul_eff here = MAMF fraction × fitted factor), attention
  // at attention_flops (the published flash-attention rate at this sequence length and head
  // dimension). grid.sm_count = 0: the roofline with matmul_dim_half and attention_eff.
  GemmGrid grid;
  double attention_flops = 0;  // forward + backward rate on executed FLOPs  // FLOP/s
  // A measured kernel table (gpu.kernel_table): a GEMM of a measured shape takes its measured
  // time; dtype names its rows ("bf16", ...; fp8 GEMMs look up "fp8"). Not owned.
  const KernelTable* kernels = nullptr;
  std::string dtype = "bf16";
  // The compute clock under the config's power limit relative to the one the table was measured
  // at (the preset's board power; power_limit.h): a measured GEMM time is divided by it.
  double kernel_clock_scale = 1;
  // Measured float8 Linear speed-ups of `fp8` by shape (planner/model/fp8_linear_table.h) under
  // compile: an fp8 Linear takes the time the grid's speed-up implies over its bf16 time, and
  // eager (torchao's Float8Linear, runtime term fp8_library) that time plus the cast traffic
  // compile fuses (the roofline's eager casts less its compiled ones); null = the recipe's
  // roofline (fp8_recipe.h). Not owned.
  const Fp8LinearGrid* fp8_linear = nullptr;
};

// How a Llama RMSNorm runs (the runtime term `rmsnorm`): `eager` = PyTorch ops with an fp32
// up-cast, (4A + 28)·d bytes per token, the weight multiplied after the down-cast (torchtitan's
// model.py of 2024, transformers' LlamaRMSNorm, torch's composite rms_norm before
// pytorch/pytorch#153666); `eager_fp32_weight` = the same ops with the weight multiplied before
// it in fp32 (litgpt's RMSNorm: (x_normed * weight.float()).to(dtype)); `fused` = one kernel
// that reads the input and writes the output, 2A·d (torchtitan's Triton fused_rmsnorm,
// torchtitan/models/norms.py, 2024-04 to #826 in 2025-02; torch's aten::_fused_rms_norm behind
// nn.RMSNorm on CUDA from pytorch/pytorch#153666, nightlies of 2025-07-20 on). MPT's LayerNorm
// is one kernel either way.
enum class NormImpl { eager, eager_fp32_weight, fused };
const char* to_string(NormImpl n);
bool parse_norm_impl(const std::string& s, NormImpl& out);  // "eager" | "eager_fp32_weight" | "fused"
// What an eager RMSNorm keeps for backward beyond what the fused count (its input and output
// at A bytes and an fp32 statistic; ac_policy.h) gives, per token, for one norm of a model
// without compile: eager keeps the fp32 up-cast input (x.float(), read by pow and by the
// multiply by rsqrt) and the down-cast output the weight multiplies, but not the input itself:
// +4·d; eager_fp32_weight keeps the fp32 up-cast input and the fp32 normalised tensor the
// weight multiplies: +8·d − A·d. 0 for a fused kernel, for MPT's LayerNorm (one kernel) and under
// torch.compile (the chain fuses into one kernel keeping input and statistic).  // bytes
double eager_norm_extra_saved_per_token(const ModelSpec& m, int A, NormImpl norm, bool compile);

// Forward ops for `tokens` = micro_batch·seq_len tokens. rope_fused / swiglu_fused (runtime
// terms `rope`, `swiglu`): one kernel each, moving the fused traffic 2A·(d + kv) and 3A·f per
// token instead of the eager (2A + 16)·(d + kv) and 5A·f.
std::vector<Op> block_forward_ops(const ModelSpec& m, int micro_batch, int seq_len, int act_bytes,
                                  NormImpl norm = NormImpl::eager, bool rope_fused = false,
                                  bool swiglu_fused = false);
std::vector<Op> embedding_forward_ops(const ModelSpec& m, int micro_batch, int seq_len,
                                      int act_bytes);
std::vector<Op> head_forward_ops(const ModelSpec& m, int micro_batch, int seq_len, int act_bytes,
                                 CrossEntropyImpl ce = CrossEntropyImpl::fp32_upcast,
                                 NormImpl norm = NormImpl::eager);

// Time of one GEMM (m×k)·(k×n), in the compute dtype or (fp8) in fp8 at cuBLAS's tensor-wise
// rate, bounded below by its bytes (fp8: operands at 1 byte, output in the compute dtype).  // s
double gemm_time(double m, double n, double k, bool fp8, const ComputeContext& c);

// Time of one op, forward and backward.  // s
double op_forward_time(const Op& op, const ComputeContext& c);
double op_backward_time(const Op& op, const ComputeContext& c);

// Cost of one FSDP unit for one micro-batch.
struct UnitCost {
  double fwd_s = 0;          // s
  double bwd_s = 0;          // without recompute  // s
  double fwd_flops = 0;      // FLOP (executed)
  double saved_bytes = 0;    // activations kept from forward to backward (no checkpointing)  // bytes
  double input_bytes = 0;    // the unit's input (what full checkpointing keeps)  // bytes
  double transient_bytes = 0;  // extra working memory while the unit runs (e.g. fp32 logits)  // bytes
};
UnitCost unit_cost(const std::vector<Op>& ops, double input_bytes, double transient_bytes,
                   const ComputeContext& c);

}  // namespace shardcast::planner
