// torchtitan of 2026 (configs/runtimes/torchtitan-2026-06.toml, torchtitan.toml) and the Blackwell
// formats, term by term: the chunked loss's bytes against its formula (chunked_loss.h), the
// document mask's attention work as the sum over documents of their causal work
// (document_mask.h), CUDA graphs' host time, the kept gradients, the MXFP8 / NVFP4 GEMMs and
// casts (fp8_recipe.h) and every refusal by name (fp8_formats.h, the runtime's fp8_recipes).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "planner/emit/emit_ecosystem.h"
#include "planner/model/chunked_loss.h"
#include "planner/model/document_mask.h"
#include "planner/model/efficiency.h"
#include "planner/model/fp8_formats.h"
#include "planner/model/fp8_recipe.h"
#include "planner/model/ops.h"
#include "planner/model/plan.h"
#include "planner/model/plan_stages.h"
#include "planner/model/runtime.h"
#include "shared/errors.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

// Llama 3 8B on 4 GB200, op SAC, compile, 2 x 8192, planned for `runtime`.
TrainConfig gb200_8b(const std::string& runtime) {
  TrainConfig c = test::make_config("llama3-8b", "GB200", 4, ShardingStrategy::full_shard, AcMode::selective_op, 2, 8192);
  c.precision.compile = true;
  c.runtime = runtime;
  return c;
}
Prediction plan_for(const TrainConfig& c) {
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  return plan(c, hw, resolve_plan_options(c, hw));
}
std::string refusal(const TrainConfig& c) {
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  return runtime_refusal(runtime_preset(c.runtime), c, hw);
}

TEST(ChunkedLoss, BytesAreTheFormula) {
  const double T = 16384, V = 128256, d = 4096;
  const int A = 2, R = 4, N = kChunkedLossChunks;
  EXPECT_EQ(N, 8);
  EXPECT_DOUBLE_EQ(chunked_loss_chunk_bytes(T, V, A), (A + 12.0) * T * V / 8);
  const double held = (A + 4.0) * T * d, per_chunk = A * T * d / N + (A + R) * V * d;
  EXPECT_DOUBLE_EQ(chunked_loss_held_bytes(T, d, V, A, R), held + std::max(per_chunk, A * T * d));
  EXPECT_DOUBLE_EQ(chunked_loss_peak_bytes(T, d, V, A, R), held + per_chunk + (A + 12.0) * T * V / N);
  // On a 1/tp vocabulary shard (TP's loss parallel): the V-sized terms divide, the whole hidden
  // states' (held, the chunk's hidden gradient) do not.
  EXPECT_DOUBLE_EQ(chunked_loss_peak_bytes(T, d, V, A, R, N, 4),
                   held + A * T * d / N + (A + R) * V * d / 4 + (A + 12.0) * T * V / N / 4);
  // Under a quarter of the whole-logits fp32 loss's forward at 65k tokens per micro-step (the
  // issue's case): 19.5 against 84.1 GB.
  const double whole = loss_memory(CrossEntropyImpl::fp32_upcast, 65536, V, A).fwd_transient +
                       loss_memory(CrossEntropyImpl::fp32_upcast, 65536, V, A).saved;
  EXPECT_LT(chunked_loss_peak_bytes(65536, d, V, A, R), 0.25 * whole);
  // loss_memory: one chunk's logits, nothing saved, no backward transient.
  const LossMemory l = loss_memory(CrossEntropyImpl::chunked_lm_head, T, V, A);
  EXPECT_DOUBLE_EQ(l.fwd_transient, chunked_loss_chunk_bytes(T, V, A));
  EXPECT_EQ(l.saved, 0);
  EXPECT_EQ(l.bwd_transient, 0);
  EXPECT_FALSE(is_fp32_upcast(CrossEntropyImpl::chunked_lm_head));
  CrossEntropyImpl parsed;
  ASSERT_TRUE(parse_cross_entropy("chunked_lm_head", parsed));
  EXPECT_EQ(parsed, CrossEntropyImpl::chunked_lm_head);
}

TEST(DocumentMask, WorkIsTheSumOverDocumentsOfCausalWork) {
  EXPECT_DOUBLE_EQ(document_causal_work({1000, 3000, 4192}), 1000.0 * 1000 + 3000.0 * 3000 + 4192.0 * 4192);
  EXPECT_EQ(packed_document_lengths(8192, 0), std::vector<double>{8192});
  EXPECT_EQ(packed_document_lengths(8192, 10000), std::vector<double>{8192});
  EXPECT_EQ(packed_document_lengths(8192, 3000), (std::vector<double>{3000, 3000, 2192}));
  EXPECT_EQ(packed_document_lengths(8192, 1024), std::vector<double>(8, 1024));
  EXPECT_DOUBLE_EQ(document_attention_work(8192, 0), 1.0);
  EXPECT_DOUBLE_EQ(document_attention_work(8192, 1024), 1.0 / 8);
  EXPECT_DOUBLE_EQ(document_attention_work(8192, 3000), (2 * 3000.0 * 3000 + 2192.0 * 2192) / (8192.0 * 8192));
  // The attention op's time and FLOPs scale by it; nothing else moves.
  ComputeContext c;
  c.peak_flops = 1e15;
  c.hbm_bandwidth = 8e12;
  c.eff.attention_eff = 0.5;
  c.eff.hbm_eff = 0.9;
  c.attention_flops = 4e14;
  const ModelSpec m = load_model("llama3-8b");
  const std::vector<Op> ops = block_forward_ops(m, 1, 8192, 2);
  ComputeContext masked = c;
  masked.attention_work = 1.0 / 8;
  for (const Op& op : ops) {
    if (op.kind == OpKind::attention) {
      EXPECT_NEAR(op_forward_time(op, masked), std::max(op.flops / 8 / c.attention_flops, op.bytes / (8e12 * 0.9)), 1e-12);
      EXPECT_LT(op_forward_time(op, masked), op_forward_time(op, c));
    } else {
      EXPECT_DOUBLE_EQ(op_forward_time(op, masked), op_forward_time(op, c)) << op.name;
    }
  }
  EXPECT_LT(unit_cost(ops, 0, 0, masked).fwd_flops, unit_cost(ops, 0, 0, c).fwd_flops);
}

TEST(Torchtitan2026, DocumentLengthMovesOnlyItsRuntimesAttention) {
  TrainConfig dense = gb200_8b("torchtitan"), docs = dense;
  docs.data.mean_doc_len = 1024;
  EXPECT_GT(plan_for(docs).tokens_per_s_per_gpu, plan_for(dense).tokens_per_s_per_gpu);
  EXPECT_EQ(plan_for(docs).mem_peak_bytes, plan_for(dense).mem_peak_bytes);  // FlexAttention keeps what flash keeps
  // SDPA's causal mask spans the whole sequence: the older generation ignores the key.
  TrainConfig old_dense = gb200_8b("torchtitan-2025-10"), old_docs = old_dense;
  old_docs.data.mean_doc_len = 1024;
  EXPECT_EQ(plan_for(old_docs).tokens_per_s_per_gpu, plan_for(old_dense).tokens_per_s_per_gpu);
}

TEST(Torchtitan2026, ChunkedLossAndKeptGradientsInThePlan) {
  const Prediction old_gen = plan_for(gb200_8b("torchtitan-2025-10"));
  const Prediction june = plan_for(gb200_8b("torchtitan-2026-06"));
  const Prediction cur = plan_for(gb200_8b("torchtitan"));
  // No fp32 copy of all logits: the allocated peak falls by more than the chunks' share of it.
  EXPECT_LT(june.mem_peak_bytes, old_gen.mem_peak_bytes - 10.0 * (1 << 30));
  // Gradients kept between steps (zero_grad(set_to_none=False) under CUDA graphs): a static
  // component of a full fp32 gradient shard.
  const double shard = 4.0 * double(load_model("llama3-8b").total_params()) / 4;
  EXPECT_NEAR(test::component(cur, "sharded_gradients"), shard, 1e-6 * shard);
  // CUDA graphs remove the per-unit host time only.
  EXPECT_GE(cur.tokens_per_s_per_gpu, june.tokens_per_s_per_gpu);
  const HardwareSpec hw = load_hardware("GB200");
  const PlanOptions o = resolve_plan_options(gb200_8b("torchtitan"), hw);
  EXPECT_TRUE(o.host_units_graphed);
  EXPECT_FALSE(o.grads_freed_between_steps);
  EXPECT_EQ(runtime_efficiency(hw, o).unit_overhead_s, 0);
  EXPECT_EQ(runtime_efficiency(hw, o).step_overhead_s, read_efficiency(hw).step_overhead_s);
}

// CUDA graphs as torchtitan captures them: on CUDA GPUs only (cudagraph.py wrap_with_cuda_graph:
// eager under ROCm, the gradients still zeroed in place) and never with pipeline parallelism,
// which torchtitan refuses with them (trainer.py _validate_cuda_graphs): there the plan is the run
// with training.disable_cuda_graphs = True, which emit writes, and its zero_grad(set_to_none=True)
// frees the gradients between steps.
TEST(Torchtitan2026, CudaGraphsOnlyOnCudaGpusAndWithoutPipelines) {
  const HardwareSpec gb200 = load_hardware("GB200");
  TrainConfig c = gb200_8b("torchtitan");
  c.cluster.gpus_per_node = 4;
  c.parallelism.pp = 2;
  c.parallelism.pp_microbatch = 1;
  validate_or_throw(c);
  const PlanOptions piped = resolve_plan_options(c, gb200);
  EXPECT_FALSE(piped.host_units_graphed);
  EXPECT_TRUE(piped.grads_freed_between_steps);
  const std::string recipe = render_torchtitan_recipe(c);
  EXPECT_NE(recipe.find("config.training.disable_cuda_graphs = True"), std::string::npos);
  EXPECT_NE(recipe.find("CUDA graphs off\n# (torchtitan refuses them with pipeline parallelism)"), std::string::npos);
  EXPECT_EQ(recipe.find("CUDA graphs on"), std::string::npos);
  TrainConfig amd = test::make_config("llama3-8b", "MI300X", 8, ShardingStrategy::full_shard, AcMode::selective_op, 2, 8192);
  amd.precision.compile = true;
  amd.runtime = "torchtitan";
  const PlanOptions rocm = resolve_plan_options(amd, load_hardware("MI300X"));
  EXPECT_FALSE(rocm.host_units_graphed);
  EXPECT_FALSE(rocm.grads_freed_between_steps);
  // The recipe says so: no graph pool in the plan, the wrapper eager under ROCm.
  const std::string rocm_recipe = render_torchtitan_recipe(amd);
  EXPECT_NE(rocm_recipe.find("under ROCm torchtitan's wrapper runs the step eagerly (no graph pool)"), std::string::npos);
  EXPECT_EQ(rocm_recipe.find("private memory pool"), std::string::npos);
  EXPECT_NE(rocm_recipe.find("config.training.disable_cuda_graphs = False  # the default; eager under ROCm"), std::string::npos)
      << rocm_recipe;
}

// The graphs' private pool (allocation_trace.h TraceInputs::cuda_graphs): the same plan with the
// units replayed eagerly in the device pool. The tensors are the same (the allocated peak moves
// only with the host time the graphs remove: within 0.5 %); for this plan the graph pool's whole
// segments, which the device pool's blocks cannot join, reserve more (73.0 against 72.7 GiB);
// other plans reserve less (docs/cost-model.md §5.4, "CUDA graphs' pool").
TEST(Torchtitan2026, CudaGraphsPrivatePoolReservesMoreThanTheEagerLoop) {
  const HardwareSpec gb200 = load_hardware("GB200");
  const TrainConfig c = gb200_8b("torchtitan");
  PlanOptions graphed = resolve_plan_options(c, gb200);
  ASSERT_TRUE(graphed.host_units_graphed);
  PlanOptions eager = graphed;
  eager.host_units_graphed = false;
  const Prediction g = plan(c, gb200, graphed), e = plan(c, gb200, eager);
  EXPECT_NEAR(g.mem_peak_bytes, e.mem_peak_bytes, 0.005 * e.mem_peak_bytes);
  EXPECT_GT(g.mem_reserved_bytes, e.mem_reserved_bytes);
}

// Context parallel's all-to-all K/V rotation: torchtitan's rotate-method option ran from
// c97876e7d (2024-12-11) to 8e5554449 (2026-06-14); the generations that had it throughout list
// cp_alltoall in their mesh, the others refuse it by name.
TEST(Torchtitan2026, AllToAllRotationOnlyWhereTheOptionRan) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  c.parallelism.cp = 4;
  c.parallelism.cp_rotate = CpRotate::alltoall;
  for (const char* rt : {"torchtitan-2025-02", "torchtitan-2025-07", "torchtitan-2025-10"}) {
    c.runtime = rt;
    EXPECT_EQ(refusal(c), "") << rt;
  }
  for (const char* rt : {"torchtitan-2024-10", "torchtitan-2026-06", "torchtitan"}) {
    c.runtime = rt;
    EXPECT_NE(refusal(c).find("cannot run parallelism.cp_rotate = \"alltoall\""), std::string::npos) << rt << refusal(c);
  }
  c.parallelism.cp_rotate = CpRotate::allgather;
  EXPECT_EQ(refusal(c), "");
}

// Tied embeddings under pipeline parallelism: torchtitan raises (decoder.py @b5bcd76c6 lines
// 168-171), KempnerForge refuses (config/job.py line 147): refused by name for every runtime.
TEST(Torchtitan2026, TiedEmbeddingsWithPipelineRefused) {
  TrainConfig c = test::make_config("llama3.2-1b", "H100-80GB-SXM", 16, ShardingStrategy::full_shard, AcMode::full, 2, 8192);
  ASSERT_TRUE(c.model.tied_embeddings);
  c.parallelism.pp = 2;
  c.parallelism.pp_microbatch = 1;
  for (const char* rt : {"torchtitan", "torchtitan-2025-10", "kempnerforge"}) {
    c.runtime = rt;
    c.precision.master_dtype = std::string(rt) == "kempnerforge" ? "bf16" : "fp32";  // KempnerForge's pure bf16
    EXPECT_NE(refusal(c).find("tied input and output embeddings"), std::string::npos) << rt << ": " << refusal(c);
  }
  c.precision.master_dtype = "fp32";
  c.parallelism.pp = 1;
  c.parallelism.pp_microbatch = 1;
  c.runtime = "torchtitan";
  EXPECT_EQ(refusal(c).find("tied"), std::string::npos);
}

TEST(Torchtitan2026, GenerationsByDate) {
  const std::string tt = "torchtitan (FSDP2)";
  EXPECT_EQ(runtime_for_framework(tt, "2026-04-26"), "torchtitan-2025-10");  // the published GB200 rows
  EXPECT_EQ(runtime_for_framework(tt, "2026-06-08"), "torchtitan-2025-10");
  EXPECT_EQ(runtime_for_framework(tt, "2026-06-09"), "torchtitan-2026-06");
  EXPECT_EQ(runtime_for_framework(tt, "2026-08-12"), "torchtitan-2026-06");
  EXPECT_EQ(runtime_for_framework(tt, "2026-08-13"), "torchtitan");
  EXPECT_EQ(runtime_for_framework(tt), "torchtitan");
}

// torchao states its MXFP8 casts' rates on a B200 (fp8_recipe.h): through the planner's own B200
// effective HBM rate (the preset's hbm_tbps, hbm_ceiling and hbm_eff, as ops.cpp charges casts)
// a cast of 1 GiB takes 1 GiB / 6.3 TB/s along dim0 and / 3.9 TB/s along dim1 with the compiled /
// Triton kernels, and / 5.88883 and / 5.71672 TB/s with MXFP8Linear's Triton / CUDA ones, to 1e-9.
// Before, the scale was 8.0 / rate on top of the effective rate, so the casts ran at 5.43 / 3.36 TB/s.
TEST(BlockScaledFormats, MxCastsRunAtTheStatedB200Rates) {
  const HardwareSpec b200 = load_hardware("B200");
  const double effective =
      b200.gpu.hbm_bandwidth * b200.efficiency_param("hbm_eff") * b200.efficiency_param("hbm_ceiling");  // bytes/s
  const double bytes = double(1u << 30);
  for (const auto& [k, dim0, dim1] : {std::tuple{Mxfp8Casts::compile_triton, 6.3e12, 3.9e12},
                                      std::tuple{Mxfp8Casts::triton_cuda, 5.88883e12, 5.71672e12}}) {
    EXPECT_NEAR(fp8_cast_kernels_s({bytes * mxfp8_cast_bytes_scale(k, false)}, effective), bytes / dim0, 1e-9 * bytes / dim0);
    EXPECT_NEAR(fp8_cast_kernels_s({bytes * mxfp8_cast_bytes_scale(k, true)}, effective), bytes / dim1, 1e-9 * bytes / dim1);
  }
}

// The runtimes' cast kernels (runtime term mxfp8_casts): torchtitan's [mx] config to v0.2 casts
// dim0 compiled and dim1 with Triton; from 2026-06 torchao's MXFP8Linear casts with Triton and
// CUDA. The same MXFP8 plan on a B200 is faster with the latter (its dim1 cast at 5.72 against
// 3.9 TB/s, its dim0 at 5.89 against 6.3).
TEST(BlockScaledFormats, CastKernelsFollowTheRuntime) {
  const HardwareSpec b200 = load_hardware("B200");
  TrainConfig c = test::make_config("llama3-8b", "B200", 8, ShardingStrategy::full_shard, AcMode::selective_op, 1, 8192);
  c.precision.compile = true;
  c.precision.fp8 = Fp8Recipe::mxfp8;
  c.runtime = "torchtitan-2025-10";
  EXPECT_EQ(resolve_plan_options(c, b200).mxfp8_casts, Mxfp8Casts::compile_triton);
  c.runtime = "torchtitan-2026-06";
  PlanOptions now = resolve_plan_options(c, b200);
  ASSERT_EQ(now.mxfp8_casts, Mxfp8Casts::triton_cuda);
  PlanOptions older = now;
  older.mxfp8_casts = Mxfp8Casts::compile_triton;
  EXPECT_LT(plan(c, b200, now).step_time_s, plan(c, b200, older).step_time_s);
}

TEST(BlockScaledFormats, GemmsAndCasts) {
  for (LinearGemm g : {LinearGemm::forward, LinearGemm::grad_input, LinearGemm::grad_weight})
    for (Fp8Recipe r : {Fp8Recipe::mxfp8, Fp8Recipe::nvfp4}) {
      const Fp8GemmRun run = fp8_gemm_run(r, g, 2, true);
      EXPECT_TRUE(run.fp8);
      EXPECT_EQ(run.rate, 1.0);
      EXPECT_EQ(run.rescale_bytes_per_output, 0);
    }
  const double M = 8192, K = 4096, N = 14336, x = M * K, w = K * N, go = M * N;
  const Fp8CastKernels mx = fp8_cast_kernels(Fp8Recipe::mxfp8, M, K, N, 2, true, false);
  const double c0 = 3.0 * mxfp8_cast_bytes_scale(Mxfp8Casts::compile_triton, false),
               c1 = 3.0 * mxfp8_cast_bytes_scale(Mxfp8Casts::compile_triton, true);
  auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9 * want[i]) << i;
  };
  near(mx.fwd, {c0 * x, c0 * w});
  near(mx.bwd, {c0 * go, c1 * w, c1 * go, c1 * x});
  EXPECT_EQ(fp8_cast_kernels(Fp8Recipe::mxfp8, M, K, N, 2, false, false).fwd, mx.fwd);  // compile fuses none
  const Fp8CastKernels nv = fp8_cast_kernels(Fp8Recipe::nvfp4, M, K, N, 2, true, false);
  const double q = 2 + 2 * (0.5 + 1.0 / 16);
  EXPECT_EQ(nv.fwd, (std::vector<double>{2 * x, q * x, 2 * w, q * w}));
  EXPECT_EQ(nv.bwd, (std::vector<double>{2 * go, q * go}));
  // torchtitan's NVFP4 recipe: the last ceil(0.15 L) blocks bf16.
  EXPECT_DOUBLE_EQ(nvfp4_block_fraction(32), 27.0 / 32);
  EXPECT_DOUBLE_EQ(nvfp4_block_fraction(80), 68.0 / 80);
  EXPECT_DOUBLE_EQ(fp4_over_fp8_peak("10.0"), 2.0);
  EXPECT_DOUBLE_EQ(fp4_over_fp8_peak("10.3"), 14.0 / 4.5);
  // On GB200: bf16 < rowwise < mxfp8 < nvfp4 in tokens/s (the roofline; no measured grid).
  TrainConfig c = gb200_8b("torchtitan");
  double last = plan_for(c).tokens_per_s_per_gpu;
  for (Fp8Recipe r : {Fp8Recipe::rowwise, Fp8Recipe::mxfp8, Fp8Recipe::nvfp4}) {
    c.precision.fp8 = r;
    const double t = plan_for(c).tokens_per_s_per_gpu;
    EXPECT_GT(t, last) << to_string(r);
    last = t;
  }
}

TEST(BlockScaledFormats, RefusedByName) {
  // A GPU without the format.
  TrainConfig h100 = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::selective_op, 1, 8192);
  h100.runtime = "torchtitan";
  h100.precision.fp8 = Fp8Recipe::mxfp8;
  EXPECT_NE(refusal(h100).find("precision.fp8 = \"mxfp8\" on H100-80GB-SXM"), std::string::npos) << refusal(h100);
  EXPECT_NE(refusal(h100).find("compute capability 10.0 or later"), std::string::npos);
  TrainConfig mi = test::make_config("llama3-8b", "MI300X", 8, ShardingStrategy::full_shard, AcMode::selective_op, 1, 8192);
  mi.runtime = "torchtitan";
  mi.precision.fp8 = Fp8Recipe::nvfp4;
  EXPECT_NE(refusal(mi).find("states no CUDA compute capability"), std::string::npos) << refusal(mi);
  // A generation that does not run it.
  TrainConfig c = gb200_8b("torchtitan-2026-06");
  c.precision.fp8 = Fp8Recipe::nvfp4;
  EXPECT_NE(refusal(c).find("cannot run precision.fp8 = \"nvfp4\""), std::string::npos) << refusal(c);
  c.runtime = "torchtitan-2024-10";  // tensor-wise float8 only
  c.precision.fp8 = Fp8Recipe::mxfp8;
  EXPECT_NE(refusal(c).find("cannot run precision.fp8 = \"mxfp8\""), std::string::npos) << refusal(c);
  c.runtime = "torchtitan-2025-07";  // MXFP8 since fb17e251c (2025-05-14)
  EXPECT_EQ(refusal(c), "");
  // Tensor-wise float8 is gone from torchtitan of 2026 (#3127), rowwise stays.
  for (const char* rt : {"torchtitan-2026-06", "torchtitan"}) {
    c.runtime = rt;
    c.precision.fp8 = Fp8Recipe::tensorwise;
    EXPECT_NE(refusal(c).find("cannot run precision.fp8 = \"tensorwise\""), std::string::npos) << rt;
    c.precision.fp8 = Fp8Recipe::rowwise;
    EXPECT_EQ(refusal(c), "") << rt;
    // ... and with it FSDP's float8 all-gather (#3127): no generation of 2026 gathers in fp8.
    EXPECT_FALSE(runtime_preset(rt).terms.fp8_all_gather);
  }
  c.runtime = "torchtitan-2025-10";
  c.precision.fp8 = Fp8Recipe::tensorwise;
  EXPECT_EQ(refusal(c), "");
  c.precision.fp8 = Fp8Recipe::mxfp8;
  EXPECT_EQ(refusal(c), "");
}

}  // namespace
}  // namespace shardcast::planner
