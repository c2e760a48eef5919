#include "shared/runtime_spec.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/toml_reader.h"
#include "shared/train_config.h"

namespace shardcast {

bool RuntimeTerms::follows_config(const std::string& term) const {
  return std::find(from_config.begin(), from_config.end(), term) != from_config.end();
}

const std::vector<RuntimeTermSchema> kRuntimeTerms = {
    {"attention", "string", "flash | flash1 | flash_triton | flex_document | eager | eager_causal_blocks",
     "flash: a fused kernel (SDPA flash / memory-efficient, flash-attn 2) keeps only q, k, v, the output and the "
     "log-sum-exp, timed at the fitted attention_eff of FlashAttention-2's published rate (of cuDNN's where the "
     "runtime runs cuDNN attention); flash1: the same memory, SDPA's flash backend before torch 2.2 "
     "(FlashAttention version 1), timed at kFlashAttention1OverFlashAttention2 (0.43, planner/model/kernel_rates.h) of "
     "flash's rate; flash_triton: the same memory, llm-foundry's attn_impl triton (flash-attn's "
     "flash_attn_triton.py on triton-pre-mlir), timed as flash: no published rate of that kernel is held "
     "(configs/kernels/flash_attention.csv); flex_document: the same memory, FlexAttention with a per-document causal "
     "mask (torchtitan's block_causal language models): it skips the keys of other documents, so its work is the "
     "sum over the documents packed in a sequence of their causal work (data.mean_doc_len; planner/model/"
     "document_mask.h), timed at flash's rate (no published FlexAttention rate is held); eager: the fp32 softmax (b·heads·s·s) is kept for backward; eager_causal_blocks: "
     "eager in query blocks that score only the keys up to their last row (shared/causal_blocks.h), "
     "so the kept softmax is b·heads·causal_block_score_elements(s) (5/8 of s·s at s = 256)"},
    {"cross_entropy", "string", "fp32_upcast | fp32_upcast_shifted | fp32_upcast_chunked | native | fused | chunked_lm_head | chunked_rows",
     "how the loss is computed: logits up-cast to fp32 (fp32_upcast_shifted: then shifted into a second "
     "contiguous fp32 copy, transformers before 4.46; fp32_upcast_chunked: cross_entropy on 128-row chunks "
     "of the fp32 logits, litgpt's chunked_cross_entropy, whose backward holds the chunks' gradients and "
     "their cat, not a third fp32 tensor; chunked_lm_head: torchtitan's ChunkedLossWrapper, the LM head and an "
     "fp32 cross_entropy run forward and backward on one of 8 sequence chunks at a time, so no tensor of all "
     "logits exists: planner/model/chunked_loss.h; chunked_rows: shardcast-train's chunked_lm_loss, the "
     "logits saved and 1024 rows at a time in fp32, no fp32 copy of all logits), cross_entropy on the 16-bit "
     "logits, or a fused kernel that never materializes the fp32 logits"},
    {"rmsnorm", "string", "eager | eager_fp32_weight | fused",
     "eager: a Llama RMSNorm written in PyTorch ops with an fp32 up-cast ((4A + 28)·d bytes per token "
     "forward), the weight multiplied after the down-cast (torchtitan 2024, transformers): keeps the fp32 "
     "input for backward; eager_fp32_weight: the same with the weight multiplied in fp32 before the "
     "down-cast (litgpt): keeps the fp32 input and the fp32 normalised tensor; fused: one kernel reads the "
     "input and writes the output (2A·d), keeping its input and statistic"},
    {"rope", "string", "eager | fused",
     "eager: rotary embedding of q and k in PyTorch ops with an fp32 complex multiply ((2A + 16)·(d + kv) bytes "
     "per token forward); fused: one kernel reads q, k and writes them rotated (2A·(d + kv))"},
    {"swiglu", "string", "eager | fused",
     "eager: silu(w1·x) and its product with w3·x as two PyTorch ops (5A·f bytes per token forward); fused: one "
     "kernel reads both and writes the product (3A·f)"},
    {"gqa", "string", "native | repeated",
     "grouped-query attention: native (the kernel reads K and V at n_kv_heads, e.g. SDPA enable_gqa, "
     "flash-attn) | repeated (K and V copied to n_heads before attention — repeat_kv — and kept at that "
     "width for backward)"},
    {"qkv_output_kept", "bool", "",
     "one fused GEMM makes q, k and v, and with K/V at n_heads (MHA) attention saves v as a view of that "
     "output: the whole output stays alive for backward beside the rotated copies of q and k, A·(d + kv) "
     "bytes per token and block more than q, k and v (models with RoPE; grouped K/V are copied when "
     "repeated, so nothing more is kept there)"},
    {"block_program", "string", "torchtitan | unlisted",
     "torchtitan: the runtime's transformer block is torchtitan's eager Llama block (torchtitan/models/llama/"
     "model.py: RMSNorm with an fp32 up-cast, RoPE as an fp32 complex multiply, SDPA, SwiGLU), replayed tensor "
     "by tensor through the caching allocator when it runs eager (planner/model/allocator/block_tensor_sequence.h); unlisted: "
     "its tensors are not listed, a block's activations and transients replay as one block each"},
    {"torch", "string", "MAJOR.MINOR | unstated",
     "the torch release the runtime runs, as its lock file or requirements pin it (\"2.11\"), or unstated: a "
     "GPU preset's measured kernel table (gpu.kernel_table) times GEMMs, cuDNN attention and copies at its "
     "measured rates only for a runtime of the table's torch release (its `# torch:` line); any other runtime "
     "keeps the preset's fitted fractions (docs/cost-model.md §2.2)"},
    {"cudnn_attention", "string list", "8.0 | 8.6 | 8.9 | 9.0 | 10.0 | 10.3 | 12.0",
     "the CUDA compute capabilities (a GPU preset's gpu.compute_capability) on which the runtime's SDPA calls "
     "run cuDNN attention, timed at the preset's cudnn_attention_ceiling instead of its attention_ceiling "
     "(the flash backend): a backend priority the runtime sets (torchtitan's sdpa_kernel list), or torch's "
     "default for the torch and cuDNN it runs (cuDNN first on 9.0 and 10.0 from torch 2.11 with its bundled "
     "cuDNN 9.19); [] = the flash backend everywhere. Only with attention = \"flash\", or \"flex_document\", whose "
     "FlexAttention is timed at cuDNN attention's rate on the GPUs listed (no published FlexAttention rate is held)"},
    {"sac_saves_cudnn_attention", "bool", "",
     "op-level selective checkpointing (activation_checkpointing.mode = \"selective_op\") saves the output "
     "of aten._scaled_dot_product_cudnn_attention as it saves the flash and memory-efficient SDPA ops; false: "
     "the save list names only those two, so a block on cuDNN attention runs its attention forward again in "
     "backward"},
    {"reduce_dtypes", "string list", "fp32 | bf16 | fp16", "precision.reduce_dtype values the software accepts"},
    {"reduce_dtype_default", "string", "fp32 | bf16 | fp16", "what it reduces in when its config does not say"},
    {"reduce_dtype_is_param_dtype", "bool", "", "the reduction always runs in param_dtype"},
    {"master_dtypes", "string list", "fp32 | bf16",
     "precision.master_dtype values the software can run: fp32 (sharded parameters, gradients and AdamW "
     "moments in fp32, cast to param_dtype for compute) | bf16 (pure bf16: the model itself in bf16)"},
    {"master_dtype_default", "string", "fp32 | bf16", "what it runs when its config does not say"},
    {"reduce_copies_gradient", "bool", "",
     "the unsharded gradient is cloned before its reduction even when reduce_dtype = param_dtype"},
    {"reduce_output", "string", "shard_gradient | buffer",
     "where a unit's reduce-scatter writes: shard_gradient — its output becomes the sharded gradient, or is "
     "accumulated into it by FSDP (FSDP2 foreach_reduce's reduce_output, FSDP1 _reduce_grad's "
     "new_sharded_grad), nothing beyond it held; buffer — a new shard-sized buffer on the reduce stream, "
     "added into the sharded gradient and freed at the next unit's reduction (P/N·reduce_dtype bytes more "
     "per unit in flight)"},
    {"adamw_state", "string", "first_step | with_model",
     "when AdamW's exp_avg and exp_avg_sq exist: first_step — made at the first step() (torch.optim's "
     "_init_group), after the first backward, and one shard of temporaries charged in the update "
     "(docs/cost-model.md §2.2); with_model — allocated with the shards before the first step, no temporaries"},
    {"adamw_update", "string", "fused | foreach | for_loop",
     "the AdamW update as torch names its implementations: fused — one kernel (at::_fused_adamw_) reading p, g, "
     "m, v and writing p, m, v: 7 accesses per element; foreach — torch's multi-tensor _foreach_* ops, eight "
     "passes over the shard: 20; for_loop — the same ops one parameter at a time: 20 (planner/model/optimizer_step.h "
     "lists the calls)"},
    {"optimizer_state_dtypes", "string list", "master | bf16",
     "optimizer.state_dtype values the software can run: master (AdamW's exp_avg and exp_avg_sq in the master "
     "dtype, as torch.optim makes them) | bf16 (bf16 moments beside fp32 master weights, updated by a "
     "mixed-precision fused kernel: 2 bytes per moment element in memory and in the update's accesses)"},
    {"grad_clip", "string", "none | norm_and_scale | norm_in_update",
     "gradient clipping each step: none; norm_and_scale — a norm pass over the gradients, then every gradient "
     "multiplied by min(1, max_norm / norm) whether or not it exceeds max_norm (torch.nn.utils.clip_grad_norm_, "
     "FSDP1's clip_grad_norm_): 3 accesses per element; norm_in_update — the norm pass, the coefficient "
     "passed to the fused update as its grad scale: 1"},
    {"host_time", "string", "fitted | hidden | cuda_graphs",
     "fitted — the step carries the host time of the hardware profile's fit (unit_overhead_s per unit and "
     "pass, step_overhead_s per step: hooks, launches, data and logging of a Python training loop, fitted on "
     "published runs); hidden — the loop issues the device's work ahead of it and waits on it only once a "
     "step, so host time adds nothing to the step; cuda_graphs — forward and backward of every micro-step "
     "replay as one captured CUDA graph (torchtitan f84224af0): no host time per unit and pass, the step's "
     "own (optimizer, data, logging: step_overhead_s) stays (docs/cost-model.md §2.2)"},
    {"parameter_layout", "string", "per_parameter | flat_parameter",
     "how FSDP lays out a unit's parameters: per_parameter — each parameter sharded on its own (FSDP2 "
     "fully_shard): every all-gather copies the local shards into one buffer (copy-in) and the gathered "
     "buffer out into the parameters (copy-out), every reduce-scatter copies the gradients into one buffer in "
     "reduce_dtype (copy-in) and, when that is not param_dtype, casts the reduced shard back (copy-out); "
     "flat_parameter — one FlatParameter per unit (FSDP1, shardcast-train): the collectives read and write "
     "the flat buffer itself. A plan a measured kernel table times charges the copies as device memory "
     "traffic; the fitted fractions carry them (docs/cost-model.md §2.2)"},
    {"root_unit", "bool", "", "embedding, final norm and head form a root unit not resharded after forward"},
    {"grads_freed_between_steps", "bool", "", "sharded gradients are freed between steps (zero_grad set_to_none)"},
    {"sync_every_micro_step", "bool | \"config\"", "",
     "gradients are reduced (reduce-scattered into the shard) on every micro-step of gradient accumulation; "
     "false: non-final micro-steps keep an unsharded gradient sum and communicate nothing; \"config\": the "
     "runtime does either, as run.toml's parallelism.sync_every_micro_step says (unset: true)",
     "parallelism.sync_every_micro_step"},
    {"unsynced_gradient_dtype", "string", "param_dtype | reduce_dtype | fp32",
     "the dtype of the unsharded gradient sum a rank keeps across non-final micro-steps when it does not "
     "reduce every micro-step (FSDP1 no_sync: param_dtype; FSDP2: reduce_dtype; shardcast-train: fp32)"},
    {"fp8_all_gather", "bool", "", "with precision.fp8, the blocks' Linear weights are all-gathered in fp8"},
    {"fp8_weight_saved", "bool", "",
     "with precision.fp8, torchao's Float8Linear keeps each Linear's fp8-cast weight for backward (torchao "
     "before 2024-10-02 always; then unless Float8LinearConfig.force_recompute_fp8_weight_in_bwd; from "
     "2025-06-13 never): 1 byte per Linear weight of a block that is not checkpointed, from its forward to "
     "its backward"},
    {"fp8_input_saved", "bool", "",
     "with precision.fp8 = tensorwise, torchao's Float8Linear keeps each Linear's input cast to fp8 for "
     "backward instead of the input (torchao e1aee6354, 2024-07-29, to c6de9b42a, 2025-07-24; the row-wise "
     "recipes and torchao from c6de9b42a keep the high-precision input): a block that is not checkpointed "
     "keeps its two norm outputs and the MLP's down-projection input at 1 byte an element, the attention "
     "output (which attention keeps) with a 1-byte copy beside it (docs/cost-model.md §5.1)"},
    {"fp8_library", "string", "torchao | transformer_engine",
     "with precision.fp8, the float8 Linear it runs: torchao's Float8Linear, timed under torch.compile by "
     "torchao's measured per-shape speed-ups and eager by the same plus the cast traffic compile fuses "
     "(eager is never faster) | TransformerEngine's te.Linear (fused cast kernels), timed by the roofline of "
     "its GEMMs and casts (docs/cost-model.md §2.3)"},
    {"mxfp8_casts", "string", "compile_triton | triton_cuda",
     "with precision.fp8 = mxfp8, the cast kernels of torchao it runs: compile_triton (dim0 by MXTensor.to_mx "
     "under torch.compile, dim1 by the Triton kernel: torchao's mx recipe mxfp8_cublas with torchtitan's "
     "[mx] mxfp8_dim1_cast_kernel_choice = \"triton\") | triton_cuda (dim0 by the Triton kernel, dim1 by the "
     "CUDA kernel, RCEIL scales: torchao's MXFP8Linear); each at torchao's stated B200 rates "
     "(docs/cost-model.md §2.3)"},
    {"expandable_segments", "bool", "", "its launcher sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"},
    {"collective_buffers", "string", "rate_limited | record_stream",
     "rate_limited: the CPU waits before issuing more all-gathers (FSDP1 limit_all_gathers), so a block "
     "another stream used is reusable when that use ends; record_stream: no CPU rate limiter (FSDP2), "
     "so such blocks serve only requests made a compute task later (the caching allocator model, "
     "docs/cost-model.md §5.4)"},
    {"recompute_early_stop", "bool", "",
     "a checkpointed block's recompute stops once the last tensor saved for backward is packed again "
     "(non-reentrant torch.utils.checkpoint, torch >= 2.1): its last GEMM and the residual add after it "
     "are not run again"},
    {"fp32_logits_held", "bool", "",
     "the model returns the fp32 up-cast logits and the training loop keeps that tensor referenced through "
     "backward (no `del pred` before loss.backward()): 4 bytes per logit stay live while the loss's "
     "gradients are made, and as long as outputs_kept says (cross_entropy fp32_upcast, fp32_upcast_shifted or "
     "fp32_upcast_chunked; Lightning Fabric's wrapper up-casts the outputs it returns under its 16-bit and mixed "
     "precision plugins)"},
    {"use_cache", "bool", "",
     "the model returns every layer's K and V with its output (transformers with config.use_cache = true "
     "in training and without transformers' own gradient checkpointing, which turns it off): "
     "2·A·kv bytes per token and layer, kept as long as outputs_kept says"},
    {"outputs_kept", "string", "backward | next_forward | step_end",
     "how long the training loop keeps the model's output (what fp32_logits_held and use_cache put in "
     "it): backward — until the micro-step's backward has run; next_forward — until the next forward "
     "returns (`pred = model(x)` rebinds its loop variable only then), so the step's last output "
     "lives through the optimizer step into the next step's first forward; step_end — as next_forward "
     "within the step, the last one freed when the step's function returns"},
    {"loss_in_model", "bool", "",
     "the model's forward computes the loss (transformers' LlamaForCausalLM given labels), so a previous "
     "output the loop still holds is let go after the loss's forward, not before it"},
    {"compile", "bool", "", "it can run precision.compile = true"},
    {"fp8_recipes", "string list", "tensorwise | rowwise | rowwise_with_gw_hp | mxfp8 | nvfp4",
     "the precision.fp8 recipes it can run (torchao's Float8LinearRecipeName; mxfp8 and nvfp4: torchao's MXFP8 and "
     "NVFP4 training Linears, on compute capability 10.0 and up only); [] = none only"},
    {"mesh", "string list", "tp | cp | pp | tp_async | dp_replicate | cp_alltoall",
     "the device mesh dimensions it runs beside FSDP (parallelism.tp, cp, pp, tp_async: shared/train_config.h); [] = 1-D "
     "FSDP only, and a plan with any of them above 1 is refused by name; dp_replicate: it runs data-parallel "
     "replicas (HSDP's, or no_shard's) beside tp, cp or pp, which a plan needs to have both; cp_alltoall: its "
     "context parallel can exchange K/V shards all-to-all (parallelism.cp_rotate = \"alltoall\"), not only by "
     "all-gather"},
    {"loss_parallel", "bool", "",
     "with parallelism.tp > 1 (stated only by a runtime whose mesh lists tp): true — the head's output stays "
     "sharded on the vocabulary and the loss runs on each rank's shard (torch.distributed.tensor.parallel."
     "loss_parallel), so the loss's tensors and work are 1/tp per rank; false — the head's output is all-gathered "
     "to every tp rank (T·V·A bytes gathered over the tp group in forward; its backward takes the rank's slice "
     "locally) and every tp rank runs the whole loss on the whole logits (docs/cost-model.md §12)",
     nullptr, "tp"},
    {"tp_sequence_parallel", "string", "always | without_pp",
     "with parallelism.tp > 1 (stated only by a runtime whose mesh lists tp): always — tensor parallel runs with "
     "sequence parallel (norms and the residual stream on sequence shards, an all-gather before each "
     "column-parallel GEMM and a reduce-scatter after each row-parallel one; the embedding's output "
     "reduce-scattered and the head column-parallel); without_pp — so where pp = 1, but a pipeline stage runs "
     "basic TP: only the blocks' Linears are split, an all-reduce after each row-parallel one in forward and after "
     "each column-parallel one's input gradient in backward, the norms, the residual stream, the embedding and the "
     "head whole on every tp rank, and the stages exchange whole activations (KempnerForge; Korthikanti et al. "
     "2022 Table 2; docs/cost-model.md §12)",
     nullptr, "tp"},
    {"tp_embedding", "string", "vocab_parallel | replicated",
     "with parallelism.tp > 1 (stated only by a runtime whose mesh lists tp): vocab_parallel — the token "
     "embedding's rows are split over the tp group (RowwiseParallel), its partial output reduce-scattered to "
     "sequence shards; replicated — every tp rank holds the whole table (FSDP shards it over the data-parallel "
     "ranks only) and looks up all T tokens, and sequence parallel's first norm takes its sequence shard "
     "locally, with no collective (docs/cost-model.md §12)",
     nullptr, "tp"},
    {"tp_column_inputs", "string", "gathered_once | per_projection",
     "with parallelism.tp > 1 (stated only by a runtime whose mesh lists tp): gathered_once — the attention's and "
     "the FFN's input is redistributed once before their column-parallel projections (torchtitan's "
     "PrepareModuleInput): under sequence parallel one all-gather of T·d each in forward and one reduce-scatter of "
     "its gradient in backward, under basic TP one all-reduce of its gradient in backward; per_projection — each "
     "column-parallel projection (q, k and v; the MLP's gate and up, or its one up projection) redistributes its "
     "own input: one collective per projection each way, and under sequence parallel each gathered copy kept for "
     "its weight gradient (KempnerForge's ColwiseParallel(input_layouts=Shard(1)) per projection; "
     "docs/cost-model.md §12)",
     nullptr, "tp"},
    {"loss_parallel_impl", "string", "dtensor | vocab_parallel_fn",
     "with parallelism.tp > 1 and loss_parallel = true (stated only by a runtime whose mesh lists tp): dtensor — "
     "torch.distributed.tensor.parallel.loss_parallel's handlers on the vocabulary-sharded fp32 logits (loss.py "
     "_log_softmax: the shifted logits beside the input and exp or the result, 12 bytes per logit shard beyond "
     "the 16-bit logits at the forward's peak; _nll_loss_and_log_softmax_backward: zeros_like, exp, their sum "
     "and its product beside the saved log-probabilities, 16), 4 bytes per logit more than the cross_entropy "
     "term's fp32 tensors each way; vocab_parallel_fn — the loss as the cross_entropy term counts it on the "
     "rank's vocabulary shard (shardcast-train's VocabParallelLossFn; docs/cost-model.md §12)",
     nullptr, "tp"},
    {"tp_qk_norm", "string", "sharded | gathered",
     "with parallelism.tp > 1 and model.qk_norm (stated only by a runtime whose mesh lists tp): sharded — "
     "q_norm and k_norm run on the rank's heads (torchtitan SequenceParallel(sequence_dim=2) since 8c1d1c5fc); "
     "gathered — their output is redistributed to Replicate (torchtitan's NoParallel from f9e8897a6 to "
     "8c1d1c5fc, pytorch/torchtitan#1867): q and k all-gathered over the tp group in forward and their "
     "gradients in backward, RoPE run on every head, its fp32 chain a transient of the whole q and k width "
     "(docs/cost-model.md §12)",
     nullptr, "tp"},
    {"pp_zero_bubble_checkpointing", "bool", "",
     "with parallelism.pp > 1 (stated only by a runtime whose mesh lists pp): true — it runs the zero-bubble "
     "schedules (pp_schedule InterleavedZeroBubble, ZBVZeroBubble) with activation checkpointing as the planner "
     "plans them; false — such a plan is refused by name: the split input- and weight-gradient backward of "
     "torch.distributed.pipelining's zero-bubble schedules and torch.utils.checkpoint made these runs abnormally "
     "slow (pytorch/torchtitan#773: 13 tokens/s against 128 for Interleaved1F1B on the same 512 GPUs; "
     "pytorch/pytorch#136766), which the planner does not model",
     nullptr, "pp"},
    {"pp_reshard_after_forward", "bool", "",
     "with parallelism.pp > 1 (stated only by a runtime whose mesh lists pp): the reshard_after_forward its "
     "pipeline stages' FSDP2 modules take. torch.distributed.pipelining runs every backward but the step's last "
     "with set_reshard_after_backward(False) (stage.py backward_maybe_with_nosync), so either way a stage's "
     "parameters are all gathered at the end of each backward and the plan holds them beside the step. "
     "false — gathered at the step's first forward and kept: one all-gather per unit a step (torchtitan "
     "since d33851c4a: 'When using Pipeline Parallelism, generally zero-2 is best'); true — freed after each "
     "forward and gathered again by the next backward: one all-gather per unit a micro-batch (docs/cost-model.md §12)",
     nullptr, "pp"},
    {"pp_schedules", "string list", "1F1B | Interleaved1F1B | GPipe | ZBVZeroBubble | InterleavedZeroBubble",
     "with parallelism.pp > 1 (stated only by a runtime whose mesh lists pp): the pipeline schedules it runs "
     "(parallelism.pp_schedule, torch.distributed.pipelining's names); a plan with another is refused by name and "
     "search tries these only",
     nullptr, "pp"},
    {"pp_split", "string", "effective_layers | blocks_base_first | blocks",
     "with parallelism.pp > 1 (stated only by a runtime whose mesh lists pp): how it splits the model into S = pp "
     "· stages-per-rank pipeline stages when the config gives no split. effective_layers — L + 2 "
     "layer-equivalents (the embedding and the norm + output one each), ⌊(L + 2)/S⌋ a stage and the first "
     "(L + 2) mod S stages one more (torchtitan generate_llm_fqn_per_model_part / generate_split_points since "
     "f64cf3c18); blocks_base_first — ⌊L/S⌋ blocks on the first stage, one more on each middle stage while L mod "
     "S lasts, the rest on the last (torchtitan generate_split_points, cec7fb6fc to f64cf3c18); blocks — ⌊L/S⌋ "
     "blocks a stage, the first L mod S stages one more, the ends not counted (KempnerForge "
     "compute_layer_assignment). The planner times the slowest rank and reads the first and last ranks' memory "
     "with the blocks this split gives them (docs/cost-model.md §12)",
     nullptr, "pp"},
    {"gloo_reduce_scatter", "string", "ring | alltoall",
     "on its CPU path (stated only by a runtime whose devices list cpu), how its Gloo reduce-scatter runs: ring — "
     "n − 1 ring steps; alltoall — one all-to-all round (the n − 1 pairwise exchanges posted together) and a "
     "local sum, the bytes of a ring (shardcast-train's GlooCollectives::reduce_scatter_async: LibTorch 1.13's "
     "Gloo has no reduce_scatter). The planner times it at one step's latency (docs/cost-model.md §3)",
     nullptr, nullptr, "cpu"},
    {"selective_op", "bool", "", "it can run activation_checkpointing.mode = \"selective_op\""},
    {"selective_blocks", "bool", "", "it can run activation_checkpointing.mode = \"selective\" (every k-th block)"},
};

const RuntimeTermSchema* find_runtime_term(const std::string& key) {
  for (const RuntimeTermSchema& t : kRuntimeTerms)
    if (key == t.key) return &t;
  return nullptr;
}

namespace {

std::vector<std::string> split_allowed(const char* allowed) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = allowed; *p; ++p) {
    if (*p == '|') {
      out.push_back(cur);
      cur.clear();
    } else if (*p != ' ') {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

void check_allowed(const RuntimeTermSchema& s, const std::string& v, const std::string& file, const std::string& key) {
  const auto allowed = split_allowed(s.allowed);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    throw ConfigError(file, key, fmt::format("\"{}\" is not allowed (allowed: {})", v, s.allowed));
}

bool* bool_field(RuntimeTerms& t, const std::string& key) {
  if (key == "qkv_output_kept") return &t.qkv_output_kept;
  if (key == "sac_saves_cudnn_attention") return &t.sac_saves_cudnn_attention;
  if (key == "reduce_dtype_is_param_dtype") return &t.reduce_dtype_is_param_dtype;
  if (key == "reduce_copies_gradient") return &t.reduce_copies_gradient;
  if (key == "root_unit") return &t.root_unit;
  if (key == "grads_freed_between_steps") return &t.grads_freed_between_steps;
  if (key == "sync_every_micro_step") return &t.sync_every_micro_step;
  if (key == "fp8_all_gather") return &t.fp8_all_gather;
  if (key == "fp8_weight_saved") return &t.fp8_weight_saved;
  if (key == "fp8_input_saved") return &t.fp8_input_saved;
  if (key == "expandable_segments") return &t.expandable_segments;
  if (key == "recompute_early_stop") return &t.recompute_early_stop;
  if (key == "fp32_logits_held") return &t.fp32_logits_held;
  if (key == "use_cache") return &t.use_cache;
  if (key == "loss_in_model") return &t.loss_in_model;
  if (key == "compile") return &t.compile;
  if (key == "selective_op") return &t.selective_op;
  if (key == "selective_blocks") return &t.selective_blocks;
  if (key == "loss_parallel") return &t.loss_parallel;
  if (key == "pp_zero_bubble_checkpointing") return &t.pp_zero_bubble_checkpointing;
  if (key == "pp_reshard_after_forward") return &t.pp_reshard_after_forward;
  return nullptr;
}

std::string* string_field(RuntimeTerms& t, const std::string& key) {
  if (key == "attention") return &t.attention;
  if (key == "cross_entropy") return &t.cross_entropy;
  if (key == "rmsnorm") return &t.rmsnorm;
  if (key == "rope") return &t.rope;
  if (key == "swiglu") return &t.swiglu;
  if (key == "gqa") return &t.gqa;
  if (key == "block_program") return &t.block_program;
  if (key == "torch") return &t.torch;
  if (key == "fp8_library") return &t.fp8_library;
  if (key == "mxfp8_casts") return &t.mxfp8_casts;
  if (key == "reduce_dtype_default") return &t.reduce_dtype_default;
  if (key == "master_dtype_default") return &t.master_dtype_default;
  if (key == "collective_buffers") return &t.collective_buffers;
  if (key == "unsynced_gradient_dtype") return &t.unsynced_gradient_dtype;
  if (key == "outputs_kept") return &t.outputs_kept;
  if (key == "reduce_output") return &t.reduce_output;
  if (key == "adamw_state") return &t.adamw_state;
  if (key == "adamw_update") return &t.adamw_update;
  if (key == "grad_clip") return &t.grad_clip;
  if (key == "host_time") return &t.host_time;
  if (key == "parameter_layout") return &t.parameter_layout;
  if (key == "tp_sequence_parallel") return &t.tp_sequence_parallel;
  if (key == "tp_embedding") return &t.tp_embedding;
  if (key == "tp_column_inputs") return &t.tp_column_inputs;
  if (key == "loss_parallel_impl") return &t.loss_parallel_impl;
  if (key == "tp_qk_norm") return &t.tp_qk_norm;
  if (key == "gloo_reduce_scatter") return &t.gloo_reduce_scatter;
  if (key == "pp_split") return &t.pp_split;
  return nullptr;
}

// Read the terms of one table into `t`; returns the keys that were given.
std::vector<std::string> read_terms(const toml::table& table, const std::string& file, const std::string& prefix,
                                    RuntimeTerms& t) {
  std::vector<std::string> given;
  for (auto&& [k, node] : table) {
    const std::string key(k.str());
    const RuntimeTermSchema* it = find_runtime_term(key);
    if (!it) {
      std::vector<std::string> names;
      for (const auto& s : kRuntimeTerms) names.push_back(s.key);
      std::string detail = "unknown runtime term";
      const std::string best = closest_match(key, names);
      if (!best.empty()) detail += "; did you mean '" + prefix + best + "'?";
      detail += " (allowed:";
      for (const auto& n : names) detail += " " + n;
      throw ConfigError(file, prefix + key, detail + ")");
    }
    const std::string path = prefix + key;
    t.from_config.erase(std::remove(t.from_config.begin(), t.from_config.end(), key), t.from_config.end());
    if (bool* b = bool_field(t, key)) {
      if (it->config_key && node.is_string() && node.as_string()->get() == kFromConfig) {
        // The config key's default, used when run.toml leaves it unset (only one such term).
        *b = ParallelismConfig::kSyncEveryMicroStepDefault;
        t.from_config.push_back(key);
      } else if (!node.is_boolean()) {
        throw ConfigError(file, path, it->config_key
                                          ? fmt::format("expected a boolean (true | false) or \"{}\" ({} decides)",
                                                        kFromConfig, it->config_key)
                                          : std::string("expected a boolean (true | false)"));
      } else {
        *b = node.as_boolean()->get();
      }
    } else if (std::string* s = string_field(t, key)) {
      if (!node.is_string()) throw ConfigError(file, path, fmt::format("expected a string ({})", it->allowed));
      *s = node.as_string()->get();
      if (key == "torch") {
        if (*s != "unstated" && !is_torch_release(*s))
          throw ConfigError(file, path, fmt::format("\"{}\" is not a torch release (allowed: {}, e.g. \"2.11\")", *s,
                                                    it->allowed));
      } else {
        check_allowed(*it, *s, file, path);
      }
    } else {  // string lists: reduce_dtypes, master_dtypes, optimizer_state_dtypes, pp_schedules (non-empty), fp8_recipes, cudnn_attention (may be empty)
      const bool may_be_empty = key == "fp8_recipes" || key == "cudnn_attention" || key == "mesh";
      std::vector<std::string>& list = key == "fp8_recipes"       ? t.fp8_recipes
                                       : key == "mesh"            ? t.mesh
                                       : key == "pp_schedules"    ? t.pp_schedules
                                       : key == "cudnn_attention" ? t.cudnn_attention
                                       : key == "master_dtypes"   ? t.master_dtypes
                                       : key == "optimizer_state_dtypes" ? t.optimizer_state_dtypes
                                                                  : t.reduce_dtypes;
      const toml::array* a = node.as_array();
      if (!a || (a->empty() && !may_be_empty))
        throw ConfigError(file, path, fmt::format("expected a {}list of strings ({})", may_be_empty ? "" : "non-empty ",
                                                  it->allowed));
      list.clear();
      for (const auto& e : *a) {
        if (!e.is_string()) throw ConfigError(file, path, fmt::format("expected strings ({})", it->allowed));
        list.push_back(e.as_string()->get());
        check_allowed(*it, list.back(), file, path);
      }
    }
    given.push_back(key);
  }
  return given;
}

}  // namespace

bool is_torch_release(const std::string& s) {
  const size_t dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != dot && (s[i] < '0' || s[i] > '9')) return false;
  return true;
}

bool is_iso_date(const std::string& s) {
  auto digits = [&](size_t from, size_t n) {
    for (size_t i = from; i < from + n; ++i)
      if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    return true;
  };
  if (s.size() != 7 && s.size() != 10) return false;
  if (!digits(0, 4) || s[4] != '-' || !digits(5, 2)) return false;
  const int month = std::stoi(s.substr(5, 2));
  if (month < 1 || month > 12) return false;
  if (s.size() == 7) return true;
  if (s[7] != '-' || !digits(8, 2)) return false;
  const int day = std::stoi(s.substr(8, 2));
  return day >= 1 && day <= 31;
}

namespace {

// name, description, framework, the dates of its generation and the devices it runs on.
void read_runtime_header(TableReader& r, const std::string& file, RuntimeSpec& rt) {
  r.get("name", rt.name);
  r.get("description", rt.description);
  r.get("framework", rt.framework);
  if (rt.framework.empty()) rt.framework = rt.name;
  r.get("from_date", rt.from_date);
  r.get("until_date", rt.until_date);
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"from_date", &rt.from_date},
                                   {"until_date", &rt.until_date}})
    if (!value->empty() && !is_iso_date(*value))
      throw ConfigError(file, key, fmt::format("\"{}\" is not a date (YYYY-MM-DD)", *value));
  std::vector<std::string> devices;
  if (r.get("devices", devices)) {
    const bool ok = !devices.empty() && std::all_of(devices.begin(), devices.end(), [](const std::string& x) {
      return x == "gpu" || x == "cpu";
    });
    if (!ok) throw ConfigError(file, "devices", "expected a non-empty list of \"gpu\" and \"cpu\"");
    rt.devices = devices;
  }
  if (!rt.from_date.empty() && !rt.until_date.empty() && rt.from_date >= rt.until_date)
    throw ConfigError(file, "until_date",
                      fmt::format("\"{}\" is not after from_date \"{}\"", rt.until_date, rt.from_date));
}

// Every term of kRuntimeTerms that applies to rt (its mesh, its devices) is stated, and none
// that does not.
void check_terms_stated(const RuntimeSpec& rt, const std::vector<std::string>& given, const std::string& file) {
  for (const auto& s : kRuntimeTerms) {
    const bool stated = std::find(given.begin(), given.end(), s.key) != given.end();
    const std::vector<std::string>& mesh = rt.terms.mesh;
    const bool mesh_applies = !s.needs_mesh || std::find(mesh.begin(), mesh.end(), s.needs_mesh) != mesh.end();
    const bool device_applies =
        !s.needs_device || std::find(rt.devices.begin(), rt.devices.end(), s.needs_device) != rt.devices.end();
    const bool applies = mesh_applies && device_applies;
    if (!stated && applies)
      throw ConfigError(file, std::string("terms.") + s.key,
                        s.needs_mesh     ? fmt::format("missing: every runtime whose mesh lists {} states it ({}: {})",
                                                       s.needs_mesh, s.kind, s.meaning)
                        : s.needs_device ? fmt::format("missing: every runtime whose devices list {} states it ({}: {})",
                                                       s.needs_device, s.kind, s.meaning)
                                         : fmt::format("missing: every runtime states every term ({}: {})", s.kind,
                                                       s.meaning));
    if (stated && !mesh_applies)
      throw ConfigError(file, std::string("terms.") + s.key,
                        fmt::format("is a term of how a runtime runs {}, but its mesh does not list {} (stated only "
                                    "by a runtime that runs it)",
                                    s.needs_mesh, s.needs_mesh));
    if (stated && !device_applies)
      throw ConfigError(file, std::string("terms.") + s.key,
                        fmt::format("is a term of a runtime's path on {}, but its devices do not list {} (stated "
                                    "only by a runtime that runs there)",
                                    s.needs_device, s.needs_device));
  }
}

// [sources]: a public source for every term given (and for no other), [sources.gpu] and
// [sources.zero] for the tables of those names.
void read_sources(TableReader& r, const std::string& file, const std::vector<std::string>& given, RuntimeSpec& rt) {
  const toml::table* sources = r.table("sources");
  if (!sources) throw ConfigError(file, "sources", "missing table [sources] (a public source for every term)");
  for (auto&& [k, node] : *sources) {
    const std::string key(k.str());
    if (key == "gpu" || key == "zero") {
      if (!node.is_table()) throw ConfigError(file, "sources." + key, "expected a table");
      for (auto&& [gk, gn] : *node.as_table()) {
        if (!gn.is_string()) throw ConfigError(file, "sources." + key + "." + std::string(gk.str()), "expected a string");
        rt.sources[key + "." + std::string(gk.str())] = gn.as_string()->get();
      }
      continue;
    }
    if (!node.is_string()) throw ConfigError(file, "sources." + key, "expected a string");
    rt.sources[key] = node.as_string()->get();
  }
  for (const auto& k : given)
    if (!rt.sources.count(k) || rt.sources.at(k).empty())
      throw ConfigError(file, "sources." + k, "missing: every term cites the public source that states it");
  for (const auto& [k, v] : rt.sources)
    if (std::find(given.begin(), given.end(), k) == given.end())
      throw ConfigError(file, "sources." + k, "a source for a term that is not given");
}

// What each set of terms (the CPU path's and the GPU's) must hold together.
void check_terms_agree(const RuntimeSpec& rt, const std::string& file) {
  for (const RuntimeTerms* t : {&rt.terms, rt.gpu_terms ? &*rt.gpu_terms : nullptr}) {
    if (!t) continue;
    if (std::find(t->reduce_dtypes.begin(), t->reduce_dtypes.end(), t->reduce_dtype_default) == t->reduce_dtypes.end() &&
        !t->reduce_dtype_is_param_dtype)
      throw ConfigError(file, "terms.reduce_dtype_default",
                        fmt::format("\"{}\" is not in reduce_dtypes", t->reduce_dtype_default));
    if (std::find(t->master_dtypes.begin(), t->master_dtypes.end(), t->master_dtype_default) == t->master_dtypes.end())
      throw ConfigError(file, "terms.master_dtype_default",
                        fmt::format("\"{}\" is not in master_dtypes", t->master_dtype_default));
    const auto& states = t->optimizer_state_dtypes;
    if (std::find(states.begin(), states.end(), "bf16") != states.end() && t->adamw_update != "fused")
      throw ConfigError(file, "terms.optimizer_state_dtypes",
                        fmt::format("lists \"bf16\" but adamw_update is \"{}\": bf16 moments run only in the fused "
                                    "update (torch's mixed-precision _fused_adamw_)",
                                    t->adamw_update));
    if (!t->cudnn_attention.empty() && t->attention != "flash" && t->attention != "flex_document")
      throw ConfigError(file, "terms.cudnn_attention",
                        fmt::format("lists compute capabilities but attention is \"{}\": cuDNN attention is an "
                                    "SDPA backend (attention = \"flash\"; flex_document is timed at its rate)",
                                    t->attention));
  }
}

}  // namespace

RuntimeSpec parse_runtime_toml(const std::string& text, const std::string& file) {
  toml::table root = parse_toml(text, file);
  RuntimeSpec rt;
  rt.file = file;
  TableReader r(root, file, "");
  read_runtime_header(r, file, rt);
  const toml::table* terms = r.table("terms");
  if (!terms) throw ConfigError(file, "terms", "missing table [terms] (every runtime term with its value)");
  std::vector<std::string> given = read_terms(*terms, file, "terms.", rt.terms);
  check_terms_stated(rt, given, file);
  if (const toml::table* gpu = r.table("gpu")) {
    RuntimeTerms g = rt.terms;
    for (const auto& k : read_terms(*gpu, file, "gpu.", g)) given.push_back("gpu." + k);
    rt.gpu_terms = g;
  }
  if (const toml::table* zero = r.table("zero")) {
    rt.zero.emplace();
    for (const auto& k : read_zero_terms(*zero, file, *rt.zero)) given.push_back(k);
  }
  read_sources(r, file, given, rt);
  r.finish();
  check_terms_agree(rt, file);
  return rt;
}

bool RuntimeSpec::runs_on(bool gpu) const {
  return std::find(devices.begin(), devices.end(), gpu ? "gpu" : "cpu") != devices.end();
}

RuntimeSpec load_runtime(const std::string& name_or_file) {
  const auto p = resolve_preset(name_or_file, "runtimes", "runtime");
  RuntimeSpec rt = parse_runtime_toml(read_config_text(p), p.string());
  if (rt.name.empty()) rt.name = p.stem().string();
  if (rt.framework.empty()) rt.framework = rt.name;
  return rt;
}

std::vector<std::string> list_runtime_presets() { return list_presets_in("runtimes"); }

}  // namespace shardcast
