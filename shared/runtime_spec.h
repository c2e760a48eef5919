// RuntimeSpec: the software that executes a plan (shardcast-train, torchtitan, fms-fsdp,
// llm-foundry, accelerate), as far as it changes memory or time outside TrainConfig.
//
// What it is: the contents of configs/runtimes/NAME.toml — attention kernel, loss upcast,
// reduce dtypes the software accepts, gradient copies in composed collectives, root-unit and
// gradient-lifetime behaviour, allocator settings, features it can run — each term with the
// public source that states it. A runtime may have a `[gpu]` table that overrides terms on GPU
// hardware (shardcast-train's Gloo/CPU path and its NCCL path differ where the code differs).
// The schema is one table (kRuntimeTerms) that drives the parser, the writer of
// docs/configuration.md's runtime section and the tests.
// What it is not: the planner's options (planner/model/runtime.h turns a RuntimeSpec into
// PlanOptions) and nothing per published row. Plain value type, thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shared/zero_terms.h"

namespace shardcast {

struct RuntimeTerms {
  std::string attention = "flash";            // flash | flash1 | flash_triton | flex_document | eager | eager_causal_blocks
  std::string cross_entropy = "fp32_upcast";  // fp32_upcast | fp32_upcast_shifted | fp32_upcast_chunked | native | fused | chunked_lm_head
  std::string rmsnorm = "eager";              // eager | eager_fp32_weight | fused (one RMSNorm kernel)
  std::string rope = "eager";                 // eager | fused (one rotary kernel for q and k)
  std::string swiglu = "eager";               // eager | fused (one silu(gate)·up kernel)
  std::string gqa = "repeated";               // native | repeated (K, V copied to n_heads before attention)
  bool qkv_output_kept = false;               // attention's v is a view of one fused q/k/v GEMM output, kept whole
  // The block program listed tensor by tensor for the allocator replay (planner/model/allocator/block_tensor_sequence.h):
  // torchtitan (its model.py Llama block, eager) | unlisted (activations and transients replay as lumps).
  std::string block_program = "unlisted";
  // The torch release it runs, "MAJOR.MINOR" (what its lock file or requirements pin), or
  // "unstated". A GPU preset's measured kernel table times its kernels only when this is the
  // table's torch release (planner/model/kernel_table.h).
  std::string torch = "unstated";
  // CUDA compute capabilities ("9.0", "10.0", ...) on which its SDPA calls run cuDNN attention
  // (a backend priority the runtime sets, or torch's default for its torch and cuDNN); [] = the
  // flash backend everywhere. With attention = "flash" only.
  std::vector<std::string> cudnn_attention;
  bool sac_saves_cudnn_attention = true;      // op SAC's save list holds the cuDNN SDPA op too
  std::vector<std::string> reduce_dtypes{"fp32", "bf16"};  // accepted precision.reduce_dtype
  std::string reduce_dtype_default = "fp32";  // what the software reduces in when not told
  bool reduce_dtype_is_param_dtype = false;   // reduction always in param_dtype (accelerate)
  bool reduce_copies_gradient = false;        // unsharded gradient cloned before reduction
  // Where the reduce-scatter writes: shard_gradient (its output becomes, or is accumulated by
  // FSDP into, the sharded gradient) | buffer (a shard-sized buffer on the reduce stream,
  // added into the sharded gradient, freed at the next unit's reduction).
  std::string reduce_output = "shard_gradient";
  // When AdamW's exp_avg and exp_avg_sq are made: first_step (torch.optim.AdamW's _init_group)
  // | with_model (allocated with the shards).
  std::string adamw_state = "first_step";
  // The update's implementation, as torch names them: fused (at::_fused_adamw_) | foreach (the
  // multi-tensor _foreach_* ops, torch's default on CUDA) | for_loop (one parameter at a time).
  std::string adamw_update = "foreach";
  // Gradient clipping each step: none | norm_and_scale (a norm pass, then every gradient
  // multiplied by the clamped coefficient) | norm_in_update (the norm pass; the coefficient
  // rides into the fused update as its grad scale). planner/model/optimizer_step.h counts each.
  std::string grad_clip = "norm_and_scale";
  // fitted (the host time of the hardware profile's fit: unit_overhead_s, step_overhead_s, a
  // Python training loop's) | hidden (a loop that issues device work ahead of the device and
  // waits on it once a step: no host time on the step) | cuda_graphs (forward and backward replay as
  // one CUDA graph per micro-step: no host time per unit, the step's own stays).
  std::string host_time = "fitted";
  // How FSDP lays out a unit's parameters: per_parameter (FSDP2 fully_shard: each all-gather and
  // reduce-scatter copies into and out of one buffer) | flat_parameter (FSDP1's FlatParameter,
  // shardcast-train: the collectives read and write the flat buffer itself).
  std::string parameter_layout = "flat_parameter";
  // precision.master_dtype values it can run (fp32: fp32 master weights | bf16: pure bf16) and
  // the one it runs when its config does not say (a published row).
  std::vector<std::string> master_dtypes{"fp32"};
  // optimizer.state_dtype values it can run: master (AdamW's moments in the master dtype) | bf16.
  std::vector<std::string> optimizer_state_dtypes{"master"};
  std::string master_dtype_default = "fp32";
  bool root_unit = true;                      // embedding/norm/head form an un-resharded root
  bool grads_freed_between_steps = true;      // zero_grad(set_to_none=True)
  // Reduce gradients on every micro-step. A runtime that follows run.toml's
  // parallelism.sync_every_micro_step says `sync_every_micro_step = "config"`: the term is then
  // listed in from_config and this holds the value for a config that leaves the key unset.
  bool sync_every_micro_step = true;
  // The dtype of the unsharded gradient sum kept across non-final micro-steps when gradients
  // are not reduced every micro-step: param_dtype (FSDP1 no_sync) | reduce_dtype (FSDP2) | fp32.
  std::string unsynced_gradient_dtype = "param_dtype";
  bool fp8_all_gather = false;                // with precision.fp8: Linear weights gathered in fp8
  bool fp8_weight_saved = false;              // with precision.fp8: each Linear's fp8 weight kept for backward
  bool fp8_input_saved = false;               // with fp8 tensorwise: each Linear keeps its input cast to fp8, not the input
  // The float8 Linear it runs: torchao (Float8Linear; eager, its scaling and cast kernels run
  // one by one) | transformer_engine (te.Linear, whose cast kernels are fused CUDA kernels).
  std::string fp8_library = "torchao";
  // torchao's MXFP8 cast kernels it runs (with precision.fp8 = mxfp8): compile_triton (dim0 by
  // MXTensor.to_mx under torch.compile, dim1 by the Triton kernel) | triton_cuda (dim0 Triton, dim1
  // CUDA, RCEIL scales: torchao's MXFP8Linear). planner/model/fp8_recipe.h times each.
  std::string mxfp8_casts = "compile_triton";
  bool expandable_segments = false;           // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  std::string collective_buffers = "rate_limited";  // rate_limited | record_stream
  bool recompute_early_stop = false;          // checkpoint recompute stops before the last GEMM
  bool fp32_logits_held = false;              // the model returns fp32 logits and the loop keeps them
  bool use_cache = false;                     // the model returns every layer's K and V (KV cache)
  std::string outputs_kept = "backward";      // backward | next_forward | step_end: how long the loop keeps the output
  bool loss_in_model = false;                 // the model's forward computes the loss (labels passed in)
  bool compile = true;                        // can run precision.compile
  // precision.fp8 recipes it can run besides "none" (tensorwise | rowwise | rowwise_with_gw_hp | mxfp8 | nvfp4);
  // empty = bf16 only.
  std::vector<std::string> fp8_recipes{"tensorwise", "rowwise", "rowwise_with_gw_hp"};
  // The mesh dimensions it runs beside FSDP (tp | cp | pp | tp_async); empty = 1-D FSDP only.
  std::vector<std::string> mesh;
  // With tp > 1 (terms a runtime states only when its mesh lists tp): the loss runs on
  // vocabulary-sharded logits (loss parallel); false: the head's logits are all-gathered and every
  // tp rank runs the whole loss.
  bool loss_parallel = true;
  // With tp > 1: always | without_pp (a pipeline stage runs basic TP without sequence parallel).
  std::string tp_sequence_parallel = "always";
  // With tp > 1: vocab_parallel (the token embedding's rows split over tp) | replicated.
  std::string tp_embedding = "vocab_parallel";
  // With tp > 1: gathered_once (the attention's and the FFN's input redistributed once before
  // their column-parallel projections) | per_projection (each projection redistributes its own).
  std::string tp_column_inputs = "gathered_once";
  // With tp > 1 and loss_parallel: dtensor (torch's loss_parallel on a vocabulary-sharded DTensor)
  // | vocab_parallel_fn (shardcast-train's own autograd function, model/tensor_parallel.h).
  std::string loss_parallel_impl = "dtensor";
  // With tp > 1 and model.qk_norm: sharded (q_norm, k_norm on the rank's heads) | gathered (their
  // output redistributed to Replicate: q and k all-gathered over tp, RoPE on every head).
  std::string tp_qk_norm = "sharded";
  // With pp > 1: the zero-bubble schedules (InterleavedZeroBubble, ZBVZeroBubble) run as planned
  // with activation checkpointing; false: refused (a known bug makes them abnormally slow).
  bool pp_zero_bubble_checkpointing = true;
  // With pp > 1: true — a stage's FSDP modules reshard after each forward (each micro-batch's
  // backward gathers them again); false — gathered once a step and kept (torchtitan's zero-2).
  bool pp_reshard_after_forward = false;
  // With pp > 1: how it splits the model into pipeline stages when no split is given —
  // effective_layers (L + 2 layer-equivalents, the embedding and the output one each, ⌊(L+2)/S⌋ a
  // stage and the first (L+2) mod S stages one more) | blocks_base_first (⌊L/S⌋ blocks on the
  // first stage, one more on the middle ones while L mod S lasts, the rest on the last) | blocks
  // (⌊L/S⌋ a stage, the first L mod S one more; the ends not counted).
  std::string pp_split = "effective_layers";
  // With pp > 1: the schedules it runs (parallelism.pp_schedule's names).
  std::vector<std::string> pp_schedules{"1F1B", "Interleaved1F1B", "GPipe", "ZBVZeroBubble", "InterleavedZeroBubble"};
  // On its CPU path (a term stated only by a runtime whose devices list cpu): how its Gloo
  // reduce-scatter runs — ring (n − 1 steps) | alltoall (one all-to-all round of the n − 1
  // pairwise exchanges, posted together, and a local sum: shardcast-train's Gloo layer).
  std::string gloo_reduce_scatter = "ring";
  bool selective_op = true;                   // can run activation_checkpointing.mode = selective_op
  bool selective_blocks = true;               // can run block-level selective (mode = selective)
  // Terms whose value is the config's (the TOML value "config"; only terms with a
  // RuntimeTermSchema::config_key), by term key. planner/model/runtime.h resolves them per config.
  std::vector<std::string> from_config;
  bool follows_config(const std::string& term) const;
};

struct RuntimeSpec {
  std::string name;         // preset key, e.g. "torchtitan"
  std::string description;  // what software and version range it describes
  // The software it is a generation of ("torchtitan" for torchtitan-2024-04 and torchtitan;
  // = name when the file does not say) and the versions it describes, as commit dates
  // [from_date, until_date), "YYYY-MM-DD"; "" = unbounded. A published row's framework and
  // framework_date choose among the generations of one framework (planner/model/runtime.h).
  std::string framework;
  std::string from_date, until_date;
  // Where it runs: "gpu" and/or "cpu" (a preset without a 16-bit peak, configs/hardware/cpu.toml).
  // Top-level key `devices`; unset: ["gpu"], what every framework here but shardcast-train runs on.
  std::vector<std::string> devices{"gpu"};
  bool runs_on(bool gpu) const;
  std::string file;         // the preset file it was read from ("" if built in code)
  RuntimeTerms terms;       // on any hardware
  std::optional<RuntimeTerms> gpu_terms;  // terms with the [gpu] table applied (when present)
  // DeepSpeed ZeRO's settings (the [zero] table, shared/zero_terms.h): present only in a ZeRO
  // runtime (deepspeed), whose stage follows the config's sharding strategy.
  std::optional<ZeroTerms> zero;
  std::map<std::string, std::string> sources;  // term key (or "gpu.KEY", "zero.KEY") -> public source

  // The terms that apply on GPU hardware (gpu=true) or on a CPU profile.
  const RuntimeTerms& terms_for(bool gpu) const { return gpu && gpu_terms ? *gpu_terms : terms; }
};

// One row of the runtime schema: the TOML key, its kind, allowed values and meaning.
struct RuntimeTermSchema {
  const char* key;
  const char* kind;     // "bool" | "bool | \"config\"" | "string" | "string list"
  const char* allowed;  // for strings: "a | b | c"; "" otherwise
  const char* meaning;
  // The run.toml key a runtime may defer this term to (value "config"); nullptr = none: the
  // runtime states a fixed value.
  const char* config_key = nullptr;
  // The mesh dimension ("tp" | "pp") a runtime's term mesh must list for it to state this term:
  // a term of how it runs that dimension, stated by exactly the runtimes that run it; nullptr =
  // every runtime states it.
  const char* needs_mesh = nullptr;
  // The device ("cpu") a runtime's devices must list for it to state this term: a term of its
  // path on that device, stated by exactly the runtimes that run there; nullptr = every runtime.
  const char* needs_device = nullptr;
};
// The value a runtime term takes to say "run.toml's key decides" (RuntimeTermSchema::config_key).
inline constexpr const char* kFromConfig = "config";
extern const std::vector<RuntimeTermSchema> kRuntimeTerms;
// The schema row of term `key`; nullptr when no term has that name.
const RuntimeTermSchema* find_runtime_term(const std::string& key);

// True for a torch release "MAJOR.MINOR" (digits, e.g. "2.11"); the term torch also allows "unstated".
bool is_torch_release(const std::string& s);

// True for "YYYY-MM-DD" or "YYYY-MM" (a month stands for its first day when compared).
bool is_iso_date(const std::string& s);

// Parse a runtime preset. Unknown keys, a term without a source, or a value outside the
// allowed set throw ConfigError naming the file and key.
RuntimeSpec parse_runtime_toml(const std::string& text, const std::string& file);
// configs/runtimes/NAME.toml, or a path to a .toml; ConfigError for an unknown name (with the
// allowed names and the closest one).
RuntimeSpec load_runtime(const std::string& name_or_file);
std::vector<std::string> list_runtime_presets();  // sorted names

}  // namespace shardcast
