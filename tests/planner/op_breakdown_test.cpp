// The planner's per-category breakdown of a step (planner/model/op_breakdown.h) against two other
// ways of computing the same time: the op lists costed in closed form here (each op's
// forward + backward time, summed by category, times units, micro-steps and time share) and
// the simulator's compute-stream busy time (Prediction::compute_s).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "planner/model/ac_policy.h"
#include "planner/model/efficiency.h"
#include "planner/model/memory_model.h"
#include "planner/model/op_breakdown.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::make_config;

// Float summation of a few hundred positive terms in different orders (by category here, by
// unit and op in plan(), by task in the simulator, linear extrapolation of micro-steps in
// simulate_fast): agreement to ~1e-13 relative is expected; 1e-9 leaves room and still
// catches any missing or double-counted op (each is > 1e-4 of a step).
constexpr double kRel = 1e-9;

// The context plan() builds for a preset without a kernel table or published attention rate.
ComputeContext context_of(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt) {
  ComputeContext cc;
  cc.peak_flops = hw.peak_flops(cfg.precision.param_dtype);
  cc.hbm_bandwidth = hw.gpu.hbm_bandwidth;
  cc.act_bytes = dtype_bytes(cfg.precision.param_dtype);
  cc.compile = cfg.precision.compile;
  const EfficiencyParams eff = read_efficiency(hw);
  cc.eff = of_datasheet(eff);
  // cuDNN attention where the runtime's SDPA runs it: the fitted fraction of cuDNN's ceiling.
  if (opt.attention_cudnn) cc.eff.attention_eff = eff.attention_eff * eff.cudnn_attention_ceiling;
  cc.grid = GemmGrid{hw.gpu.sm_count, hw.gpu.gemm_tile_m, hw.gpu.gemm_tile_n, hw.gpu.gemm_tile_k};
  return cc;
}

struct Case {
  std::string model, hw;
  int gpus;
  ShardingStrategy s;
  AcMode ac;
  int b, seq, ga;
  std::string dtype;
};

std::vector<Case> cases() {
  return {{"small-6l", "cpu", 1, ShardingStrategy::full_shard, AcMode::none, 4, 256, 1, "fp32"},
          {"small-6l", "cpu", 2, ShardingStrategy::full_shard, AcMode::none, 4, 256, 1, "fp32"},
          {"small-6l", "cpu", 2, ShardingStrategy::no_shard, AcMode::full, 2, 128, 5, "fp32"},
          {"llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 1, 4096, 1, "bf16"},
          {"llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 2, 2048, 4, "bf16"},
          {"llama3-8b", "H100-80GB-SXM", 16, ShardingStrategy::hybrid_shard, AcMode::selective_op, 1, 8192, 2, "bf16"},
          {"mpt-1b", "A100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 4, 2048, 1, "bf16"}};
}

TrainConfig config_of(const Case& c) {
  TrainConfig cfg = make_config(c.model, c.hw, c.gpus, c.s, c.ac, c.b, c.seq, c.ga);
  cfg.precision.param_dtype = c.dtype;
  cfg.precision.reduce_dtype = "fp32";
  if (c.s == ShardingStrategy::hybrid_shard) cfg.parallelism.hsdp_shard_size = 8;
  if (c.hw != "cpu") cfg.runtime = "torchtitan-2025-10";  // GPU presets: a runtime that runs them (op-SAC included), SDPA and the fitted host time
  return cfg;
}

std::string name_of(const Case& c) {
  return c.model + " " + c.hw + " x" + std::to_string(c.gpus) + " " + to_string(c.s) + " ac " + to_string(c.ac) +
         " ga " + std::to_string(c.ga);
}

// Per category, closed form: forward + backward of each op (ops.h) plus the recompute of a
// checkpointed or op-SAC block (ac_policy.h), summed over the units, times micro-steps and
// the time share of ranks over devices; and the unit host overhead (2 per unit per micro-step).
std::array<double, kOpCategories> closed_form(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt,
                                              double* overhead_s) {
  const ComputeContext cc = context_of(cfg, hw, opt);
  const ModelSpec& m = cfg.model;
  const int b = cfg.training.micro_batch, s = cfg.training.seq_len, A = cc.act_bytes;
  const auto block = block_forward_ops(m, b, s, A, opt.rmsnorm, opt.rope_fused, opt.swiglu_fused);
  const auto embed = embedding_forward_ops(m, b, s, A);
  const auto head = head_forward_ops(m, b, s, A, opt.cross_entropy, opt.rmsnorm);
  std::array<double, kOpCategories> out{};
  auto add = [&](const std::vector<Op>& ops, double times) {
    for (const Op& op : ops) out[size_t(op_category_of(op))] += times * (op_forward_time(op, cc) + op_backward_time(op, cc));
  };
  add(embed, 1);
  add(head, 1);
  add(block, m.n_layers);
  const AcMode ac = cfg.activation_checkpointing.mode;
  if (ac == AcMode::full) {
    const int end = checkpointed_recompute_end(block, opt.recompute_early_stop);
    for (int i = 0; i < end; ++i) out[size_t(op_category_of(block[size_t(i)]))] += m.n_layers * op_forward_time(block[size_t(i)], cc);
  } else if (ac == AcMode::selective_op) {
    const auto share = selective_op_recompute_shares(m, block, opt.sac_attention_saved());
    for (size_t i = 0; i < block.size(); ++i)
      out[size_t(op_category_of(block[i]))] += m.n_layers * share[i] * op_forward_time(block[i], cc);
  }
  const double time_share = std::max(1.0, double(cfg.cluster.gpus_per_node) / std::max(1, hw.node.gpus_per_node));
  const double k = cfg.training.grad_accum * time_share;
  for (double& t : out) t *= k;
  *overhead_s = k * 2.0 * (m.n_layers + 2) * cc.eff.unit_overhead_s;
  return out;
}

// Without the overlap slowdown the simulator runs exactly the units' cost: each compute
// category equals its closed form, and with the optimizer they add up to compute_s.
TEST(OpBreakdown, ComputeCategoriesAreTheClosedFormAndAddUpToComputeTime) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(name_of(c));
    const TrainConfig cfg = config_of(c);
    HardwareSpec hw = load_hardware(c.hw);
    hw.efficiency["overlap_compute_slowdown"] = 0.0;
    PlanOptions opt = resolve_plan_options(cfg, hw);
    opt.op_breakdown = true;
    const Prediction p = plan(cfg, hw, opt);
    ASSERT_EQ(p.op_seconds.size(), size_t(kOpCategories));
    double overhead = 0;
    const auto cf = closed_form(cfg, hw, opt, &overhead);
    double compute = 0;
    for (OpCategory k : {OpCategory::matmul, OpCategory::attention, OpCategory::norm, OpCategory::elementwise,
                         OpCategory::embedding, OpCategory::loss}) {
      EXPECT_NEAR(p.op_seconds[size_t(k)], cf[size_t(k)], kRel * p.compute_s) << to_string(k);
      compute += cf[size_t(k)];
    }
    EXPECT_GT(cf[size_t(OpCategory::matmul)], 0.0);
    EXPECT_EQ(p.op_seconds[size_t(OpCategory::copy)], 0.0);  // not modelled apart
    EXPECT_NEAR(compute + overhead + p.op_seconds[size_t(OpCategory::optimizer)], p.compute_s, kRel * p.compute_s);
    EXPECT_NEAR(p.op_seconds[size_t(OpCategory::communication)], p.exposed_comm_s, kRel * p.step_time_s);
  }
}

// With the preset's overlap slowdown: the categories still add up to the step, and every
// compute category is at least its closed form (the slowdown only stretches).
TEST(OpBreakdown, CategoriesAddUpToTheStepWithOverlapSlowdown) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(name_of(c));
    const TrainConfig cfg = config_of(c);
    const HardwareSpec hw = load_hardware(c.hw);
    PlanOptions opt = resolve_plan_options(cfg, hw);
    opt.op_breakdown = true;
    const Prediction p = plan(cfg, hw, opt);
    ASSERT_EQ(p.op_seconds.size(), size_t(kOpCategories));
    const double sum = std::accumulate(p.op_seconds.begin(), p.op_seconds.end(), 0.0);
    EXPECT_NEAR(sum, p.step_time_s, kRel * p.step_time_s);
    double overhead = 0;
    const auto cf = closed_form(cfg, hw, opt, &overhead);
    for (OpCategory k : {OpCategory::matmul, OpCategory::attention, OpCategory::norm})
      EXPECT_GE(p.op_seconds[size_t(k)], cf[size_t(k)] * (1 - kRel)) << to_string(k);
  }
}

// A TP mesh: the collectives a unit runs in series with its ops (Prediction::tp_exposed_s, time
// share applied as to the ops) are `communication`, as the trainer's profile counts them, not
// spread over the compute categories; the categories still add up to the step. Before, the
// small-6l tp 4 plan on the CPU preset put its TP collectives into matmul (263 ms planned against
// 57 measured by `shardcast-train profile`).
TEST(OpBreakdown, MeshCollectivesAreCommunication) {
  struct MeshCase {
    std::string model, hw;
    int gpus, tp;
  };
  for (const MeshCase& c : {MeshCase{"small-6l", "cpu", 4, 4}, MeshCase{"small-6l", "cpu", 4, 2},
                            MeshCase{"llama3-8b", "H100-80GB-SXM", 8, 2}}) {
    SCOPED_TRACE(c.model + " tp " + std::to_string(c.tp));
    TrainConfig cfg = make_config(c.model, c.hw, c.gpus, ShardingStrategy::full_shard, AcMode::none, 2, 256, 1);
    cfg.parallelism.tp = c.tp;
    cfg.cluster.nodes = 1;  // every rank on one node (the CPU preset's 2 cores time-shared by 4)
    cfg.cluster.gpus_per_node = c.gpus;
    cfg.precision.param_dtype = c.hw == "cpu" ? "fp32" : "bf16";
    cfg.precision.reduce_dtype = "fp32";
    if (c.hw != "cpu") cfg.runtime = "torchtitan-2025-10";
    HardwareSpec hw = load_hardware(c.hw);
    hw.efficiency["overlap_compute_slowdown"] = 0.0;
    PlanOptions opt = resolve_plan_options(cfg, hw);
    opt.op_breakdown = true;
    const Prediction p = plan(cfg, hw, opt);
    ASSERT_GT(p.tp_exposed_s, 0.0);
    const double time_share = std::max(1.0, double(cfg.cluster.gpus_per_node) / std::max(1, hw.node.gpus_per_node));
    EXPECT_NEAR(p.op_seconds[size_t(OpCategory::communication)], p.exposed_comm_s + time_share * p.tp_exposed_s,
                kRel * p.step_time_s);
    const double sum = std::accumulate(p.op_seconds.begin(), p.op_seconds.end(), 0.0);
    EXPECT_NEAR(sum, p.step_time_s, kRel * p.step_time_s);
  }
}

TEST(OpBreakdown, EveryPlannerOpHasACategory) {
  for (const char* model : {"llama3-8b", "mpt-1b", "small-6l"}) {
    const ModelSpec m = load_model(model);
    for (const auto& ops : {block_forward_ops(m, 1, 128, 2), embedding_forward_ops(m, 1, 128, 2),
                            head_forward_ops(m, 1, 128, 2, CrossEntropyImpl::fused)})
      for (const Op& op : ops) EXPECT_NO_THROW(op_category_of(op)) << model << " " << op.name;
  }
  const ModelSpec m = load_model("llama3-8b");
  const auto block = block_forward_ops(m, 1, 128, 2);
  std::vector<std::string> got;
  for (const Op& op : block) got.push_back(std::string(op.name) + ":" + std::string(to_string(op_category_of(op))));
  const std::vector<std::string> want{"attention_norm:norm", "wqkv:matmul", "rope:elementwise",
                                      "attention:attention", "wo:matmul", "residual_add:elementwise",
                                      "ffn_norm:norm", "w1_w3:matmul", "silu_mul:elementwise",
                                      "w2:matmul", "residual_add:elementwise"};
  EXPECT_EQ(got, want);
  Op unknown;
  unknown.name = "mystery";
  EXPECT_THROW(op_category_of(unknown), std::logic_error);
}

TEST(OpBreakdown, OnlyWhenAsked) {
  // The inner loops (search, validate, fit) do not pay for it; the step is the same either way.
  const TrainConfig cfg = config_of(cases()[1]);
  const HardwareSpec hw = load_hardware("cpu");
  PlanOptions opt = resolve_plan_options(cfg, hw);
  const Prediction off = plan(cfg, hw, opt);
  opt.op_breakdown = true;
  const Prediction on = plan(cfg, hw, opt);
  EXPECT_TRUE(off.op_seconds.empty());
  EXPECT_EQ(on.op_seconds.size(), size_t(kOpCategories));
  EXPECT_DOUBLE_EQ(off.step_time_s, on.step_time_s);
}

TEST(OpBreakdown, PredictionJsonRoundTripsOpsSeconds) {
  const TrainConfig cfg = config_of(cases()[1]);
  const HardwareSpec hw = load_hardware("cpu");
  PlanOptions opt = resolve_plan_options(cfg, hw);
  opt.op_breakdown = true;
  const Prediction p = plan(cfg, hw, opt);
  nlohmann::json j = p;
  ASSERT_TRUE(j["time"].contains("ops_s"));
  EXPECT_EQ(j["time"]["ops_s"].size(), size_t(kOpCategories));
  EXPECT_DOUBLE_EQ(j["time"]["ops_s"]["matmul"].get<double>(), p.op_seconds[size_t(OpCategory::matmul)]);
  Prediction q = j.get<Prediction>();
  EXPECT_EQ(q.op_seconds, p.op_seconds);
}

}  // namespace
}  // namespace shardcast::planner
