// Runtime presets (configs/runtimes/): every shipped preset parses, states every term of the
// schema with a source, and the parser refuses what the schema does not allow.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "shared/trainer_checks.h"

namespace shardcast {
namespace {

TEST(RuntimeSpec, EveryShippedPresetStatesEveryTermWithASource) {
  const auto names = list_runtime_presets();
  for (const char* n : {"shardcast-train", "torchtitan", "fms-fsdp", "llm-foundry", "accelerate"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const auto& n : names) {
    const RuntimeSpec rt = load_runtime(n);
    EXPECT_EQ(rt.name, n);
    EXPECT_FALSE(rt.description.empty()) << n;
    const std::vector<std::string>& mesh = rt.terms.mesh;
    for (const auto& term : kRuntimeTerms) {
      // A term of how a runtime runs a mesh dimension: stated by exactly the runtimes that run it.
      const bool applies = (!term.needs_mesh || std::find(mesh.begin(), mesh.end(), term.needs_mesh) != mesh.end()) &&
                           (!term.needs_device || rt.runs_on(std::string(term.needs_device) == "gpu"));
      EXPECT_EQ(rt.sources.count(term.key), applies ? 1u : 0u) << n << ": " << term.key;
      if (applies && rt.sources.count(term.key)) EXPECT_GT(rt.sources.at(term.key).size(), 10u) << n << ": " << term.key;
    }
  }
}

// The parser's refusal of a runtime TOML text as "key: message" ("" when it parses).
std::string refusal(const std::string& text) {
  try {
    parse_runtime_toml(text, "t.toml");
  } catch (const ConfigError& e) {
    return e.key() + ": " + e.what();
  }
  return "";
}

// A mesh term (RuntimeTermSchema::needs_mesh) is required where the mesh lists its dimension and
// refused where it does not, naming the term.
TEST(RuntimeSpec, MeshTermsAreStatedExactlyWhereTheMeshRunsThem) {
  const std::string text = read_text(load_runtime("torchtitan").file);
  EXPECT_EQ(refusal(text), "");
  std::string without = text;
  const size_t at = without.find("\nloss_parallel = true\n");
  ASSERT_NE(at, std::string::npos);
  without.erase(at, std::string("\nloss_parallel = true").size());
  EXPECT_NE(refusal(without).find("terms.loss_parallel"), std::string::npos) << refusal(without);
  EXPECT_NE(refusal(without).find("mesh lists tp"), std::string::npos) << refusal(without);
  std::string one_d = text;
  const size_t m = one_d.find("\nmesh = [");
  ASSERT_NE(m, std::string::npos);
  one_d.replace(m, one_d.find('\n', m + 1) - m, "\nmesh = []");
  EXPECT_NE(refusal(one_d).find("its mesh does not list tp"), std::string::npos) << refusal(one_d);
}

// A term of a runtime's CPU path (RuntimeTermSchema::needs_device) is required where its devices
// list cpu and refused where they do not, naming the term.
TEST(RuntimeSpec, CpuPathTermsAreStatedExactlyWhereTheRuntimeRunsOnCpu) {
  const std::string text = read_text(load_runtime("shardcast-train").file);
  EXPECT_EQ(refusal(text), "");
  EXPECT_EQ(load_runtime("shardcast-train").terms.gloo_reduce_scatter, "alltoall");
  std::string without = text;
  const size_t at = without.find("\ngloo_reduce_scatter = \"alltoall\"\n");
  ASSERT_NE(at, std::string::npos);
  without.erase(at, std::string("\ngloo_reduce_scatter = \"alltoall\"").size());
  EXPECT_NE(refusal(without).find("terms.gloo_reduce_scatter"), std::string::npos) << refusal(without);
  EXPECT_NE(refusal(without).find("devices list cpu"), std::string::npos) << refusal(without);
  std::string gpu_only = text;
  const size_t d = gpu_only.find("\ndevices = [");
  ASSERT_NE(d, std::string::npos);
  gpu_only.replace(d, gpu_only.find('\n', d + 1) - d, "\ndevices = [\"gpu\"]");
  EXPECT_NE(refusal(gpu_only).find("its devices do not list cpu"), std::string::npos) << refusal(gpu_only);
}

TEST(RuntimeSpec, DevicesDefaultToGpuAndAreChecked) {
  EXPECT_EQ(load_runtime("torchtitan").devices, (std::vector<std::string>{"gpu"}));
  EXPECT_TRUE(load_runtime("shardcast-train").runs_on(false));
  EXPECT_FALSE(load_runtime("torchtitan").runs_on(false));
  const std::string text = read_text(load_runtime("torchtitan").file);
  for (const char* bad : {"devices = []", "devices = [\"tpu\"]", "devices = \"gpu\""}) {
    try {
      parse_runtime_toml(std::string(bad) + "\n" + text, "t.toml");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "devices") << bad << ": " << e.what();
    }
  }
}

TEST(RuntimeSpec, ShardcastTrainDiffersOnGpuOnlyWhereItsCodeDoes) {
  const RuntimeSpec rt = load_runtime("shardcast-train");
  EXPECT_EQ(rt.terms_for(false).attention, "eager_causal_blocks");  // LibTorch 1.13 CPU: eager softmax in query blocks
  ASSERT_TRUE(rt.gpu_terms.has_value());
  EXPECT_EQ(rt.terms_for(true).attention, "flash");   // LibTorch >= 2.0 CUDA: SDPA
  // The same chunked_lm_loss on both paths (trainer/model/chunked_loss.cpp).
  EXPECT_EQ(rt.terms_for(false).cross_entropy, "chunked_rows");
  EXPECT_EQ(rt.terms_for(true).cross_entropy, "chunked_rows");
  EXPECT_EQ(rt.terms_for(true).sync_every_micro_step, rt.terms_for(false).sync_every_micro_step);
  // Gloo's composed reduce-scatter receives into a buffer of the unsharded gradient's size;
  // NCCL's native one does not (trainer/comm/collectives.cpp).
  EXPECT_TRUE(rt.terms_for(false).reduce_copies_gradient);
  EXPECT_FALSE(rt.terms_for(true).reduce_copies_gradient);
  // Synchronous CPU ops: the host time is the step; CUDA launches run ahead of the device.
  EXPECT_EQ(rt.terms_for(false).host_time, "fitted");
  EXPECT_EQ(rt.terms_for(true).host_time, "hidden");
  // Its own AdamW and reduce-scatter output on both paths (trainer/fsdp/fsdp.cpp).
  for (bool gpu : {false, true}) {
    EXPECT_EQ(rt.terms_for(gpu).adamw_state, "with_model");
    EXPECT_EQ(rt.terms_for(gpu).adamw_update, "fused");
    EXPECT_EQ(rt.terms_for(gpu).grad_clip, "norm_in_update");
    EXPECT_EQ(rt.terms_for(gpu).reduce_output, "buffer");
  }
}

std::string minimal(const std::string& extra_terms, const std::string& extra_sources) {
  std::string t = "name = \"x\"\ndescription = \"d\"\n[terms]\n";
  std::string s = "[sources]\n";
  const char* values[][2] = {{"attention", "\"flash\""}, {"cross_entropy", "\"native\""}, {"rmsnorm", "\"eager\""},
                             {"rope", "\"eager\""},       {"swiglu", "\"eager\""},
                             {"reduce_dtypes", "[\"fp32\"]"}, {"reduce_dtype_default", "\"fp32\""},
                             {"master_dtypes", "[\"fp32\"]"}, {"master_dtype_default", "\"fp32\""},
                             {"optimizer_state_dtypes", "[\"master\"]"},
                             {"gqa", "\"repeated\""},
                             {"collective_buffers", "\"rate_limited\""}, {"fp8_recipes", "[]"}, {"mesh", "[]"},
                             {"unsynced_gradient_dtype", "\"param_dtype\""}, {"outputs_kept", "\"backward\""},
                             {"cudnn_attention", "[]"}, {"block_program", "\"unlisted\""},
                             {"reduce_output", "\"shard_gradient\""}, {"adamw_state", "\"first_step\""},
                             {"adamw_update", "\"foreach\""}, {"grad_clip", "\"norm_and_scale\""},
                             {"host_time", "\"fitted\""}, {"torch", "\"unstated\""},
                             {"parameter_layout", "\"flat_parameter\""}, {"fp8_library", "\"torchao\""},
                             {"mxfp8_casts", "\"compile_triton\""}};
  for (const auto& term : kRuntimeTerms) {
    if (term.needs_mesh) continue;    // mesh = []: no tp or pp terms
    if (term.needs_device) continue;  // devices unset (gpu only): no term of the CPU path
    std::string v = "false";
    for (const auto& kv : values)
      if (std::string(kv[0]) == term.key) v = kv[1];
    t += std::string(term.key) + " = " + v + "\n";
    s += std::string(term.key) + " = \"a public source\"\n";
  }
  return t + extra_terms + s + extra_sources;
}

// Every term of two torchtitan generations of 2025-10 on, but block_program and qkv_output_kept
// (which fused q/k/v changed with GQA's repeats) and the terms the caller copies over.
void expect_same_2026(const RuntimeTerms& t, const RuntimeTerms& u, const char* what) {
  for (const auto& [a, b] : {std::pair{t.attention, u.attention}, {t.cross_entropy, u.cross_entropy},
                             {t.rmsnorm, u.rmsnorm}, {t.rope, u.rope}, {t.swiglu, u.swiglu}, {t.gqa, u.gqa},
                             {t.torch, u.torch}, {t.reduce_dtype_default, u.reduce_dtype_default},
                             {t.reduce_output, u.reduce_output}, {t.adamw_state, u.adamw_state},
                             {t.adamw_update, u.adamw_update}, {t.grad_clip, u.grad_clip}, {t.host_time, u.host_time},
                             {t.parameter_layout, u.parameter_layout}, {t.master_dtype_default, u.master_dtype_default},
                             {t.unsynced_gradient_dtype, u.unsynced_gradient_dtype}, {t.fp8_library, u.fp8_library},
                             {t.mxfp8_casts, u.mxfp8_casts},
                             {t.collective_buffers, u.collective_buffers}, {t.outputs_kept, u.outputs_kept}})
    EXPECT_EQ(a, b) << what;
  EXPECT_EQ(t.cudnn_attention, u.cudnn_attention) << what;
  EXPECT_EQ(t.reduce_dtypes, u.reduce_dtypes) << what;
  EXPECT_EQ(t.master_dtypes, u.master_dtypes) << what;
  EXPECT_EQ(t.fp8_recipes, u.fp8_recipes) << what;
  for (const auto& [a, b] :
       {std::pair{t.sac_saves_cudnn_attention, u.sac_saves_cudnn_attention},
        {t.reduce_dtype_is_param_dtype, u.reduce_dtype_is_param_dtype}, {t.reduce_copies_gradient, u.reduce_copies_gradient},
        {t.root_unit, u.root_unit}, {t.grads_freed_between_steps, u.grads_freed_between_steps},
        {t.sync_every_micro_step, u.sync_every_micro_step}, {t.fp8_all_gather, u.fp8_all_gather},
        {t.fp8_weight_saved, u.fp8_weight_saved}, {t.fp8_input_saved, u.fp8_input_saved},
        {t.expandable_segments, u.expandable_segments}, {t.recompute_early_stop, u.recompute_early_stop},
        {t.fp32_logits_held, u.fp32_logits_held}, {t.use_cache, u.use_cache}, {t.loss_in_model, u.loss_in_model},
        {t.compile, u.compile}, {t.selective_op, u.selective_op}, {t.selective_blocks, u.selective_blocks}})
    EXPECT_EQ(a, b) << what;
}

// torchtitan's generations differ from the newest profile only in the terms their sources say
// changed, and their date ranges tile time without gaps.
TEST(RuntimeSpec, TorchtitanGenerationsDifferOnlyWhereTheirSourcesSay) {
  const RuntimeSpec apr = load_runtime("torchtitan-2024-04");
  const RuntimeSpec may = load_runtime("torchtitan-2024-05");
  const RuntimeSpec jun = load_runtime("torchtitan-2024-06");
  const RuntimeSpec oct = load_runtime("torchtitan-2024-10");
  const RuntimeSpec feb = load_runtime("torchtitan-2025-02");
  const RuntimeSpec jul = load_runtime("torchtitan-2025-07");
  // `cur`: the generation from 2025-10-09 (torchtitan-2025-10); those of 2026 below.
  const RuntimeSpec cur = load_runtime("torchtitan-2025-10");
  const RuntimeSpec jun26 = load_runtime("torchtitan-2026-06");
  const RuntimeSpec now = load_runtime("torchtitan");
  for (const RuntimeSpec* rt : {&apr, &may, &jun, &oct, &feb, &jul, &cur, &jun26, &now})
    EXPECT_EQ(rt->framework, "torchtitan") << rt->name;
  EXPECT_EQ(apr.from_date, "");
  EXPECT_EQ(apr.until_date, may.from_date);
  EXPECT_EQ(may.until_date, jun.from_date);
  EXPECT_EQ(jun.until_date, oct.from_date);
  EXPECT_EQ(oct.until_date, feb.from_date);
  EXPECT_EQ(feb.until_date, jul.from_date);
  EXPECT_EQ(jul.until_date, cur.from_date);
  EXPECT_EQ(cur.until_date, jun26.from_date);
  EXPECT_EQ(jun26.until_date, now.from_date);
  EXPECT_EQ(now.until_date, "");
  {
    // torchtitan-2026-06 is torchtitan-2025-10 but for FlexAttention's document masks
    // (169545712), the chunked loss (9530a874d), GQA without repeats (ff0829c10), fused q/k/v
    // (3396a4b37, so not the listed block program), the float8 recipes (#3127; MXFP8),
    // torchao's MXFP8Linear with its Triton / CUDA casts (3c4d47024) and op-level SAC only
    // (114151ad4).
    RuntimeTerms t = cur.terms;
    t.attention = jun26.terms.attention;
    t.cross_entropy = jun26.terms.cross_entropy;
    t.gqa = jun26.terms.gqa;
    t.fp8_recipes = jun26.terms.fp8_recipes;
    t.mxfp8_casts = jun26.terms.mxfp8_casts;
    EXPECT_EQ(cur.terms.mxfp8_casts, "compile_triton");
    EXPECT_EQ(jun26.terms.mxfp8_casts, "triton_cuda");
    // Layer-frequency selective checkpointing was removed on 2026-03-23 (114151ad4).
    t.selective_blocks = jun26.terms.selective_blocks;
    EXPECT_TRUE(cur.terms.selective_blocks);
    EXPECT_FALSE(jun26.terms.selective_blocks);
    expect_same_2026(t, jun26.terms, "torchtitan-2026-06");
    EXPECT_EQ(jun26.terms.attention, "flex_document");
    EXPECT_EQ(jun26.terms.cross_entropy, "chunked_lm_head");
    EXPECT_EQ(jun26.terms.gqa, "native");
    EXPECT_EQ(jun26.terms.block_program, "unlisted");
    EXPECT_EQ(jun26.terms.fp8_recipes, (std::vector<std::string>{"rowwise", "rowwise_with_gw_hp", "mxfp8"}));
    // torchtitan is torchtitan-2026-06 but for CUDA graphs (f84224af0), the gradients they keep,
    // and NVFP4 (bcc09297a).
    RuntimeTerms u = jun26.terms;
    u.host_time = now.terms.host_time;
    u.grads_freed_between_steps = now.terms.grads_freed_between_steps;
    u.fp8_recipes = now.terms.fp8_recipes;
    expect_same_2026(u, now.terms, "torchtitan");
    EXPECT_EQ(now.terms.host_time, "cuda_graphs");
    EXPECT_FALSE(now.terms.grads_freed_between_steps);
    EXPECT_TRUE(jun26.terms.grads_freed_between_steps);
    EXPECT_EQ(now.terms.fp8_recipes, (std::vector<std::string>{"rowwise", "rowwise_with_gw_hp", "mxfp8", "nvfp4"}));
  }
  // The SDPA backend order: torch's default (flash first) until 3b85aa31f put cuDNN first on
  // capability >= 10.0, then cuDNN first everywhere from 6a3a9da95; op SAC saved the cuDNN op
  // only from b39377f9f.
  EXPECT_TRUE(apr.terms.cudnn_attention.empty());
  EXPECT_TRUE(may.terms.cudnn_attention.empty());
  EXPECT_TRUE(jun.terms.cudnn_attention.empty());
  EXPECT_TRUE(oct.terms.cudnn_attention.empty());
  EXPECT_EQ(feb.terms.cudnn_attention, (std::vector<std::string>{"10.0", "10.3", "12.0"}));
  EXPECT_EQ(jul.terms.cudnn_attention, feb.terms.cudnn_attention);
  for (const char* cc : {"8.0", "9.0", "10.0"})
    EXPECT_NE(std::find(cur.terms.cudnn_attention.begin(), cur.terms.cudnn_attention.end(), cc),
              cur.terms.cudnn_attention.end()) << cc;
  for (const RuntimeSpec* rt : {&apr, &may, &jun, &oct, &feb, &jul})
    EXPECT_FALSE(rt->terms.sac_saves_cudnn_attention) << rt->name;
  // AdamW: foreach until 6e4988550 (2025-02-24) made fused the default; clipping every step.
  for (const RuntimeSpec* rt : {&apr, &may, &jun, &oct}) EXPECT_EQ(rt->terms.adamw_update, "foreach") << rt->name;
  for (const RuntimeSpec* rt : {&feb, &jul, &cur}) EXPECT_EQ(rt->terms.adamw_update, "fused") << rt->name;
  for (const RuntimeSpec* rt : {&apr, &may, &jun, &oct, &feb, &jul, &cur})
    EXPECT_EQ(rt->terms.grad_clip, "norm_and_scale") << rt->name;
  // The terms two generations are compared on: all but those a source says changed, which the
  // caller copies over first.
  auto expect_same = [](const RuntimeTerms& t, const RuntimeTerms& u, const char* what) {
    EXPECT_EQ(t.attention, u.attention) << what;
    EXPECT_EQ(t.rmsnorm, u.rmsnorm) << what;
    EXPECT_EQ(t.expandable_segments, u.expandable_segments) << what;
    EXPECT_EQ(t.fp8_recipes, u.fp8_recipes) << what;
    EXPECT_EQ(t.fp8_weight_saved, u.fp8_weight_saved) << what;
    EXPECT_EQ(t.fp8_input_saved, u.fp8_input_saved) << what;
    EXPECT_EQ(t.fp8_library, u.fp8_library) << what;
    EXPECT_EQ(t.outputs_kept, u.outputs_kept) << what;
    EXPECT_EQ(t.fp32_logits_held, u.fp32_logits_held) << what;
    EXPECT_EQ(t.gqa, u.gqa) << what;
    EXPECT_EQ(t.cross_entropy, u.cross_entropy) << what;
    EXPECT_EQ(t.collective_buffers, u.collective_buffers) << what;
    EXPECT_EQ(t.recompute_early_stop, u.recompute_early_stop) << what;
    EXPECT_EQ(t.unsynced_gradient_dtype, u.unsynced_gradient_dtype) << what;
    EXPECT_EQ(t.adamw_state, u.adamw_state) << what;
    EXPECT_EQ(t.adamw_update, u.adamw_update) << what;
    EXPECT_EQ(t.grad_clip, u.grad_clip) << what;
    EXPECT_EQ(t.cudnn_attention, u.cudnn_attention) << what;
    EXPECT_EQ(t.sac_saves_cudnn_attention, u.sac_saves_cudnn_attention) << what;
  };
  {
    // torchtitan-2024-10 is torchtitan-2025-02 but for the optimizer, the SDPA order and the
    // float8 recipes.
    RuntimeTerms t = oct.terms;
    t.adamw_update = feb.terms.adamw_update;
    t.cudnn_attention = feb.terms.cudnn_attention;
    t.fp8_recipes = feb.terms.fp8_recipes;
    expect_same(t, feb.terms, "torchtitan-2024-10");
  }
  EXPECT_TRUE(cur.terms.sac_saves_cudnn_attention);
  {
    // torchtitan-2025-07 is the newest profile but for those two terms and the checkpoint's
    // early stop (off from 25413d224, below).
    RuntimeTerms t = jul.terms;
    t.cudnn_attention = cur.terms.cudnn_attention;
    t.sac_saves_cudnn_attention = cur.terms.sac_saves_cudnn_attention;
    t.recompute_early_stop = cur.terms.recompute_early_stop;
    // mxfp8 is listed from torchtitan-2025-10 on (its MXLinearConverter read at 6a3a9da95; the
    // converter of earlier generations, from ce5ace24d, was not read).
    t.fp8_recipes = cur.terms.fp8_recipes;
    expect_same(t, cur.terms, "torchtitan-2025-07");
  }
  {
    // torchtitan-2025-02 is torchtitan-2025-07 but for torch's fused RMSNorm and torchao's saved
    // float8 input, below.
    RuntimeTerms t = feb.terms;
    t.rmsnorm = jul.terms.rmsnorm;
    t.fp8_input_saved = jul.terms.fp8_input_saved;
    expect_same(t, jul.terms, "torchtitan-2025-02");
  }
  // torchao's tensorwise Float8Linear kept its fp8-cast input for backward from e1aee6354
  // (2024-07-29; float8_experimental before it) until c6de9b42a (2025-07-24), which saves the
  // high-precision input for every recipe.
  for (const RuntimeSpec* rt : {&apr, &may, &jun, &oct, &feb}) EXPECT_TRUE(rt->terms.fp8_input_saved) << rt->name;
  for (const RuntimeSpec* rt : {&jul, &cur}) EXPECT_FALSE(rt->terms.fp8_input_saved) << rt->name;
  // RMSNorm: torchtitan's Triton fused_rmsnorm in llama3_8b/llama2_13b.toml @1ea476e9f, then
  // eager ops, then torch's own fused kernel behind nn.RMSNorm (pytorch/pytorch#153666,
  // nightlies of 2025-07-20 on).
  EXPECT_EQ(apr.terms.rmsnorm, "fused");
  for (const RuntimeSpec* rt : {&may, &jun, &oct, &feb}) EXPECT_EQ(rt->terms.rmsnorm, "eager") << rt->name;
  for (const RuntimeSpec* rt : {&jul, &cur}) EXPECT_EQ(rt->terms.rmsnorm, "fused") << rt->name;
  EXPECT_FALSE(apr.terms.expandable_segments);  // run_llama_train.sh before a5e57e4a9
  EXPECT_FALSE(may.terms.expandable_segments);
  EXPECT_FALSE(jun.terms.expandable_segments);
  EXPECT_TRUE(cur.terms.expandable_segments);
  // Row-wise float8 recipes arrived with [float8] recipe_name (torchtitan 069bae286, 2025-02-27).
  EXPECT_EQ(apr.terms.fp8_recipes, std::vector<std::string>{"tensorwise"});
  EXPECT_EQ(may.terms.fp8_recipes, std::vector<std::string>{"tensorwise"});
  EXPECT_EQ(jun.terms.fp8_recipes, std::vector<std::string>{"tensorwise"});
  EXPECT_EQ(oct.terms.fp8_recipes, std::vector<std::string>{"tensorwise"});
  EXPECT_EQ(cur.terms.fp8_recipes, (std::vector<std::string>{"tensorwise", "rowwise", "rowwise_with_gw_hp", "mxfp8"}));
  for (const RuntimeSpec* rt : {&apr, &may, &jun}) {
    RuntimeTerms t = rt->terms;
    t.adamw_update = cur.terms.adamw_update;  // foreach until 2025-02-24 (above)
    t.rmsnorm = cur.terms.rmsnorm;
    t.recompute_early_stop = cur.terms.recompute_early_stop;  // early stop until 2025-08-28 (below)
    t.fp8_recipes = cur.terms.fp8_recipes;
    t.expandable_segments = cur.terms.expandable_segments;
    t.fp32_logits_held = cur.terms.fp32_logits_held;  // torchtitan-2024-04 and -05 kept pred (below)
    t.outputs_kept = cur.terms.outputs_kept;
    EXPECT_EQ(t.attention, cur.terms.attention) << rt->name;
    EXPECT_EQ(t.cross_entropy, cur.terms.cross_entropy) << rt->name;
    EXPECT_EQ(t.rope, cur.terms.rope) << rt->name;
    EXPECT_EQ(t.swiglu, cur.terms.swiglu) << rt->name;
    EXPECT_EQ(t.reduce_dtypes, cur.terms.reduce_dtypes) << rt->name;
    EXPECT_EQ(t.reduce_dtype_default, cur.terms.reduce_dtype_default) << rt->name;
    EXPECT_EQ(t.root_unit, cur.terms.root_unit) << rt->name;
    EXPECT_EQ(t.grads_freed_between_steps, cur.terms.grads_freed_between_steps) << rt->name;
    EXPECT_EQ(t.sync_every_micro_step, cur.terms.sync_every_micro_step) << rt->name;
    EXPECT_EQ(t.fp8_all_gather, cur.terms.fp8_all_gather) << rt->name;
    EXPECT_EQ(t.collective_buffers, cur.terms.collective_buffers) << rt->name;
    EXPECT_EQ(t.recompute_early_stop, cur.terms.recompute_early_stop) << rt->name;
    EXPECT_EQ(t.compile, cur.terms.compile) << rt->name;
    EXPECT_EQ(t.fp8_recipes, cur.terms.fp8_recipes) << rt->name;
    EXPECT_EQ(t.selective_op, cur.terms.selective_op) << rt->name;
    EXPECT_EQ(t.selective_blocks, cur.terms.selective_blocks) << rt->name;
    EXPECT_EQ(t.use_cache, cur.terms.use_cache) << rt->name;
    EXPECT_EQ(t.loss_in_model, cur.terms.loss_in_model) << rt->name;
  }
  // torch's non-reentrant checkpoint stops its recompute early by default; torchtitan passes
  // early_stop=False from 25413d224 (#1580, 2025-08-29).
  for (const RuntimeSpec* rt : {&apr, &may, &jun, &oct, &feb, &jul}) EXPECT_TRUE(rt->terms.recompute_early_stop) << rt->name;
  EXPECT_FALSE(cur.terms.recompute_early_stop);
  // train.py's `pred = model(input_ids)` in the step loop kept the previous step's pred until
  // the next forward returned; e29b6b4d4 deleted it before backward.
  // torchao's Float8Linear saved the fp8 weight for backward until force_recompute_fp8_weight_in_bwd
  // (ao e91955800, 2024-10-02, off by default); from ao 03c850afa (2025-06-13) it never does.
  EXPECT_TRUE(apr.terms.fp8_weight_saved);
  EXPECT_TRUE(may.terms.fp8_weight_saved);
  EXPECT_TRUE(jun.terms.fp8_weight_saved);
  EXPECT_FALSE(cur.terms.fp8_weight_saved);
  EXPECT_EQ(apr.terms.outputs_kept, "next_forward");
  EXPECT_EQ(may.terms.outputs_kept, "next_forward");
  EXPECT_EQ(jun.terms.outputs_kept, "backward");
  EXPECT_EQ(cur.terms.outputs_kept, "backward");
  for (const RuntimeSpec* rt : {&apr, &may, &jun, &cur}) {
    EXPECT_FALSE(rt->terms.use_cache) << rt->name;      // the model returns the logits only
    EXPECT_FALSE(rt->terms.loss_in_model) << rt->name;  // loss_fn(pred, labels) in train.py
  }
  // del pred before backward arrived in torchtitan e29b6b4d4 (2024-06-12).
  EXPECT_TRUE(apr.terms.fp32_logits_held);
  EXPECT_TRUE(may.terms.fp32_logits_held);
  EXPECT_FALSE(jun.terms.fp32_logits_held);
  EXPECT_FALSE(cur.terms.fp32_logits_held);
  // llm-foundry's torch 1.13 generation differs from the newest only in the recompute.
  const RuntimeSpec lf_old = load_runtime("llm-foundry-2023-05");
  const RuntimeSpec lf = load_runtime("llm-foundry");
  EXPECT_EQ(lf_old.framework, "llm-foundry");
  EXPECT_EQ(lf_old.until_date, lf.from_date);
  EXPECT_FALSE(lf_old.terms.recompute_early_stop);
  EXPECT_TRUE(lf.terms.recompute_early_stop);
  EXPECT_EQ(lf_old.terms.cross_entropy, lf.terms.cross_entropy);
  EXPECT_EQ(lf_old.terms.attention, lf.terms.attention);
  EXPECT_EQ(lf_old.terms.reduce_dtypes, lf.terms.reduce_dtypes);
  EXPECT_EQ(lf_old.terms.collective_buffers, lf.terms.collective_buffers);
  EXPECT_EQ(lf_old.terms.expandable_segments, lf.terms.expandable_segments);
  // A profile without `framework` is its own framework.
  EXPECT_EQ(load_runtime("fms-fsdp").framework, "fms-fsdp");
}

// OLMo-core's two generations state what its code does at the README commits of
// configs/published/outside.csv (310866e45, e27ba7455), and differ only where 00d34f693 changed it:
// Transformer.forward stopped returning self.w_out(h).float() and the scripts compile the loss.
TEST(RuntimeSpec, OlmoCoreGenerationsStateWhatItsCodeDoes) {
  const RuntimeSpec early = load_runtime("olmo-core-2024-09");
  const RuntimeSpec late = load_runtime("olmo-core");
  for (const RuntimeSpec* rt : {&early, &late}) {
    const RuntimeTerms& t = rt->terms;
    EXPECT_EQ(rt->framework, "olmo-core") << rt->name;
    // trainer.py _train_microbatch_context: no_sync() only for DDP; FSDP2 reduces every micro-batch.
    EXPECT_TRUE(t.sync_every_micro_step) << rt->name;
    EXPECT_EQ(t.unsynced_gradient_dtype, "reduce_dtype") << rt->name;  // FSDP2's accumulation, were it used
    // DataParallelConfig: param_dtype / reduce_dtype (float32 | bfloat16, default float32);
    // TransformerConfig.dtype float32: fp32 shards, bf16 compute via MixedPrecisionPolicy.
    EXPECT_EQ(t.reduce_dtypes, (std::vector<std::string>{"fp32", "bf16"})) << rt->name;
    EXPECT_EQ(t.reduce_dtype_default, "fp32") << rt->name;
    EXPECT_FALSE(t.reduce_dtype_is_param_dtype) << rt->name;
    EXPECT_EQ(t.master_dtype_default, "fp32") << rt->name;
    // compile=True turns fused_ops and flash-attn off: SDPA and eager norm / rope / SwiGLU ops.
    EXPECT_EQ(t.attention, "flash") << rt->name;
    // layer_norm.py RMSNorm (full_precision): weight.type_as(x) * x in fp32, then .to(og_dtype).
    EXPECT_EQ(t.rmsnorm, "eager_fp32_weight") << rt->name;
    EXPECT_EQ(t.gqa, "repeated") << rt->name;  // attention.py: repeat_interleave before SDPA
    EXPECT_EQ(t.rope, "eager") << rt->name;
    EXPECT_EQ(t.swiglu, "eager") << rt->name;
    EXPECT_TRUE(t.compile) << rt->name;
    EXPECT_TRUE(t.root_unit) << rt->name;  // wrapping_strategy full: fully_shard(self) holds embeddings, norm, w_out
    EXPECT_TRUE(t.fp8_all_gather) << rt->name;  // Float8Config.enable_fsdp_float8_all_gather = True
    EXPECT_EQ(t.fp8_recipes, std::vector<std::string>{"tensorwise"}) << rt->name;  // dynamic scaling
    EXPECT_FALSE(t.expandable_segments) << rt->name;  // no PYTORCH_CUDA_ALLOC_CONF in src/
    EXPECT_EQ(t.collective_buffers, "record_stream") << rt->name;
    EXPECT_TRUE(t.recompute_early_stop) << rt->name;
    EXPECT_TRUE(t.selective_op) << rt->name;
    EXPECT_TRUE(t.selective_blocks) << rt->name;
  }
  EXPECT_EQ(early.until_date, late.from_date);
  EXPECT_EQ(late.from_date, "2024-11-01");  // 00d34f693
  EXPECT_EQ(early.terms.cross_entropy, "fp32_upcast");
  EXPECT_TRUE(early.terms.fp32_logits_held);
  EXPECT_EQ(late.terms.cross_entropy, "fused");
  EXPECT_FALSE(late.terms.fp32_logits_held);
  // _train_batch: logits = self.model_forward(micro_batch) in the micro-batch loop, the optimizer
  // step in the same function; the loss outside the model.
  for (const RuntimeSpec* rt : {&early, &late}) {
    EXPECT_EQ(rt->terms.outputs_kept, "step_end") << rt->name;
    EXPECT_FALSE(rt->terms.loss_in_model) << rt->name;
    EXPECT_FALSE(rt->terms.use_cache) << rt->name;
  }
  // The terms the loop above does not pin are the same in both (their files are unchanged
  // between the two commits).
  EXPECT_EQ(early.terms.master_dtypes, late.terms.master_dtypes);
  EXPECT_EQ(early.terms.reduce_copies_gradient, late.terms.reduce_copies_gradient);
  EXPECT_EQ(early.terms.grads_freed_between_steps, late.terms.grads_freed_between_steps);
  EXPECT_FALSE(early.gpu_terms.has_value());
  EXPECT_FALSE(late.gpu_terms.has_value());
}

TEST(RuntimeSpec, GenerationDatesAreChecked) {
  auto with_dates = [](const std::string& header) { return header + minimal("", ""); };
  EXPECT_NO_THROW(parse_runtime_toml(with_dates("from_date = \"2024-05-02\"\nuntil_date = \"2024-10\"\n"), "x.toml"));
  for (const char* bad : {"2024-13-01", "24-05-02", "2024-05-2", "May 2024"}) {
    try {
      parse_runtime_toml(with_dates(std::string("from_date = \"") + bad + "\"\n"), "x.toml");
      FAIL() << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "from_date") << bad;
    }
  }
  try {
    parse_runtime_toml(with_dates("from_date = \"2024-10-22\"\nuntil_date = \"2024-05-02\"\n"), "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "until_date");
  }
  EXPECT_TRUE(is_iso_date("2024-04"));
  EXPECT_FALSE(is_iso_date("2024-00"));
}

TEST(RuntimeSpec, ParserRefusesWhatTheSchemaDoesNotAllow) {
  EXPECT_NO_THROW(parse_runtime_toml(minimal("", ""), "x.toml"));
  // An unknown term, with the closest known one suggested.
  try {
    parse_runtime_toml(minimal("atention = \"flash\"\n", ""), "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "terms.atention");
    EXPECT_NE(std::string(e.what()).find("attention"), std::string::npos);
  }
  // fp8_recipes: torchao's recipe names only ("none" is implied), and the former boolean term
  // `fp8` is unknown with fp8_recipes suggested.
  std::string recipes = minimal("", "");
  recipes.replace(recipes.find("fp8_recipes = []"), 16, "fp8_recipes = [\"rowwise\", \"blockwise\"]");
  try {
    parse_runtime_toml(recipes, "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "terms.fp8_recipes");
    EXPECT_NE(std::string(e.what()).find("tensorwise | rowwise | rowwise_with_gw_hp"), std::string::npos) << e.what();
  }
  try {
    parse_runtime_toml(minimal("fp8 = true\n", ""), "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "terms.fp8");
    EXPECT_NE(std::string(e.what()).find("fp8_recipes"), std::string::npos) << e.what();
  }
  // torch: a release "MAJOR.MINOR" or unstated, as a string.
  for (const char* ok : {"\"2.11\"", "\"10.0\""}) {
    std::string t = minimal("", "");
    t.replace(t.find("torch = \"unstated\""), 18, std::string("torch = ") + ok);
    EXPECT_EQ(parse_runtime_toml(t, "x.toml").terms.torch, std::string(ok).substr(1, std::string(ok).size() - 2));
  }
  for (const char* refused : {"\"2.11.0\"", "\"2\"", "\"latest\"", "\"2.x\"", "2.11"}) {
    std::string t = minimal("", "");
    t.replace(t.find("torch = \"unstated\""), 18, std::string("torch = ") + refused);
    try {
      parse_runtime_toml(t, "x.toml");
      FAIL() << refused;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "terms.torch") << refused;
    }
  }
  // A value outside the allowed set.
  std::string bad = minimal("", "");
  bad.replace(bad.find("\"flash\""), 7, "\"fused\"");
  EXPECT_THROW(parse_runtime_toml(bad, "x.toml"), ConfigError);
  // A term without its source.
  std::string nosrc = minimal("", "");
  nosrc.erase(nosrc.find("attention = \"a public source\"\n"), std::string("attention = \"a public source\"\n").size());
  try {
    parse_runtime_toml(nosrc, "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "sources.attention");
  }
  // A missing term.
  std::string noterm = minimal("", "");
  noterm.erase(noterm.find("root_unit = false\n"), std::string("root_unit = false\n").size());
  EXPECT_THROW(parse_runtime_toml(noterm, "x.toml"), ConfigError);
  // A [gpu] override needs its own source.
  std::string gpu = minimal("", "");
  gpu.insert(gpu.find("[sources]"), "[gpu]\nroot_unit = true\n");
  try {
    parse_runtime_toml(gpu, "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "sources.gpu.root_unit");
  }
  EXPECT_TRUE(parse_runtime_toml(gpu + "[sources.gpu]\nroot_unit = \"a public source\"\n", "x.toml").terms_for(true).root_unit);
}

// A term with a config key (sync_every_micro_step: parallelism.sync_every_micro_step) may say
// "config"; no other term may, and a [gpu] table can fix it again.
TEST(RuntimeSpec, ConfigValueOnlyForTermsWithAConfigKey) {
  std::string cfg = minimal("", "");
  cfg.replace(cfg.find("sync_every_micro_step = false"), std::string("sync_every_micro_step = false").size(),
              "sync_every_micro_step = \"config\"");
  const RuntimeSpec rt = parse_runtime_toml(cfg, "x.toml");
  EXPECT_TRUE(rt.terms.follows_config("sync_every_micro_step"));
  EXPECT_TRUE(rt.terms.sync_every_micro_step);  // the key's default, for a config that leaves it unset
  EXPECT_FALSE(rt.terms.follows_config("root_unit"));
  const RuntimeSpec fixed_on_gpu = parse_runtime_toml(
      cfg + "[gpu]\nsync_every_micro_step = false\n[sources.gpu]\nsync_every_micro_step = \"a public source\"\n",
      "x.toml");
  EXPECT_FALSE(fixed_on_gpu.terms_for(true).follows_config("sync_every_micro_step"));
  EXPECT_FALSE(fixed_on_gpu.terms_for(true).sync_every_micro_step);
  EXPECT_TRUE(fixed_on_gpu.terms_for(false).follows_config("sync_every_micro_step"));
  std::string bad = minimal("", "");
  bad.replace(bad.find("root_unit = false"), std::string("root_unit = false").size(), "root_unit = \"config\"");
  try {
    parse_runtime_toml(bad, "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "terms.root_unit");
  }
  std::string other = minimal("", "");
  other.replace(other.find("sync_every_micro_step = false"), std::string("sync_every_micro_step = false").size(),
                "sync_every_micro_step = \"yes\"");
  try {
    parse_runtime_toml(other, "x.toml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "terms.sync_every_micro_step");
    EXPECT_NE(std::string(e.what()).find("parallelism.sync_every_micro_step"), std::string::npos) << e.what();
  }
}

TEST(RuntimeSpec, UnknownNameListsTheAllowedOnes) {
  try {
    load_runtime("torchtitn");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'torchtitan'"), std::string::npos) << e.what();
  }
}

TEST(TrainerChecks, ListsEveryReasonTheTrainerRefuses) {
  TrainConfig c;
  c.model.name = "m";
  c.precision.param_dtype = "bf16";
  c.precision.compile = true;
  const auto r = trainer_refusals(c, false);
  std::vector<std::string> keys;
  for (const auto& x : r) keys.push_back(x.key);
  EXPECT_NE(std::find(keys.begin(), keys.end(), "precision"), keys.end());          // bf16 on Gloo
  EXPECT_NE(std::find(keys.begin(), keys.end(), "precision.compile"), keys.end());  // no compiler
  EXPECT_NE(std::find(keys.begin(), keys.end(), "data.path"), keys.end());          // empty
  // On an NCCL build the 16-bit run is fine; the rest stays.
  const auto g = trainer_refusals(c, true);
  for (const auto& x : g) EXPECT_NE(x.key, "precision");
}

// atorch's example (dlrover @3a442b728, transformers 4.31.0): FSDP1 with amp's MixedPrecision,
// transformers' model given the labels, the KV cache left on, `outputs` kept by the loop.
TEST(RuntimeSpec, AtorchStatesWhatItsExampleDoes) {
  const RuntimeSpec rt = load_runtime("atorch");
  const RuntimeTerms& t = rt.terms;
  EXPECT_EQ(rt.framework, "atorch");
  EXPECT_EQ(t.cross_entropy, "fp32_upcast_shifted");  // logits.float(), then logits[..., :-1, :].contiguous()
  EXPECT_TRUE(t.fp32_logits_held);
  EXPECT_TRUE(t.use_cache);                            // config.use_cache, no transformers checkpointing
  EXPECT_EQ(t.outputs_kept, "next_forward");           // outputs = model(**batch) in the loop
  EXPECT_TRUE(t.loss_in_model);                        // labels passed: the model computes the loss
  EXPECT_EQ(t.reduce_dtype_default, "bf16");           // MixedPrecision(bf16, bf16, bf16)
  EXPECT_TRUE(t.reduce_dtype_is_param_dtype);
  EXPECT_EQ(t.gqa, "native");                          // flash-attn reads K, V at n_kv_heads
  EXPECT_TRUE(t.root_unit);                            // FSDP1 root: embedding, norm, lm_head
  EXPECT_EQ(t.collective_buffers, "rate_limited");     // limit_all_gathers = True
  EXPECT_FALSE(t.expandable_segments);
}

// litgpt's thunder pre-training script behind Lightning Fabric, whose wrapper returns the model's
// output up-cast to fp32: until 508027ab the loop keeps those logits (`logits = model(x)`) into
// the next forward and chunks the loss by 128 rows; from it forward_and_loss keeps them in a
// local and calls one cross_entropy. The date picks the generation.
TEST(RuntimeSpec, LitgptGenerationsStateWhereTheFp32LogitsLive) {
  const RuntimeSpec early = load_runtime("litgpt-2024-03");
  EXPECT_EQ(early.terms.cross_entropy, "fp32_upcast_chunked");
  EXPECT_TRUE(early.terms.fp32_logits_held);
  EXPECT_EQ(early.terms.outputs_kept, "next_forward");
  const RuntimeSpec later = load_runtime("litgpt");
  EXPECT_EQ(later.terms.cross_entropy, "fp32_upcast");
  EXPECT_FALSE(later.terms.fp32_logits_held);
  EXPECT_EQ(early.until_date, later.from_date);  // 508027ab, 2024-04-04
  EXPECT_EQ(later.from_date, "2024-04-04");
}

// Which runtimes run one fused q/k/v GEMM whose output attention keeps through v's view: litgpt's
// model (litgpt, litgpt-2024-03, lightning-thunder), lit-llama's (c_attn) and fms (fms-fsdp) do; three separate GEMMs
// everywhere else; llm-foundry's MPT views are all of its Wqkv output already (no RoPE).
TEST(RuntimeSpec, FusedQkvOutputKeptWhereTheModelCodeSplitsOneGemm) {
  for (const std::string& name : list_runtime_presets()) {
    const bool fused = name == "litgpt" || name == "litgpt-2024-03" || name == "lightning-thunder" || name == "fms-fsdp" ||
                       name == "lit-llama";
    EXPECT_EQ(load_runtime(name).terms.qkv_output_kept, fused) << name;
  }
}

}  // namespace
}  // namespace shardcast
