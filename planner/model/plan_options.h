// PlanOptions: what the software executing a plan does outside TrainConfig — the runtime's
// terms (attention kernel, loss, norms, copies, allocator, optimizer step), decoded once from
// its profile by resolve_plan_options() (runtime.h) — and what the caller asks of plan()
// (timeline, op breakdown, allocator replay bounds) and of the evidence (a reference run's level,
// applied by evidence/predict.h, not by the model).
//
// What it is not: the configuration (shared/train_config.h) or the runtime profile's file
// (shared/runtime_spec.h). A plain value type: copy it freely; no threading concerns.
#pragma once

#include <string>

#include "planner/model/mesh_terms.h"
#include "planner/model/ops.h"
#include "planner/model/optimizer_step.h"
#include "planner/model/simulator.h"
#include "planner/model/zero_memory.h"

namespace shardcast::planner {

// Runtime terms decoded once (runtime.cpp plan_options, which names the profile file and key on
// a value it cannot decode); the cost model switches on these, never on the profile's strings.
// The flash-attention kernel whose rates time attention (runtime term attention).
enum class AttentionKernel { flash2, flash1, flash_triton };
// Its name in configs/kernels/flash_attention.csv and in Prediction::attention.
const char* to_string(AttentionKernel k);
// The float8 Linear the runtime runs (runtime term fp8_library).
enum class Fp8Library { torchao, transformer_engine };
bool parse_fp8_library(const std::string& s, Fp8Library& out);  // "torchao" | "transformer_engine"
// The dtype of a kept unsynced gradient sum (runtime term unsynced_gradient_dtype).
enum class UnsyncedGradDtype { param_dtype, reduce_dtype, fp32 };
bool parse_unsynced_grad_dtype(const std::string& s, UnsyncedGradDtype& out);  // "param_dtype" | "reduce_dtype" | "fp32"
// How the runtime splits the model into pipeline stages (runtime term pp_split; mesh_terms.h).
bool parse_pp_split(const std::string& s, PpSplit& out);  // "effective_layers" | "blocks_base_first" | "blocks"

// Which runtime the options come from.
struct RuntimeIdentity {
  std::string runtime;    // runtime preset the options come from ("" = built in code)
  std::string framework;  // that runtime's framework (RuntimeSpec::framework): its band regime
};

// What the caller asks of plan(): extra outputs and how far to replay the allocator.
struct PlanRequest {
  bool timeline = false;  // fill Prediction::timeline
  // Fill Prediction::op_seconds (planner/model/op_breakdown.h). It costs every op again, so the
  // planner's inner loops (search, validate, fit) leave it off; `shardcast plan` turns it on.
  bool op_breakdown = false;
  // Also replay the allocation sequence with the other expandable_segments setting and fill
  // Prediction::mem_reserved_range_bytes (validate: a row rarely states its allocator
  // configuration). Off elsewhere: it doubles the allocator replay's cost.
  bool reserved_range = false;
  // > 0: skip the allocator replay when the allocated peak plus what lies outside the allocator
  // is already over this many bytes (reserved ≥ allocated, so a memory budget's verdict is the
  // same); reserved is then reported as the allocated peak, a lower bound. search sets its
  // memory budget here: the replay costs more than the rest of plan().  // bytes
  double replay_within_bytes = 0;
};

// How the runtime runs the ops of a block and the loss: which kernels, and what each keeps for
// backward (runtime terms of configs/runtimes/; docs/cost-model.md).
struct RuntimeKernels {
  // How the training loop computes the loss (ops.h; the memory of the logits depends on it).
  CrossEntropyImpl cross_entropy = CrossEntropyImpl::fp32_upcast;
  // How a Llama RMSNorm runs: eager PyTorch ops with an fp32 up-cast, or one fused kernel
  // (ops.h NormImpl; the runtime term `rmsnorm`).
  NormImpl rmsnorm = NormImpl::eager;
  // The runtime terms `rope` and `swiglu`: one fused kernel each instead of eager ops (ops.h).
  bool rope_fused = false;
  bool swiglu_fused = false;
  // Grouped-query K and V copied to n_heads width before attention (runtime term gqa =
  // "repeated"): attention keeps them at width d for backward (ac_policy.h).
  bool gqa_repeated = false;
  // Attention's v is a view of one fused q/k/v GEMM output (runtime term qkv_output_kept): with
  // K/V at n_heads and RoPE, a plain block keeps that whole output, A·(d + kv) per token more.
  bool qkv_output_kept = false;
  // The block is torchtitan's eager Llama block (runtime term block_program = "torchtitan"): run eager,
  // the allocator replay sees its tensors one by one (planner/model/allocator/block_tensor_sequence.h).
  bool torchtitan_block_program = false;
  // Attention as plain eager ops, no SDPA / flash kernel (runtime term attention = "eager" or
  // "eager_causal_blocks"): the fp32 softmax output (micro_batch · n_heads · s · s) is kept
  // for backward, and the scores' gradient exists beside it in backward.
  bool attention_materialized = false;
  // attention = "eager_causal_blocks": the queries run in blocks that score only the keys up
  // to their last row (shared/causal_blocks.h), so the kept softmax output is micro_batch ·
  // n_heads · causal_block_score_elements(s). shardcast-train on LibTorch 1.13 computes
  // attention this way (trainer/model/llama.cpp causal_attention; counted by
  // trainer/microbench/bench_block_memory).
  bool attention_causal_blocks = false;
  // The flash-attention kernel whose published rates time attention on GPU presets
  // (configs/kernels/flash_attention.csv): flash2 (SDPA's flash backend since torch 2.2,
  // flash-attn 2), flash1 (SDPA's flash backend before torch 2.2, FlashAttention version 1,
  // runtime term attention = "flash1": the table has no rows of it, so it is timed at
  // kFlashAttention1OverFlashAttention2 of the flash ceiling, kernel_rates.h) or flash_triton
  // (runtime term attention = "flash_triton"). Unused when attention_materialized.
  AttentionKernel attention_kernel = AttentionKernel::flash2;
  // FlexAttention with per-document causal masks (runtime term attention = "flex_document"): the
  // work of data.mean_doc_len's documents, not of the whole sequence (document_mask.h).
  bool attention_document_mask = false;
  // SDPA runs cuDNN attention (the runtime term cudnn_attention lists the preset's
  // gpu.compute_capability): timed at the preset's cudnn_attention_ceiling.
  bool attention_cudnn = false;
  // The torch release the runtime runs (runtime term torch: "2.11" or "unstated"). A preset's
  // measured kernel table times the plan only when it is the table's release.
  std::string torch_release;  // "" = the runtime does not state its release (term torch = "unstated")
  // Op SAC's save list holds the cuDNN SDPA op (runtime term sac_saves_cudnn_attention).
  bool sac_saves_cudnn_attention = true;
  // Whether op SAC keeps attention's output: false only on cuDNN attention with a save list
  // that lacks its op.
  bool sac_attention_saved() const { return !attention_cudnn || sac_saves_cudnn_attention; }
  // A checkpointed block's recompute stops before its last GEMM (non-reentrant
  // torch.utils.checkpoint's early stop, torch >= 2.1; ac_policy.h checkpointed_recompute_time).
  // false: the whole block forward is run again (torch < 2.1, reentrant checkpoint, this repo's
  // trainer).
  bool recompute_early_stop = false;
  // torchao float8 all-gather (torchtitan --float8.enable_fsdp_float8_all_gather): the Linear
  // weights of each block are cast to fp8 before the all-gather, so they travel and sit
  // gathered at 1 byte each. Only with precision.fp8.
  bool fp8_all_gather = false;
  // torchao's Float8Linear keeps each Linear's fp8-cast weight for backward (runtime term
  // fp8_weight_saved): a plain block keeps 1 byte per Linear weight more under precision.fp8.
  bool fp8_weight_saved = false;
  // torchao's tensorwise Float8Linear keeps each Linear's input cast to fp8 for backward, not
  // the input (runtime term fp8_input_saved; ac_policy.h fp8_input_saving_per_token): a plain
  // block keeps less under precision.fp8 = tensorwise.
  bool fp8_input_saved = false;
  // The float8 Linear the runtime runs (runtime term fp8_library): torchao takes torchao's
  // measured compiled speed-ups eager too, plus the casts compile fuses; transformer_engine
  // the roofline (fp8_recipe.h).
  Fp8Library fp8_library = Fp8Library::torchao;
  // torchao's MXFP8 cast kernels the runtime runs (runtime term mxfp8_casts; fp8_recipe.h).
  Mxfp8Casts mxfp8_casts = Mxfp8Casts::compile_triton;
};

// What the runtime's training loop, FSDP and allocator do around the ops: gradient sync and
// accumulation, what outputs it keeps and how long, the optimizer step, the host, the
// allocator (runtime terms of configs/runtimes/).
struct RuntimeLoop {
  // Reduce gradients on every micro-step (FSDP's default, Composer, torchtitan). false models
  // no_sync accumulation: unsharded gradients persist, reduced once on the final micro-step.
  // no_shard always reduces once per step (DDP no_sync).
  bool sync_every_micro_step = true;
  // Without sync_every_micro_step: the dtype of the kept unsharded gradient sum
  // (RuntimeTerms::unsynced_gradient_dtype: param_dtype | reduce_dtype | fp32).
  UnsyncedGradDtype unsynced_gradient_dtype = UnsyncedGradDtype::param_dtype;
  bool fp32_logits_held = false;  // runtime term fp32_logits_held (docs/cost-model.md §5.4)
  // The model returns every layer's K and V with its output (runtime term use_cache:
  // transformers' config.use_cache left on in training without transformers' own gradient
  // checkpointing) and the loop keeps them with the output.
  bool use_cache = false;
  // How long the loop keeps the model's output (runtime term outputs_kept; simulator.h).
  OutputsKept outputs_kept = OutputsKept::backward;
  // The model's forward computes the loss (runtime term loss_in_model; simulator.h).
  bool loss_in_model = false;
  // The embedding, final norm and head form the root FSDP unit, which is not resharded after
  // forward (FSDP1's root; torchtitan's fully_shard(model); Composer's MPT root), so the
  // embedding stays gathered from forward through backward. false: separate units, the
  // embedding resharded after forward (this repo's trainer).
  bool root_unit = false;
  // The training loop frees the sharded gradients between steps (optimizer.zero_grad() with
  // PyTorch's default set_to_none=True: torchtitan, Composer, fms-fsdp), so each appears when
  // its unit is first reduced. false: they persist (this repo's trainer zeroes them in place).
  bool grads_freed_between_steps = false;
  // A buffer of the unsharded gradient's size exists during its reduction even when
  // reduce_dtype equals param_dtype: Gloo (LibTorch 1.13) has no reduce-scatter, and
  // shardcast-train composes it from an all-to-all into a receive buffer of that size.
  bool reduce_copies_gradient = false;
  // The reduce-scatter writes into a new shard-sized buffer on the reduce stream, added into
  // the sharded gradient (runtime term reduce_output = "buffer").
  bool reduce_output_buffer = false;
  // AdamW's moments exist from the start (runtime term adamw_state = "with_model"); false:
  // torch.optim.AdamW's, made at the first step.
  bool adamw_state_at_init = false;
  // The update's implementation and the clipping before it (runtime terms adamw_update and
  // grad_clip): the optimizer's device memory accesses (optimizer_step.h).
  AdamwUpdate adamw_update = AdamwUpdate::foreach;
  GradClip grad_clip = GradClip::norm_and_scale;
  // No host time on the step (runtime term host_time = "hidden"): the hardware profile's
  // unit_overhead_s and step_overhead_s are not added.
  bool host_time_hidden = false;
  // Forward and backward replay as one CUDA graph per micro-step (runtime term host_time =
  // "cuda_graphs"): no unit_overhead_s per unit and pass; step_overhead_s stays.
  bool host_units_graphed = false;
  // FSDP2's per-parameter sharding (runtime term parameter_layout = "per_parameter"): every
  // all-gather and reduce-scatter copies into and out of one buffer. Charged in plans a measured
  // kernel table times (docs/cost-model.md §2.2).
  bool per_parameter_copies = false;
  // The caching allocator runs with expandable_segments:True: one growing segment per stream
  // (caching_allocator.h).
  bool expandable_segments = false;
  // No CPU rate limiter (FSDP2: pytorch/torchtitan#735): blocks another stream used come back
  // to their pool a compute task after the simulator frees them (allocation_trace.h).
  bool record_stream_buffers = false;
  // Reduce-scatters run as one all-to-all round (runtime term gloo_reduce_scatter = "alltoall" on
  // a CPU profile: shardcast-train's Gloo layer), timed at one step's latency (comm_model.h).
  bool reduce_scatter_one_round = false;
};

// How the runtime runs tensor parallel (runtime terms a runtime states when its mesh lists tp;
// mesh_terms.h). Read only where parallelism.tp > 1.
struct RuntimeMesh {
  // The loss on vocabulary-sharded logits (runtime term loss_parallel); false: the head's logits
  // all-gathered over the tp group and the whole loss run on every tp rank.
  bool loss_parallel = true;
  // Sequence parallel also on pipeline stages (runtime term tp_sequence_parallel = "always");
  // false ("without_pp"): a stage of a plan with pp > 1 runs basic TP (mesh_terms.h).
  bool sequence_parallel_with_pp = true;
  // The token embedding split over tp (runtime term tp_embedding = "vocab_parallel"); false
  // ("replicated"): whole on every tp rank, no collective at the sequence-parallel entry.
  bool embedding_vocab_parallel = true;
  // The attention's and the FFN's input redistributed once before their column-parallel
  // projections (runtime term tp_column_inputs = "gathered_once"); true ("per_projection"): once
  // per projection, each gathered copy kept (mesh_terms.h).
  bool column_inputs_per_projection = false;
  // With loss parallel: torch's DTensor loss_parallel on the fp32 up-cast logits (runtime term
  // loss_parallel_impl = "dtensor", cross_entropy an fp32_upcast kind), one more fp32 tensor of the
  // logit shard each way than the cross_entropy term counts.
  bool loss_parallel_dtensor = true;
  // With model.qk_norm: q_norm's and k_norm's output redistributed to Replicate (runtime term
  // tp_qk_norm = "gathered"): q and k all-gathered over tp each way, RoPE on every head
  // (mesh_terms.h); false ("sharded"): the norms and RoPE on the rank's heads.
  bool qk_norm_gathered = false;
  // With pp > 1: a stage's FSDP modules reshard after each forward, so every micro-batch's
  // backward gathers them again (runtime term pp_reshard_after_forward = true); false: gathered
  // once a step. Either way the stage holds them all gathered at its peak (fsdp_units.cpp).
  bool pp_reshard_after_forward = false;
  // With pp > 1: how the runtime splits the model into stages (runtime term pp_split).
  PpSplit pp_split = PpSplit::effective_layers;
};

// Evidence applied after the model by evidence/predict.h, never read by plan().
struct EvidenceOptions {
  // A measured run of the same hardware preset and runtime (planner/evidence/reference_run.h): its
  // measured over predicted tokens/s. > 0: tokens/s, MFU and HFU are multiplied by it, the step
  // time divided by it, and the band is configs/bands.toml's [reference_run] (0 = none).
  double reference_level = 0;
  std::string reference_run;  // the run's directory, named in the band note
};

// What the software executing the plan does outside TrainConfig, the groups above as one value
// (the cost model's stages take the group they use). Built by resolve_plan_options()
// (planner/model/runtime.h) from the config's runtime profile; tests may set fields directly.
struct PlanOptions : RuntimeIdentity, RuntimeKernels, RuntimeLoop, RuntimeMesh, ZeroOptions, PlanRequest, EvidenceOptions {};

}  // namespace shardcast::planner
