#include "planner/model/runtime.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "planner/model/fp8_formats.h"
#include "shared/config_table.h"
#include "shared/errors.h"

namespace shardcast::planner {

bool is_gpu(const HardwareSpec& hw) { return hw.gpu.bf16_flops > 0 || hw.gpu.fp16_flops > 0; }

bool runs_sdpa(const RuntimeTerms& t) { return t.attention == "flash"; }

const RuntimeSpec& runtime_preset(const std::string& name) { return config_table<RuntimeSpec>(name, load_runtime); }

std::string sync_every_micro_step_refusal(const RuntimeSpec& rt, const RuntimeTerms& t, const TrainConfig& cfg) {
  const std::optional<bool>& sync = cfg.parallelism.sync_every_micro_step;
  if (sync && !t.follows_config("sync_every_micro_step") && *sync != t.sync_every_micro_step)
    return fmt::format("{} cannot run parallelism.sync_every_micro_step = {}: it always {} (its profile's term "
                       "sync_every_micro_step = {}); leave the key unset or choose a runtime that can",
                       rt.name, *sync ? "true" : "false",
                       t.sync_every_micro_step
                           ? "reduce-scatters gradients on every micro-step"
                           : "keeps unsharded gradients across non-final micro-steps and reduces on the last one",
                       t.sync_every_micro_step ? "true" : "false");
  return "";
}

void take_runtime_precision(TrainConfig& cfg, const RuntimeSpec& rt, const HardwareSpec& hw,
                            PrecisionKeysGiven given) {
  take_runtime_precision(cfg, rt.terms_for(is_gpu(hw)), given);
}

void take_runtime_precision(TrainConfig& cfg, const RuntimeTerms& t, PrecisionKeysGiven given) {
  PrecisionConfig& pr = cfg.precision;
  // A runtime that reduces in 16 bits by default reduces in its parameters' 16-bit dtype (fms-fsdp's
  // bfSixteen / fpSixteen policies); over fp32 parameters there is no mixed precision: fp32 (as
  // search enumerates).
  if (!given.reduce_dtype)
    pr.reduce_dtype = t.reduce_dtype_is_param_dtype || t.reduce_dtype_default != "fp32" ? pr.param_dtype : "fp32";
  if (!given.master_dtype) pr.master_dtype = pr.param_dtype == "bf16" ? t.master_dtype_default : "fp32";
}

std::string devices_refusal(const RuntimeSpec& rt, const HardwareSpec& hw) {
  if (rt.runs_on(is_gpu(hw))) return "";
  return fmt::format("{} runs on {} only (its profile's devices), not on {}, {}", rt.name,
                     fmt::join(rt.devices, " and "), hw.name,
                     is_gpu(hw) ? "a GPU profile" : "a profile without a 16-bit peak");
}

std::string master_dtype_refusal(const RuntimeSpec& rt, const RuntimeTerms& t, const TrainConfig& cfg) {
  const std::string& m = cfg.precision.master_dtype;
  if (std::find(t.master_dtypes.begin(), t.master_dtypes.end(), m) != t.master_dtypes.end()) return "";
  return fmt::format("{} cannot run precision.master_dtype = \"{}\" (it runs {})", rt.name, m,
                     fmt::join(t.master_dtypes, " | "));
}

std::string optimizer_state_dtype_refusal(const RuntimeSpec& rt, const RuntimeTerms& t, const TrainConfig& cfg) {
  const std::vector<std::string>& runs = t.optimizer_state_dtypes;
  const std::string& s = cfg.optimizer.state_dtype;
  // A profile listing bf16 runs the fused update (checked when it is read: runtime_spec.cpp).
  if (std::find(runs.begin(), runs.end(), s) != runs.end()) return "";
  std::vector<std::string> others;  // the runtime presets that run it
  for (const std::string& name : list_runtime_presets()) {
    const std::vector<std::string>& o = runtime_preset(name).terms.optimizer_state_dtypes;
    if (std::find(o.begin(), o.end(), s) != o.end()) others.push_back(name);
  }
  return fmt::format("{} cannot run optimizer.state_dtype = \"{}\" (it runs {}; {}: {})", rt.name, s,
                     fmt::join(runs, " | "), others.empty() ? "no runtime preset runs it" : "runtimes that run it",
                     fmt::join(others, ", "));
}

std::string bf16_moments_update_refusal(const std::string& runtime, const TrainConfig& cfg, const std::string& update) {
  if (cfg.optimizer.state_dtype != "bf16" || update == "fused") return "";
  return fmt::format("{} runs AdamW as {}: optimizer.state_dtype = \"bf16\" runs only in the fused update (torch's "
                     "mixed-precision _fused_adamw_; torchtitan's \"fused_opt_states_bf16\" is fused: "
                     "docs/bf16_optimizer_states.md)",
                     runtime, update);
}

// A mesh dimension above 1 the runtime does not run (its term mesh), and async TP outside the
// compiled graph: torchtitan applies it through torch.compile's micro-pipeline TP pass
// (torchtitan/models/llama3/infra/parallelize.py at b5bcd76: "Async TP requires torch.compile").
std::string mesh_refusal(const RuntimeSpec& rt, const RuntimeTerms& t, const TrainConfig& cfg) {
  const ParallelismConfig& p = cfg.parallelism;
  auto runs = [&](const char* dim) { return std::find(t.mesh.begin(), t.mesh.end(), dim) != t.mesh.end(); };
  const std::string runs_list = t.mesh.empty() ? "1-D FSDP only" : fmt::format("{}", fmt::join(t.mesh, " | "));
  for (const auto& [dim, v] : {std::pair{"tp", p.tp}, {"cp", p.cp}, {"pp", p.pp}})
    if (v > 1 && !runs(dim))
      return fmt::format("{} cannot run parallelism.{} = {} (its mesh: {})", rt.name, dim, v, runs_list);
  if (p.tp_async && !runs("tp_async"))
    return fmt::format("{} cannot run parallelism.tp_async = true (its mesh: {})", rt.name, runs_list);
  if (p.cp > 1 && p.cp_rotate == CpRotate::alltoall && !runs("cp_alltoall"))
    return fmt::format("{} cannot run parallelism.cp_rotate = \"alltoall\" (its mesh: {}; context parallel's K/V "
                       "all-gather only): plan cp_rotate = \"allgather\"",
                       rt.name, runs_list);
  // The embedding and the head sit on different stages: no runtime here shares them across a
  // pipeline (torchtitan models/common/decoder.py @b5bcd76c6 lines 168-171 raises
  // NotImplementedError, ties from 8953d2e39 and none before; KempnerForge config/job.py @5666d0d
  // line 147 refuses it).
  if (p.pp > 1 && cfg.model.tied_embeddings)
    return fmt::format("{} cannot run a model with tied input and output embeddings ({}) under pipeline parallelism "
                       "(parallelism.pp = {}): the embedding and the head sit on different stages",
                       rt.name, cfg.model_label(), p.pp);
  if (p.pp > 1 &&
      std::find(t.pp_schedules.begin(), t.pp_schedules.end(), to_string(p.pp_schedule)) == t.pp_schedules.end())
    return fmt::format("{} cannot run parallelism.pp_schedule = \"{}\" (it runs {})", rt.name, to_string(p.pp_schedule),
                       fmt::join(t.pp_schedules, " | "));
  // Data-parallel replicas beside tp, cp or pp (HSDP's dp_replicate, or no_shard's) need the mesh's
  // dp_replicate: torchtitan before 'Enable HSDP' (db6b39acd) built [pp, dp, tp] only.
  const Mesh m = resolve_mesh(p, cfg.world_size(), cfg.cluster.gpus_per_node);
  if (!m.one_d() && m.dp_replicate > 1 && !runs("dp_replicate"))
    return fmt::format("{} cannot run data-parallel replicas beside tp, cp or pp (parallelism.dp_replicate = {}, from "
                       "sharding_strategy {}; its mesh: {}): use full_shard over the data-parallel ranks",
                       rt.name, m.dp_replicate, to_string(p.sharding_strategy), runs_list);
  if (p.cp > 1 && (t.attention == "eager" || t.attention == "eager_causal_blocks"))
    return fmt::format("{} runs attention as eager ops (attention = \"{}\"): context parallel's ring attention needs "
                       "SDPA's flash or cuDNN kernel",
                       rt.name, t.attention);
  const bool zero_bubble =
      p.pp_schedule == PpSchedule::interleaved_zero_bubble || p.pp_schedule == PpSchedule::zbv_zero_bubble;
  if (p.pp > 1 && zero_bubble && cfg.activation_checkpointing.mode != AcMode::none && !t.pp_zero_bubble_checkpointing)
    return fmt::format("{} runs parallelism.pp_schedule = \"{}\" with activation checkpointing abnormally slowly (a "
                       "bug: the zero-bubble schedules' split backward recomputes the checkpointed blocks, "
                       "pytorch/torchtitan#773, pytorch/pytorch#136766; its term pp_zero_bubble_checkpointing = "
                       "false): not planned; use 1F1B or Interleaved1F1B, or activation_checkpointing.mode = \"none\"",
                       rt.name, to_string(p.pp_schedule));
  if (p.tp_async && !cfg.precision.compile)
    return fmt::format("{} runs async TP in the compiled graph only: parallelism.tp_async = true needs precision.compile = true",
                       rt.name);
  return "";
}

std::string runtime_refusal(const RuntimeSpec& rt, const TrainConfig& cfg, const HardwareSpec& hw) {
  if (std::string why = devices_refusal(rt, hw); !why.empty()) return why;
  const RuntimeTerms& t = rt.terms_for(is_gpu(hw));
  const auto& pr = cfg.precision;
  if (t.reduce_dtype_is_param_dtype) {
    if (pr.reduce_dtype != pr.param_dtype)
      return fmt::format("{} reduces in param_dtype ({}): precision.reduce_dtype = \"{}\" cannot be expressed", rt.name,
                         pr.param_dtype, pr.reduce_dtype);
  } else if (std::find(t.reduce_dtypes.begin(), t.reduce_dtypes.end(), pr.reduce_dtype) == t.reduce_dtypes.end()) {
    std::string allowed;
    for (const auto& d : t.reduce_dtypes) allowed += (allowed.empty() ? "" : " | ") + d;
    return fmt::format("{} accepts precision.reduce_dtype {} only, not \"{}\"", rt.name, allowed, pr.reduce_dtype);
  }
  if (std::string why = master_dtype_refusal(rt, t, cfg); !why.empty()) return why;
  if (std::string why = optimizer_state_dtype_refusal(rt, t, cfg); !why.empty()) return why;
  if (pr.compile && !t.compile) return fmt::format("{} cannot run precision.compile = true", rt.name);
  if (std::string why = fp8_format_refusal(rt.name, pr.fp8, hw); !why.empty()) return why;
  if (pr.fp8_on() &&
      std::find(t.fp8_recipes.begin(), t.fp8_recipes.end(), to_string(pr.fp8)) == t.fp8_recipes.end())
    return t.fp8_recipes.empty()
               ? fmt::format("{} cannot run precision.fp8 = \"{}\" (it runs \"none\" only)", rt.name, to_string(pr.fp8))
               : fmt::format("{} cannot run precision.fp8 = \"{}\" (it runs none | {})", rt.name, to_string(pr.fp8),
                             fmt::join(t.fp8_recipes, " | "));
  if (std::string why = mesh_refusal(rt, t, cfg); !why.empty()) return why;
  const AcMode ac = cfg.activation_checkpointing.mode;
  if (ac == AcMode::selective_op && !t.selective_op)
    return fmt::format("{} cannot run activation_checkpointing.mode = \"selective_op\"", rt.name);
  if (ac == AcMode::selective && !t.selective_blocks)
    return fmt::format("{} cannot run activation_checkpointing.mode = \"selective\" (every k-th block)", rt.name);
  if (rt.zero) {
    if (std::string why = zero_refusal(cfg); !why.empty()) return why;
    // ZeRO stage 1 reduces on the accumulation boundary only (zero_reduces_every_micro_step).
    if (!zero_reduces_every_micro_step(cfg)) {
      if (cfg.parallelism.sync_every_micro_step.value_or(false))
        return fmt::format("{} cannot run parallelism.sync_every_micro_step = true with sharding_strategy = "
                           "\"shard_optimizer\": ZeRO stage 1 keeps whole gradients across micro-steps and "
                           "reduces them on the last one; leave the key unset (or false)",
                           rt.name);
      return "";
    }
  } else if (cfg.parallelism.sharding_strategy == ShardingStrategy::shard_optimizer) {
    // Optimizer states partitioned with whole parameters and gradients is DeepSpeed ZeRO stage 1
    // (zero_memory.h): no FSDP runtime has it.
    return fmt::format("{} cannot run parallelism.sharding_strategy = \"shard_optimizer\": it is DeepSpeed ZeRO "
                       "stage 1 (optimizer states partitioned, parameters and gradients whole), which only the "
                       "deepspeed runtime runs; FSDP has no such strategy",
                       rt.name);
  }
  return sync_every_micro_step_refusal(rt, t, cfg);
}

bool sync_every_micro_step(const RuntimeTerms& t, const TrainConfig& cfg) {
  // A term that follows the config holds the key's default (shared/runtime_spec.h).
  if (t.follows_config("sync_every_micro_step"))
    return cfg.parallelism.sync_every_micro_step.value_or(t.sync_every_micro_step);
  return t.sync_every_micro_step;
}

const char* to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::flash1: return "flash1";
    case AttentionKernel::flash_triton: return "flash_triton";
    case AttentionKernel::flash2: break;
  }
  return "flash2";
}

bool parse_pp_split(const std::string& s, PpSplit& out) {
  if (s == "effective_layers") out = PpSplit::effective_layers;
  else if (s == "blocks_base_first") out = PpSplit::blocks_base_first;
  else if (s == "blocks") out = PpSplit::blocks;
  else return false;
  return true;
}

bool parse_fp8_library(const std::string& s, Fp8Library& out) {
  if (s == "torchao") out = Fp8Library::torchao;
  else if (s == "transformer_engine") out = Fp8Library::transformer_engine;
  else return false;
  return true;
}

bool parse_unsynced_grad_dtype(const std::string& s, UnsyncedGradDtype& out) {
  if (s == "param_dtype") out = UnsyncedGradDtype::param_dtype;
  else if (s == "reduce_dtype") out = UnsyncedGradDtype::reduce_dtype;
  else if (s == "fp32") out = UnsyncedGradDtype::fp32;
  else return false;
  return true;
}

namespace {

// The kernels: attention (and its backend), the loss, the norm, RoPE, SwiGLU, GQA, the block.
void take_kernel_terms(const RuntimeSpec& rt, const RuntimeTerms& t, const HardwareSpec& hw, PlanOptions& o) {
  o.attention_materialized = t.attention == "eager" || t.attention == "eager_causal_blocks";
  o.attention_causal_blocks = t.attention == "eager_causal_blocks";
  o.attention_document_mask = t.attention == "flex_document";  // timed as flash2 below
  o.attention_kernel = t.attention == "flash_triton" ? AttentionKernel::flash_triton
                       : t.attention == "flash1"     ? AttentionKernel::flash1
                                                     : AttentionKernel::flash2;
  // FlexAttention (flex_document) is timed at the rate the profile names for its GPUs: cuDNN
  // attention's where cudnn_attention lists the GPU (no published FlexAttention rate is held).
  o.attention_cudnn = (runs_sdpa(t) || o.attention_document_mask) && !hw.gpu.compute_capability.empty() &&
                      std::find(t.cudnn_attention.begin(), t.cudnn_attention.end(), hw.gpu.compute_capability) !=
                          t.cudnn_attention.end();
  o.sac_saves_cudnn_attention = t.sac_saves_cudnn_attention;
  o.torch_release = t.torch == "unstated" ? std::string() : t.torch;  // a release, checked when read
  if (!parse_cross_entropy(t.cross_entropy, o.cross_entropy))
    throw ConfigError(rt.file, "terms.cross_entropy", "\"" + t.cross_entropy + "\" is not allowed");
  if (!parse_norm_impl(t.rmsnorm, o.rmsnorm))
    throw ConfigError(rt.file, "terms.rmsnorm", "\"" + t.rmsnorm + "\" is not allowed");
  // rope / swiglu: "eager" | "fused" (checked against the schema when the profile was read).
  o.rope_fused = t.rope == "fused";
  o.swiglu_fused = t.swiglu == "fused";
  o.gqa_repeated = t.gqa == "repeated";
  o.qkv_output_kept = t.qkv_output_kept;
  o.torchtitan_block_program = t.block_program == "torchtitan";
}

// The loop: the reduction's buffers, AdamW, clipping, host time and CUDA graphs, the gradients
// between steps and micro-steps.
void take_loop_terms(const RuntimeSpec& rt, const RuntimeTerms& t, const HardwareSpec& hw, const TrainConfig& cfg,
                     PlanOptions& o) {
  o.reduce_copies_gradient = t.reduce_copies_gradient;
  o.reduce_output_buffer = t.reduce_output == "buffer";
  o.adamw_state_at_init = t.adamw_state == "with_model";
  // adamw_update / grad_clip: checked against the schema when the profile was read.
  if (!parse_adamw_update(t.adamw_update, o.adamw_update))
    throw ConfigError(rt.file, "terms.adamw_update", "\"" + t.adamw_update + "\" is not allowed");
  if (!parse_grad_clip(t.grad_clip, o.grad_clip))
    throw ConfigError(rt.file, "terms.grad_clip", "\"" + t.grad_clip + "\" is not allowed");
  o.host_time_hidden = t.host_time == "hidden";
  // CUDA graphs (host_time = "cuda_graphs", torchtitan since f84224af0) are captured on CUDA GPUs
  // only (distributed/cudagraph.py wrap_with_cuda_graph @b5bcd76c6: eager under ROCm; a preset's
  // empty gpu.compute_capability is not a CUDA GPU) and never with pipeline parallelism, which
  // torchtitan refuses with them (trainer.py _validate_cuda_graphs): such a plan is its run with
  // training.disable_cuda_graphs = True (emit writes it), whose zero_grad(set_to_none=True) frees
  // the gradients between steps as well.
  const bool graphs = t.host_time == "cuda_graphs";
  const bool graphs_off_for_pp = graphs && cfg.parallelism.pp > 1;
  o.host_units_graphed = graphs && !graphs_off_for_pp && !hw.gpu.compute_capability.empty();
  o.per_parameter_copies = t.parameter_layout == "per_parameter";
  o.root_unit = t.root_unit;
  o.grads_freed_between_steps = t.grads_freed_between_steps || graphs_off_for_pp;
  o.sync_every_micro_step = sync_every_micro_step(t, cfg);
  if (rt.zero && !zero_reduces_every_micro_step(cfg)) o.sync_every_micro_step = false;  // ZeRO stage 1
  if (!parse_unsynced_grad_dtype(t.unsynced_gradient_dtype, o.unsynced_gradient_dtype))
    throw ConfigError(rt.file, "terms.unsynced_gradient_dtype", "\"" + t.unsynced_gradient_dtype + "\" is not allowed");
}

// fp8, the allocator, what the loop keeps, and how the mesh's dimensions run.
void take_memory_and_mesh_terms(const RuntimeSpec& rt, const RuntimeTerms& t, const HardwareSpec& hw,
                                const TrainConfig& cfg, PlanOptions& o) {
  o.fp8_all_gather = t.fp8_all_gather;
  o.fp8_weight_saved = t.fp8_weight_saved;
  o.fp8_input_saved = t.fp8_input_saved;
  if (!parse_fp8_library(t.fp8_library, o.fp8_library))
    throw ConfigError(rt.file, "terms.fp8_library", "\"" + t.fp8_library + "\" is not allowed");
  if (!parse_mxfp8_casts(t.mxfp8_casts, o.mxfp8_casts))
    throw ConfigError(rt.file, "terms.mxfp8_casts", "\"" + t.mxfp8_casts + "\" is not allowed");
  o.expandable_segments = t.expandable_segments;
  o.record_stream_buffers = t.collective_buffers == "record_stream";
  o.recompute_early_stop = t.recompute_early_stop;
  o.fp32_logits_held = t.fp32_logits_held;
  o.use_cache = t.use_cache;
  o.loss_in_model = t.loss_in_model;
  o.loss_parallel = t.loss_parallel;  // stated where the runtime runs tp (shared/runtime_spec.h)
  o.sequence_parallel_with_pp = t.tp_sequence_parallel != "without_pp";  // checked against the schema
  o.embedding_vocab_parallel = t.tp_embedding != "replicated";
  o.column_inputs_per_projection = t.tp_column_inputs == "per_projection";  // checked against the schema
  // torch's handlers take the fp32 up-cast of cross_entropy(pred.float(), ...) (mesh_stage.cpp).
  o.loss_parallel_dtensor = t.loss_parallel_impl == "dtensor" && is_fp32_upcast(o.cross_entropy);
  // vocab_parallel_fn is a loss of its own under TP (shardcast-train's VocabParallelLossFn: the
  // rank's logit shard in fp32, fp32_upcast's tensors; train_loop.cpp takes it whenever tp > 1),
  // whatever cross_entropy names for the loss without TP.
  if (cfg.parallelism.tp > 1 && t.loss_parallel && t.loss_parallel_impl == "vocab_parallel_fn")
    o.cross_entropy = CrossEntropyImpl::fp32_upcast;
  o.qk_norm_gathered = t.tp_qk_norm == "gathered";  // checked against the schema
  o.pp_reshard_after_forward = t.pp_reshard_after_forward;
  if (!parse_pp_split(t.pp_split, o.pp_split))
    throw ConfigError(rt.file, "terms.pp_split", "\"" + t.pp_split + "\" is not allowed");
  // A term of the CPU path only: terms_for(gpu) carries [terms]' value into the NCCL path too.
  o.reduce_scatter_one_round = !is_gpu(hw) && t.gloo_reduce_scatter == "alltoall";
  if (!parse_outputs_kept(t.outputs_kept, o.outputs_kept))
    throw ConfigError(rt.file, "terms.outputs_kept", "\"" + t.outputs_kept + "\" is not allowed");
}

}  // namespace

PlanOptions plan_options(const RuntimeSpec& rt, const HardwareSpec& hw, const TrainConfig& cfg) {
  const RuntimeTerms& t = rt.terms_for(is_gpu(hw));
  PlanOptions o;
  o.runtime = rt.name;
  o.zero = rt.zero.has_value();
  if (rt.zero) o.zero_terms = *rt.zero;
  o.framework = rt.framework;
  take_kernel_terms(rt, t, hw, o);
  take_loop_terms(rt, t, hw, cfg, o);
  take_memory_and_mesh_terms(rt, t, hw, cfg, o);
  return o;
}

PlanOptions resolve_plan_options(const TrainConfig& cfg, const HardwareSpec& hw) {
  const RuntimeSpec& rt = runtime_preset(cfg.runtime);
  const std::string why = runtime_refusal(rt, cfg, hw);
  if (!why.empty()) throw ConfigError(cfg.source_file, "runtime", why);
  return plan_options(rt, hw, cfg);
}

std::vector<std::string> runtime_generations(const std::string& framework) {
  // Every preset, read once per process (validate asks once per published row).
  static const std::vector<std::string> names = list_runtime_presets();
  std::vector<std::pair<std::string, std::string>> found;  // (from_date, name)
  for (const std::string& name : names) {
    const RuntimeSpec& rt = runtime_preset(name);
    if (rt.framework == framework) found.emplace_back(rt.from_date, rt.name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

std::string runtime_for_framework(const std::string& framework, const std::string& date) {
  std::string f = framework;
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  // The framework of every runtime preset (RuntimeSpec::framework), Composer for llm-foundry
  // (its trainer) and "shardcast" for shardcast-train; the one named first in the column wins ("atorch (dlrover) ...
  // auto_accelerate" is atorch, not accelerate).
  static const std::vector<std::pair<std::string, std::string>> names = [] {
    std::vector<std::pair<std::string, std::string>> out{{"composer", "llm-foundry"}, {"shardcast", "shardcast-train"}};
    for (const std::string& n : list_runtime_presets()) {
      const std::string& fw = runtime_preset(n).framework;
      if (std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == fw; }) == out.end())
        out.push_back({fw, fw});
    }
    return out;
  }();
  std::string family;
  size_t at = std::string::npos;
  for (const auto& [name, fw] : names) {
    const size_t pos = f.find(name);
    if (pos < at || (pos == at && pos != std::string::npos && name.size() > family.size())) {
      at = pos;
      family = fw;
    }
  }
  if (family.empty()) return "";
  if (!date.empty() && !is_iso_date(date))
    throw InputError(fmt::format("framework_date \"{}\" is not a date (YYYY-MM-DD or YYYY-MM)", date));
  std::string covered;
  for (const std::string& name : runtime_generations(family)) {
    const RuntimeSpec& rt = runtime_preset(name);
    if (date.empty()) {
      if (rt.until_date.empty()) return rt.name;
    } else if ((rt.from_date.empty() || date >= rt.from_date) && (rt.until_date.empty() || date < rt.until_date)) {
      return rt.name;
    }
    covered += fmt::format(" {} [{}, {})", rt.name, rt.from_date.empty() ? "-" : rt.from_date,
                           rt.until_date.empty() ? "-" : rt.until_date);
  }
  throw InputError(fmt::format("no runtime generation of {} covers framework_date \"{}\" (generations:{})", family,
                               date.empty() ? "not stated" : date, covered));
}

}  // namespace shardcast::planner
