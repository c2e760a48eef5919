// The device mesh in the planner (planner/model/mesh_terms.h, mesh_stage.cpp): each term against
// its closed form, the rank's work summed over tp × cp ranks against the one-rank work, the 1-D
// mesh spelled out against the 1-D strategy, and the runtimes' refusals by name.
#include "planner/model/mesh_terms.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "planner/evidence/predict.h"
#include "planner/model/plan.h"
#include "planner/model/plan_stages.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "tests/planner/test_util.h"

namespace shardcast::planner {
namespace {

// Nodes of 8 GPUs at 450 GB/s NVLink per direction, 400 GB/s per node between nodes, links at
// their full rate: the comm model's closed forms with round numbers.
CommContext ideal_comm() {
  CommContext c;
  c.intra_node_bandwidth = 450e9;
  c.inter_node_bandwidth = 400e9;
  c.gpus_per_node = 8;
  c.eff.intra_node_bw_eff = 1;
  c.eff.inter_node_bw_eff = 1;
  return c;
}

double total_flops(const std::vector<Op>& ops) {
  double f = 0;
  for (const Op& op : ops) f += op.flops;
  return f;
}
double total_saved(const std::vector<Op>& ops) {
  double f = 0;
  for (const Op& op : ops) f += op.saved_bytes;
  return f;
}

// N ranks against one: tp × cp ranks of a block together do the whole block's FLOPs and keep its
// activations (sequence parallel divides all of them; context parallel's load-balanced causal
// split gives each rank 1/cp of the attention). Exact up to rounding: 1e-12 relative.
TEST(MeshTerms, RanksTogetherDoTheWholeBlock) {
  const ModelSpec m = load_model("llama3-8b");
  const int b = 2, s = 8192;
  const std::vector<Op> whole = block_forward_ops(m, b, s, 2);
  for (int tp : {1, 2, 4, 8})
    for (int cp : {1, 2, 4}) {
      std::vector<Op> rank = block_forward_ops(m, b, s / cp, 2);
      split_ops(rank, tp, cp);
      EXPECT_NEAR(total_flops(rank) * tp * cp / total_flops(whole), 1.0, 1e-12) << tp << " " << cp;
      EXPECT_NEAR(total_saved(rank) * tp * cp / total_saved(whole), 1.0, 1e-12) << tp << " " << cp;
    }
}

TEST(MeshTerms, GemmsSplitByColumnsOrRows) {
  const ModelSpec m = load_model("llama3-8b");
  std::vector<Op> ops = block_forward_ops(m, 1, 4096, 2);
  split_ops(ops, 4, 1);
  for (const Op& op : ops) {
    const std::string n = op.name;
    if (n == "wqkv") {
      EXPECT_DOUBLE_EQ(op.n, (m.d_model + 2.0 * m.kv_dim()) / 4);
    }
    if (n == "w1_w3") {
      EXPECT_DOUBLE_EQ(op.n, 2.0 * m.ffn_dim / 4);
    }
    if (n == "wo") {
      EXPECT_DOUBLE_EQ(op.k, m.d_model / 4.0);
    }
    if (n == "w2") {
      EXPECT_DOUBLE_EQ(op.k, m.ffn_dim / 4.0);
    }
  }
}

// Loss parallel splits the loss over the vocabulary; without it (KempnerForge) every tp rank runs
// the whole loss. The head's GEMM is column-parallel either way.
TEST(MeshTerms, LossOpIsWholeWithoutLossParallel) {
  const ModelSpec m = load_model("llama3-8b");
  const std::vector<Op> whole = head_forward_ops(m, 1, 4096, 2, CrossEntropyImpl::native, NormImpl::eager);
  for (bool lp : {true, false}) {
    std::vector<Op> ops = whole;
    split_ops(ops, 4, 1, lp);
    for (size_t i = 0; i < ops.size(); ++i) {
      const std::string n = ops[i].name;
      if (n == "output") {
        EXPECT_DOUBLE_EQ(ops[i].n, m.vocab / 4.0) << lp;
      }
      if (n == "cross_entropy") {
        EXPECT_DOUBLE_EQ(ops[i].bytes, whole[i].bytes / (lp ? 4.0 : 1.0)) << lp;
        EXPECT_DOUBLE_EQ(ops[i].saved_bytes, whole[i].saved_bytes / (lp ? 4.0 : 1.0)) << lp;
      }
    }
  }
  EXPECT_FALSE(load_runtime("kempnerforge").terms.loss_parallel);
  EXPECT_TRUE(load_runtime("torchtitan").terms.loss_parallel);
  EXPECT_TRUE(load_runtime("shardcast-train").terms.loss_parallel);
}

// One block of tp 4 x dp_shard 2 (8 GPUs of a node) on 16384 tokens of d 4096, bf16, on the ideal
// links, and the collectives of its A·T·d activation: the scenario the block_mesh_comm tests share.
struct Tp4Block {
  Mesh mesh;
  CommContext c = ideal_comm();
  MeshGroups g;
  BlockMeshInputs in;
  Tp4Block() {
    mesh.tp = 4;
    mesh.dp_shard = 2;
    g = mesh_groups(mesh, 8);
    in.tokens = 16384;
    in.d_model = 4096;
  }
  double time(Collective k) const { return collective_time(k, 2.0 * in.tokens * in.d_model, g.tp, c); }
  BlockMeshComm comm() const { return block_mesh_comm(mesh, g, c, in); }
};

// Basic TP (no sequence parallel): the norms and residual adds run whole on every rank, the
// Linears and attention are split as with SP; per block two all-reduces of A·T·d forward and two
// backward instead of the all-gathers and reduce-scatters (Korthikanti et al. 2022 §4.2.2).
TEST(MeshTerms, BasicTpKeepsNormsWholeAndAllReduces) {
  const ModelSpec m = load_model("llama3-8b");
  const std::vector<Op> whole = block_forward_ops(m, 1, 4096, 2);
  std::vector<Op> sp = whole, basic = whole;
  split_ops(sp, 4, 1);
  split_ops(basic, 4, 1, true, false);
  for (size_t i = 0; i < whole.size(); ++i) {
    const std::string n = whole[i].name;
    const bool seq = n == "attention_norm" || n == "ffn_norm" || n == "residual_add";
    EXPECT_DOUBLE_EQ(basic[i].flops, seq ? whole[i].flops : sp[i].flops) << n;
    EXPECT_DOUBLE_EQ(basic[i].saved_bytes, seq ? whole[i].saved_bytes : sp[i].saved_bytes) << n;
  }
  Tp4Block b;
  b.in.sequence_parallel = false;
  const BlockMeshComm r = b.comm();
  const double ar = b.time(Collective::all_reduce);
  EXPECT_GT(ar, 0);
  EXPECT_DOUBLE_EQ(r.tp_fwd_s, 2 * ar);
  EXPECT_DOUBLE_EQ(r.tp_bwd_s, 2 * ar);
  EXPECT_DOUBLE_EQ(r.tp_busy_s, 4 * ar);
  EXPECT_EQ(load_runtime("kempnerforge").terms.tp_sequence_parallel, "without_pp");
  EXPECT_EQ(load_runtime("torchtitan").terms.tp_sequence_parallel, "always");
}

// Qwen3's q_norm and k_norm under torchtitan's NoParallel (runtime term tp_qk_norm = "gathered",
// torchtitan-2025-07): one all-gather of q and k (A·T·(q + kv)) more in forward and one in
// backward than with the norms on the rank's heads; the closed form from collective_time, to the
// rounding of the sums. Only that generation gathers (8c1d1c5fc, pytorch/torchtitan#1867).
TEST(MeshTerms, GatheredQkNormsAllGatherQAndKEachWay) {
  Tp4Block b;
  const BlockMeshComm sharded = b.comm();
  const double qk_bytes = 2.0 * b.in.tokens * (8192 + 1024);
  b.in.qk_gather_bytes = qk_bytes;
  const BlockMeshComm gathered = b.comm();
  const double ag = collective_time(Collective::all_gather, qk_bytes, b.g.tp, b.c);
  EXPECT_GT(ag, 0);
  EXPECT_NEAR(gathered.tp_fwd_s - sharded.tp_fwd_s, ag, 1e-12 * gathered.tp_fwd_s);
  EXPECT_NEAR(gathered.tp_bwd_s - sharded.tp_bwd_s, ag, 1e-12 * gathered.tp_bwd_s);
  EXPECT_NEAR(gathered.tp_busy_s - sharded.tp_busy_s, 2 * ag, 1e-12 * gathered.tp_busy_s);
  for (const std::string& rt : list_runtime_presets()) {
    const RuntimeTerms t = load_runtime(rt).terms;
    if (std::find(t.mesh.begin(), t.mesh.end(), "tp") != t.mesh.end()) {
      EXPECT_EQ(t.tp_qk_norm, rt == "torchtitan-2025-07" ? "gathered" : "sharded") << rt;
    }
  }
}

// Each column-parallel projection redistributing its own input (tp_column_inputs =
// "per_projection", KempnerForge: q, k, v, gate and up) adds, against one redistribution per
// module (torchtitan's PrepareModuleInput), three all-gathers in forward and three reduce-scatters
// in backward under sequence parallel, and three backward all-reduces under basic TP: the closed
// form from collective_time, to the rounding of the sums.
TEST(MeshTerms, PerProjectionInputsRedistributeOncePerProjection) {
  Tp4Block b;
  const BlockMeshComm once = b.comm();
  b.in.column_inputs[0] = 3;
  b.in.column_inputs[1] = 2;
  const BlockMeshComm each = b.comm();
  const double ag = b.time(Collective::all_gather);
  const double rs = b.time(Collective::reduce_scatter);
  const double ar = b.time(Collective::all_reduce);
  EXPECT_GT(ag, 0);
  EXPECT_NEAR(each.tp_fwd_s - once.tp_fwd_s, 3 * ag, 1e-12 * each.tp_fwd_s);
  EXPECT_NEAR(each.tp_bwd_s - once.tp_bwd_s, 3 * rs, 1e-12 * each.tp_bwd_s);
  EXPECT_NEAR(each.tp_busy_s - once.tp_busy_s, 3 * (ag + rs), 1e-12 * each.tp_busy_s);
  b.in.sequence_parallel = false;
  const BlockMeshComm basic = b.comm();
  EXPECT_DOUBLE_EQ(basic.tp_fwd_s, 2 * ar);
  EXPECT_NEAR(basic.tp_bwd_s, 5 * ar, 1e-12 * basic.tp_bwd_s);
  EXPECT_EQ(load_runtime("kempnerforge").terms.tp_column_inputs, "per_projection");
  EXPECT_EQ(load_runtime("torchtitan").terms.tp_column_inputs, "gathered_once");
  EXPECT_EQ(load_runtime("shardcast-train").terms.tp_column_inputs, "gathered_once");
}

TEST(MeshTerms, GroupsFollowTorchtitansRankOrder) {
  Mesh m;
  m.tp = 8;
  m.dp_shard = 16;
  m.pp = 4;
  const MeshGroups g = mesh_groups(m, 8);
  EXPECT_EQ(g.tp.nodes, 1);         // tp innermost: one node
  EXPECT_EQ(g.dp_shard.nodes, 16);  // one rank per node, 16 nodes
  EXPECT_TRUE(g.pp_crosses_nodes);
  EXPECT_FALSE(g.tp_crosses_nodes);
  m.tp = 2;
  m.dp_shard = 64;
  m.pp = 1;
  const MeshGroups h = mesh_groups(m, 8);
  EXPECT_EQ(h.dp_shard.ranks, 64);
  EXPECT_EQ(h.dp_shard.nodes, 16);  // 4 of its ranks per node
  m.tp = 16;
  EXPECT_TRUE(mesh_groups(m, 8).tp_crosses_nodes);
  // tp 4 on 6-GPU nodes: ranks 4-7 sit on nodes 0 and 1, so some TP groups span two nodes (before,
  // timed as inside one); on 8- and 4-GPU nodes every group is inside one.
  m.tp = 4;
  m.dp_shard = 24;
  EXPECT_TRUE(mesh_groups(m, 6).tp_crosses_nodes);
  EXPECT_EQ(mesh_groups(m, 6).tp.nodes, 2);
  EXPECT_FALSE(mesh_groups(m, 8).tp_crosses_nodes);
  EXPECT_FALSE(mesh_groups(m, 4).tp_crosses_nodes);
  // Pipeline sends go dp·tp·cp ranks on: with 4 per stage on 6-GPU nodes, stage 1 (ranks 4-7)
  // sends across a node boundary; on 8-GPU nodes two stages share a node.
  Mesh q;
  q.dp_shard = 2;
  q.tp = 2;
  q.pp = 3;
  EXPECT_TRUE(mesh_groups(q, 6).pp_crosses_nodes);
  EXPECT_FALSE(mesh_groups(q, 8).pp_crosses_nodes);
}

// Closed forms of the schedules (mesh_terms.cpp cites them): 1F1B and GPipe idle (p-1) stage
// times per flush, interleaving divides that by v, ZB-V with F = B = W leaves none.
TEST(MeshTerms, PipelineBubbleAndInFlight) {
  const double f = 1.0, bwd = 2.0, w = 1.0;
  EXPECT_DOUBLE_EQ(pp_bubble_s(PpSchedule::one_f_one_b, 8, 1, 1, f, bwd, w), 7 * 3.0);
  EXPECT_DOUBLE_EQ(pp_bubble_s(PpSchedule::gpipe, 8, 1, 2, f, bwd, w), 2 * 7 * 3.0);
  EXPECT_DOUBLE_EQ(pp_bubble_s(PpSchedule::interleaved_1f1b, 8, 2, 1, f, bwd, w), 7 * 3.0 / 2);
  EXPECT_DOUBLE_EQ(pp_bubble_s(PpSchedule::zbv_zero_bubble, 8, 2, 1, f, bwd, w), 0.0);
  EXPECT_DOUBLE_EQ(pp_bubble_s(PpSchedule::interleaved_zero_bubble, 8, 2, 1, f, bwd, w), 7 * 1.0 / 2);
  EXPECT_DOUBLE_EQ(pp_bubble_s(PpSchedule::one_f_one_b, 1, 1, 1, f, bwd, w), 0.0);
  // The first rank (rank 0) and the last (rank pp − 1): 1F1B's last rank runs each backward right
  // after its forward, GPipe's every forward first, the interleaved last rank warms up (v − 1)·pp
  // chunks, ZB-V's V balances the two at the first rank's 1F1B peak.
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::one_f_one_b, 8, 1, 32, 0), 8);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::one_f_one_b, 8, 1, 4, 0), 4);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::one_f_one_b, 8, 1, 32, 7), 1);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::gpipe, 8, 1, 32, 0), 32);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::gpipe, 8, 1, 32, 7), 32);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::interleaved_1f1b, 4, 2, 16, 0), (4 + 6 + 1) / 2.0);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::interleaved_1f1b, 4, 2, 16, 3), (4 + 0 + 1) / 2.0);
  // torch's _get_warmup_ops: InterleavedZeroBubble warms up one forward per hop (multiply_factor
  // 1), not two (pp 8, v 2, n 16, rank 0: 8 + 7 + 1 = 16 chunks, 8 micro-batches; 11.5 before);
  // a round is n // max(1, n // pp) micro-batches (pp 4, n 6: one round of 6; the last rank 3.5,
  // not 2.5).
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::interleaved_zero_bubble, 8, 2, 16, 0), (8 + 7 + 1) / 2.0);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::interleaved_1f1b, 8, 2, 16, 0), (8 + 14 + 1) / 2.0);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::interleaved_1f1b, 4, 2, 6, 3), (6 + 0 + 1) / 2.0);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::zbv_zero_bubble, 4, 2, 16, 0), 4);
  EXPECT_DOUBLE_EQ(pp_inflight_microbatches(PpSchedule::zbv_zero_bubble, 4, 2, 16, 3), 4);
  EXPECT_EQ(pp_rank_blocks(126, 8), 14);  // (126 + 2) / 8 = 16 layer-equivalents, 2 of them the ends
  EXPECT_EQ(pp_rank_blocks(32, 1), 32);
}

// Ring attention as torch's context_parallel runs it (_attention.py): forward all-gathers the
// other ranks' K and V once; backward gathers them again and passes the fp32 dK/dV round the ring,
// one permute (one hop of a ring all-gather) per step, cp in all. On an ideal link without latency
// one rank's K and V (kv bytes) take kv/bw a hop; nothing hides them without attention work, and
// with long attention only the gather (allgather rotate), the first hop (alltoall) and the last
// gradient hop show. Exact up to rounding (1e-12 relative).
TEST(MeshTerms, RingAttentionGathersKvAndRingsItsFp32Gradients) {
  Mesh m;
  m.cp = 4;
  m.dp_shard = 2;
  CommContext c = ideal_comm();
  c.eff.collective_base_latency_s = 0;
  c.intra_node_latency = 0;
  c.inter_node_latency = 0;
  BlockMeshInputs in;
  in.tokens = 8192;
  in.kv_width = 1024;
  const double kv = 2.0 * 2.0 * 1024 * 8192 / c.intra_node_bandwidth;  // one hop of K and V  // s
  const double dkv = 2.0 * kv;                                            // fp32 gradients  // s
  const MeshGroups g = mesh_groups(m, 8);
  const BlockMeshComm bare = block_mesh_comm(m, g, c, in);
  EXPECT_NEAR(bare.cp_fwd_s, 3 * kv, 1e-12 * kv);
  EXPECT_NEAR(bare.cp_bwd_s, 3 * kv + 4 * dkv, 1e-12 * kv);
  EXPECT_NEAR(bare.cp_busy_s, 2 * 3 * kv + 4 * dkv, 1e-12 * kv);
  in.attention_fwd_s = 1.0;  // attention far longer than any hop
  const BlockMeshComm hidden = block_mesh_comm(m, g, c, in);
  EXPECT_NEAR(hidden.cp_fwd_s, 3 * kv, 1e-12 * kv);
  EXPECT_NEAR(hidden.cp_bwd_s, 3 * kv + dkv, 1e-12 * kv);
  in.cp_rotate = CpRotate::alltoall;
  const BlockMeshComm rotated = block_mesh_comm(m, g, c, in);
  EXPECT_NEAR(rotated.cp_fwd_s, kv, 1e-12 * kv);
  EXPECT_NEAR(rotated.cp_bwd_s, kv + dkv, 1e-12 * kv);
  EXPECT_DOUBLE_EQ(rotated.cp_busy_s, hidden.cp_busy_s);  // the same bytes, another order
}

// What one rank's ring attention holds beside the block's own attention (mesh_terms.h): the
// all-gather rotate keeps every rank's K and V chunk, the all-to-all one only the next, so they
// differ by cp − 1 chunks of 2·w·A·T bytes each way; a runtime that repeats K and V to the query
// heads exchanges them at query width.
TEST(MeshTerms, RingAttentionBuffers) {
  const double T = 8192, q = 2048, w = 256;
  const CpAttentionMemory gathered = cp_attention_memory(8, CpRotate::allgather, T, q, w, 2);
  const CpAttentionMemory rotated = cp_attention_memory(8, CpRotate::alltoall, T, q, w, 2);
  const double chunk = 2.0 * w * 2 * T;  // bytes
  EXPECT_DOUBLE_EQ(gathered.fwd - rotated.fwd, 7 * chunk);
  EXPECT_DOUBLE_EQ(gathered.bwd - rotated.bwd, 7 * chunk);
  EXPECT_DOUBLE_EQ(rotated.fwd, chunk + chunk + 8.0 * q * T);
  EXPECT_DOUBLE_EQ(rotated.bwd, chunk + chunk + 4.0 * (q + 2 * w) * T + 16.0 * w * T);
  EXPECT_EQ(cp_attention_memory(1, CpRotate::allgather, T, q, w, 2).bwd, 0.0);
  const ModelSpec m = load_model("llama3-8b");
  EXPECT_EQ(cp_attention_width(m, 2, false), 8 * 128 / 2.0);   // 8 kv heads of 128 over tp 2
  EXPECT_EQ(cp_attention_width(m, 2, true), 32 * 128 / 2.0);   // repeated to the 32 query heads
}

TEST(MeshTerms, AsyncTpHidesCollectivesBehindTheirGemms) {
  Mesh m;
  m.tp = 8;
  m.dp_shard = 8;
  const CommContext c = ideal_comm();
  BlockMeshInputs in;
  in.tokens = 8192;
  in.d_model = 8192;
  in.kv_width = 128;
  for (double& g : in.gemm_fwd_s) g = 1.0;  // GEMMs far longer than the collectives
  const BlockMeshComm sync = block_mesh_comm(m, mesh_groups(m, 8), c, in);
  in.tp_async = true;
  const BlockMeshComm async = block_mesh_comm(m, mesh_groups(m, 8), c, in);
  EXPECT_GT(sync.tp_fwd_s, 0);
  EXPECT_NEAR(async.tp_fwd_s, sync.tp_fwd_s / 8, 1e-15);  // only each first chunk shows
  EXPECT_DOUBLE_EQ(async.tp_busy_s, sync.tp_busy_s);
  // The hidden 7/8 slow the GEMMs beside them as the simulator slows compute beside FSDP's
  // collectives: 1 + overlap_compute_slowdown.
  in.overlap_compute_slowdown = 0.15;
  const BlockMeshComm slowed = block_mesh_comm(m, mesh_groups(m, 8), c, in);
  EXPECT_NEAR(slowed.tp_fwd_s, sync.tp_fwd_s / 8 + 0.15 * sync.tp_fwd_s * 7 / 8, 1e-15);
  EXPECT_NEAR(slowed.tp_bwd_s, slowed.tp_fwd_s, 1e-15);  // backward's two GEMMs still cover each
  // A GEMM shorter than the collective hides only its own length, and only that is slowed.
  for (double& g : in.gemm_fwd_s) g = 0;
  const BlockMeshComm bare = block_mesh_comm(m, mesh_groups(m, 8), c, in);
  EXPECT_NEAR(bare.tp_fwd_s, sync.tp_fwd_s, 1e-15);
}

TrainConfig torchtitan_config(int gpus) {
  TrainConfig c = test::make_config("llama3-70b", "H100-80GB-SXM", gpus, ShardingStrategy::full_shard, AcMode::full, 2, 8192);
  c.runtime = "torchtitan";
  return c;
}

// The weight gradient a zero-bubble schedule defers is the Linears' dW GEMMs (their forward GEMMs'
// time), not half of all backward: attention's backward (2.5x its forward, no weights) stays in
// B. Llama 3 8B at 8192 on pp 4 under ZB-V, no checkpointing: F + B - 2W > 0, so a bubble is left
// (with W = B / 2, F + B/2 - B < 0 here, and the bubble was 0).
TEST(MeshPlan, ZeroBubbleDefersOnlyTheWeightGemms) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 64, ShardingStrategy::full_shard, AcMode::none, 8, 8192);
  c.runtime = "torchtitan";
  c.parallelism.pp = 4;
  c.parallelism.pp_schedule = PpSchedule::zbv_zero_bubble;
  validate_or_throw(c);
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  const Prediction p = plan(c, hw, resolve_plan_options(c, hw));
  EXPECT_GT(p.pp_bubble_s, 0.01 * p.step_time_s) << p.pp_bubble_s << " of " << p.step_time_s;
}

// torchtitan's 70B on 64 GPUs as FSDP 2 x TP 8 x PP 4, micro_batch sequences of 8192 per data-parallel rank.
TrainConfig pipelined_config(int micro_batch) {
  TrainConfig c = torchtitan_config(64);
  c.training.micro_batch = micro_batch;
  c.parallelism.tp = 8;
  c.parallelism.pp = 4;
  validate_or_throw(c);
  return c;
}

Prediction plan_of(const TrainConfig& c) {
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  return plan(c, hw, resolve_plan_options(c, hw));
}

// The plan of c with the options its runtime resolves to (`resolved`), and again with one runtime
// term flipped by `flip` (`flipped`): two ways of planning the same config, one term apart.
struct TermFlip {
  PlanOptions options;
  Prediction resolved, flipped;
};
TermFlip plans_flipping(TrainConfig c, const std::function<void(PlanOptions&)>& flip) {
  validate_or_throw(c);
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  TermFlip t;
  t.options = resolve_plan_options(c, hw);
  t.resolved = plan(c, hw, t.options);
  PlanOptions o = t.options;
  flip(o);
  t.flipped = plan(c, hw, o);
  return t;
}

// In a plan (tp_qk_norm = "gathered", torchtitan-2025-07): only a model with q/k norms gathers
// them — the Qwen3-32B plan is slower, the same dimensions without the norms plan the same either
// way (bit-identical: no term reads the flag without qk_norm).
TEST(MeshPlan, GatheredQkNormsSlowOnlyAModelWithThem) {
  TrainConfig q = test::make_config("qwen3-32b", "H100-96GB-HBM2e", 32, ShardingStrategy::full_shard, AcMode::full, 16, 4096);
  q.parallelism.tp = 8;
  q.runtime = "torchtitan-2025-07";
  const TermFlip t = plans_flipping(q, [](PlanOptions& o) { o.qk_norm_gathered = false; });
  ASSERT_TRUE(t.options.qk_norm_gathered);
  EXPECT_GT(t.resolved.tp_exposed_s, t.flipped.tp_exposed_s);
  EXPECT_GT(t.resolved.step_time_s, t.flipped.step_time_s);
  q.model.qk_norm = false;
  const TermFlip llama_like = plans_flipping(q, [](PlanOptions& o) { o.qk_norm_gathered = false; });
  EXPECT_EQ(llama_like.resolved.step_time_s, llama_like.flipped.step_time_s);
  EXPECT_EQ(llama_like.resolved.mem_peak_bytes, llama_like.flipped.mem_peak_bytes);
}

// The 1-D mesh spelled out (dp_replicate 1 x dp_shard = world) is the full_shard plan: the same
// numbers to the bit, since a mesh of tp = cp = pp = 1 takes the 1-D path.
TEST(MeshPlan, OneDimensionalMeshIsTheStrategy) {
  TrainConfig a = torchtitan_config(64);
  TrainConfig b = a;
  b.parallelism.dp_shard = 64;
  validate_or_throw(b);
  const Prediction pa = plan_of(a), pb = plan_of(b);
  EXPECT_EQ(pa.step_time_s, pb.step_time_s);
  EXPECT_EQ(pa.mem_reserved_bytes, pb.mem_reserved_bytes);
  EXPECT_TRUE(pb.mesh.empty());
}

TEST(MeshPlan, TensorParallelDividesTheRanksWorkAndMemory) {
  TrainConfig one = torchtitan_config(64);
  TrainConfig tp = one;
  tp.parallelism.tp = 8;
  validate_or_throw(tp);
  const Prediction p1 = plan_of(one), p8 = plan_of(tp);
  EXPECT_EQ(p8.mesh, "dp_shard 8 x tp 8");
  EXPECT_GT(p8.tp_exposed_s, 0);
  // Each rank holds 1/8 of the activations: far less than the pure-FSDP rank.
  EXPECT_LT(test::component(p8, "activations"), test::component(p1, "activations") / 6);
  // The same global tokens: micro_batch is per data-parallel rank, 8x fewer of them.
  EXPECT_LT(p8.tokens_per_s_per_gpu, p1.tokens_per_s_per_gpu);
  EXPECT_GT(p8.tokens_per_s_per_gpu, p1.tokens_per_s_per_gpu / 8 * 0.5);
}

// Without loss parallel the logits are all-gathered (TP time) and the loss's tensors are whole on
// every rank (memory); the blocks are the same. The gather's time is its closed form (mesh_terms.h).
TEST(MeshPlan, WithoutLossParallelTheRankHoldsTheWholeLoss) {
  TrainConfig c = torchtitan_config(64);
  c.parallelism.tp = 8;
  const TermFlip t = plans_flipping(c, [](PlanOptions& o) { o.loss_parallel = false; });
  ASSERT_TRUE(t.options.loss_parallel);
  const Prediction &a = t.resolved, &b = t.flipped;
  EXPECT_GT(b.tp_exposed_s, a.tp_exposed_s);
  EXPECT_GT(b.step_time_s, a.step_time_s);
  EXPECT_GT(b.mem_peak_bytes, a.mem_peak_bytes);
  // The step's extra exposed TP time is one all-gather of the micro-step's logits per micro-step.
  validate_or_throw(c);
  const Mesh m = resolve_mesh(c.parallelism, c.world_size(), c.cluster.gpus_per_node);
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  const PlanOptions& o = t.options;
  const CommContext cc = comm_setup(c, hw, o, runtime_efficiency(hw, o), step_shape(c, hw, o)).comm;  // the plan's
  const double tokens = double(c.training.micro_batch) * c.training.seq_len;
  const double g = logits_gather_s(m, mesh_groups(m, c.cluster.gpus_per_node), cc, tokens, c.model.vocab, 2);
  EXPECT_NEAR(b.tp_exposed_s - a.tp_exposed_s, g * c.training.grad_accum, 1e-9 * b.tp_exposed_s);
}

// A runtime that runs TP without sequence parallel on pipeline stages (tp_sequence_parallel =
// "without_pp", KempnerForge): with pp > 1 its rank holds whole norms, residual stream, embedding
// and head (more memory and parameters) and sends whole activations; with pp = 1 the term changes
// nothing, to the bit.
TEST(MeshPlan, BasicTpOnPipelineStagesOnly) {
  TrainConfig c = torchtitan_config(64);
  c.training.micro_batch = 8;
  c.parallelism.tp = 4;
  c.parallelism.pp = 2;
  const TermFlip t = plans_flipping(c, [](PlanOptions& o) { o.sequence_parallel_with_pp = false; });
  ASSERT_TRUE(t.options.sequence_parallel_with_pp);
  const Prediction &sp = t.resolved, &basic = t.flipped;
  EXPECT_GT(basic.mem_peak_bytes, sp.mem_peak_bytes);
  EXPECT_GT(test::component(basic, "sharded_parameters"), test::component(sp, "sharded_parameters"));
  EXPECT_GT(basic.pp_send_s, sp.pp_send_s);
  c.parallelism.pp = 1;
  const TermFlip one = plans_flipping(c, [](PlanOptions& o) { o.sequence_parallel_with_pp = false; });
  EXPECT_EQ(one.resolved.step_time_s, one.flipped.step_time_s);
  EXPECT_EQ(one.resolved.mem_peak_bytes, one.flipped.mem_peak_bytes);
}

// A replicated token embedding (tp_embedding = "replicated", KempnerForge) is whole on every tp
// rank: its shard of the table is V·d / dp_shard parameters, not V·d / (tp · dp_shard), and no
// collective enters sequence parallel in forward.
TEST(MeshPlan, ReplicatedEmbeddingIsWholeOnEveryTpRank) {
  TrainConfig c = torchtitan_config(64);
  c.parallelism.tp = 8;
  const TermFlip t = plans_flipping(c, [](PlanOptions& o) { o.embedding_vocab_parallel = false; });
  ASSERT_TRUE(t.options.embedding_vocab_parallel);
  const Prediction &a = t.resolved, &b = t.flipped;
  const double table = double(c.model.vocab) * c.model.d_model;
  const double master = 4, dp_shard = 8, tp = 8;  // fp32 shards of torchtitan's default
  EXPECT_NEAR(test::component(b, "sharded_parameters") - test::component(a, "sharded_parameters"),
              master * table * (1 - 1 / tp) / dp_shard, 1e-9 * test::component(b, "sharded_parameters"));
  EXPECT_LT(b.tp_exposed_s, a.tp_exposed_s);
  EXPECT_EQ(load_runtime("kempnerforge").terms.tp_embedding, "replicated");
  EXPECT_EQ(load_runtime("torchtitan").terms.tp_embedding, "vocab_parallel");
}

// Gathered per projection, a block without checkpointing keeps five gathered T·d inputs for the
// weight gradients (q, k, v, gate, up) where torchtitan keeps two: three more per block, each
// A·T·d·(1 − 1/tp) bytes beyond the sequence shard, and its step waits for three more all-gathers
// and reduce-scatters per block. Tolerance 0.5 %: the activations component is read at the
// simulated peak, where the rest of the block's bytes are the same in both plans.
TEST(MeshPlan, PerProjectionInputsKeepAGatheredCopyEach) {
  TrainConfig c = torchtitan_config(64);
  c.parallelism.tp = 8;
  c.activation_checkpointing.mode = AcMode::none;
  c.training.micro_batch = 1;
  c.training.seq_len = 2048;
  const TermFlip t = plans_flipping(c, [](PlanOptions& o) { o.column_inputs_per_projection = true; });
  ASSERT_FALSE(t.options.column_inputs_per_projection);
  const Prediction &a = t.resolved, &b = t.flipped;
  const double per_block = 3 * 2.0 * 2048 * c.model.d_model * (1 - 1.0 / 8);  // bytes, bf16
  const double expected = c.model.n_layers * per_block;
  EXPECT_NEAR(test::component(b, "activations") - test::component(a, "activations"), expected, 0.005 * expected);
  EXPECT_GT(b.tp_exposed_s, a.tp_exposed_s);
}

// torch's loss_parallel handlers (runtime term loss_parallel_impl = "dtensor", torchtitan until
// 2026-06) hold one fp32 tensor of the rank's logit shard more than the cross_entropy term counts,
// forward and backward: at a loss-bound peak (micro-batch 16 x 8192 tokens, full checkpointing)
// the allocated peak grows by 4 · T · V / tp bytes exactly (tolerance 1e-9 of it: a sum of
// the same bytes).
TEST(MeshPlan, DtensorLossParallelHoldsOneMoreShardTensor) {
  TrainConfig c = torchtitan_config(64);
  c.runtime = "torchtitan-2024-10";
  c.parallelism.tp = 8;
  c.training.micro_batch = 16;
  const TermFlip t = plans_flipping(c, [](PlanOptions& o) { o.loss_parallel_dtensor = false; });
  ASSERT_TRUE(t.options.loss_parallel_dtensor);
  const Prediction &a = t.resolved, &b = t.flipped;
  const double shard = 4.0 * 16 * 8192 * double(c.model.vocab) / 8;  // bytes
  EXPECT_NEAR(a.mem_peak_bytes - b.mem_peak_bytes, shard, 1e-9 * shard);
  EXPECT_EQ(load_runtime("torchtitan-2024-10").terms.loss_parallel_impl, "dtensor");
  EXPECT_EQ(load_runtime("shardcast-train").terms.loss_parallel_impl, "vocab_parallel_fn");
}

// A node of 4 H100s is an HGX 4-GPU board without NVSwitch (preset node.direct_link_max_gpus = 4):
// a TP pair reaches its peer over a third of the links, so its collectives take longer than on 4
// GPUs of an 8-GPU switched node (cluster.node_gpus = 8, what --gpus 4 on the preset's node
// sets), whose plan is the 8-GPU node's. A node_gpus that is no node of the job is refused.
TEST(MeshPlan, DirectLinkBoardsSlowGroupsSmallerThanTheBoard) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 4, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  c.runtime = "torchtitan";
  c.cluster.nodes = 1;
  c.cluster.gpus_per_node = 4;
  c.parallelism.tp = 2;
  validate_or_throw(c);
  ASSERT_EQ(load_hardware(c.cluster.hardware).node.direct_link_max_gpus, 4);
  const Prediction board = plan_of(c);
  c.cluster.node_gpus = 8;
  validate_or_throw(c);
  const Prediction switched = plan_of(c);
  EXPECT_GT(board.tp_exposed_s, 2 * switched.tp_exposed_s);  // a third of the bandwidth, plus latency
  c.parallelism.tp = 4;  // the whole board: all of its links, as on a switch
  c.cluster.node_gpus = 0;
  validate_or_throw(c);
  const Prediction whole = plan_of(c);
  c.cluster.node_gpus = 8;
  EXPECT_DOUBLE_EQ(whole.tp_exposed_s, plan_of(c).tp_exposed_s);
  c.cluster.nodes = 2;  // a partial node is one node
  EXPECT_THROW(validate_or_throw(c), ConfigErrors);
}

TEST(MeshPlan, PipelineAddsBubbleAndInFlightActivations) {
  TrainConfig c = pipelined_config(8);
  const Prediction a = plan_of(c);
  EXPECT_GT(a.pp_bubble_s, 0);
  EXPECT_GT(test::component(a, "pipeline_in_flight"), 0);
  c.parallelism.pp_schedule = PpSchedule::interleaved_1f1b;
  const Prediction b = plan_of(c);
  EXPECT_LT(b.pp_bubble_s, a.pp_bubble_s);
}

// The timeline shows each dimension's lane: TP's collectives inside the blocks, the pipeline's
// bubble after the step; their durations are the prediction's own totals.
// The parameters of the pipeline stage whose memory a plan reports (the larger of the first and
// the last): one TP shard of its end (the embedding or the head) and of round((L + 2)/pp) − 1
// blocks.
double larger_stage_params(const TrainConfig& c, const Prediction& p) {
  const std::vector<int64_t> units = c.model.fsdp_unit_params();
  const int tp = c.parallelism.tp, pp = c.parallelism.pp;
  const bool first = p.pp_stages.at(0).device_total_bytes >= p.pp_stages.at(1).device_total_bytes;
  return double(first ? units.front() : units.back()) / tp + (pp_rank_blocks(c.model.n_layers, pp) + 1) * double(units[1]) / tp;
}

// A pipeline stage reduces its gradients at the step's last backward only
// (torch.distributed.pipelining's backward_maybe_with_nosync on an FSDP2 stage), even for a
// runtime that reduces every micro-step without pp (torchtitan): at the peak every unit of the
// stage holds its unsharded gradient sum in the reduce dtype (fp32), 4 bytes a parameter of the
// stage. Tolerance 1e-9: the component is that sum of the units' bytes.
TEST(MeshPlan, PipelineStageKeepsUnsyncedGradientsUntilTheLastBackward) {
  TrainConfig c = pipelined_config(8);
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  const PlanOptions o = resolve_plan_options(c, hw);
  ASSERT_TRUE(o.sync_every_micro_step);  // torchtitan's loop without pp
  const Prediction p = plan(c, hw, o);
  const double stage_params = larger_stage_params(c, p);
  EXPECT_NEAR(test::component(p, "unsharded_gradients"), 4.0 * stage_params, 1e-9 * 4.0 * stage_params);
}

// Each stage keeps its units gathered from one backward to the next forward
// (set_reshard_after_backward(False)), so the plan holds the stage's whole unsharded parameters,
// bf16 here: 2 bytes a parameter of the stage (tolerance 1e-9, a sum of the units' bytes), and no
// unit's gathered copy comes and goes on the timeline.
TEST(MeshPlan, PipelineStageHoldsItsGatheredParameters) {
  TrainConfig c = pipelined_config(8);
  const Prediction p = plan_of(c);
  const double stage_params = larger_stage_params(c, p);
  EXPECT_NEAR(test::component(p, "pipeline_gathered_parameters"), 2.0 * stage_params, 1e-9 * 2.0 * stage_params);
  EXPECT_EQ(test::component(p, "gathered_parameters"), 0.0);
}

// The first stage holds the embedding and the in-flight micro-batches, the last the head and its
// loss with one micro-batch; the plan's memory is the larger's. Many micro-batches make the first
// the larger; one micro-batch (none other in flight) without TP's vocabulary-sharded loss the last,
// whose fp32 logits are the largest tensors.
TEST(MeshPlan, PipelineMemoryIsTheLargerStages) {
  TrainConfig c = pipelined_config(16);
  const Prediction many = plan_of(c);
  ASSERT_EQ(many.pp_stages.size(), 3u);  // pp 4: the busiest middle rank's too
  EXPECT_EQ(many.pp_stages[0].stage, "first");
  EXPECT_EQ(many.pp_stages[1].stage, "last");
  EXPECT_EQ(many.pp_stages[2].stage, "middle");
  EXPECT_GT(many.pp_stages[0].device_total_bytes, many.pp_stages[2].device_total_bytes);
  EXPECT_GT(many.pp_stages[0].device_total_bytes, many.pp_stages[1].device_total_bytes);
  EXPECT_EQ(many.mem_device_total_bytes, many.pp_stages[0].device_total_bytes);
  EXPECT_EQ(many.mem_peak_bytes, many.pp_stages[0].peak_bytes);
  EXPECT_GT(test::component(many, "pipeline_in_flight"), 0);
  c.training.micro_batch = 1;
  c.parallelism.pp_microbatch = 1;
  c.parallelism.tp = 1;
  c.parallelism.pp = 2;  // 82 layer-equivalents split evenly: 40 blocks beside each end (over pp 4 the last has one fewer)
  const Prediction one = plan_of(c);
  ASSERT_EQ(one.pp_stages.size(), 2u);
  EXPECT_GT(one.pp_stages[1].device_total_bytes, one.pp_stages[0].device_total_bytes);
  EXPECT_EQ(one.mem_device_total_bytes, one.pp_stages[1].device_total_bytes);
  // Without pp no stage is read.
  c.parallelism.pp = 1;
  EXPECT_TRUE(plan_of(c).pp_stages.empty());
}

// The split's busiest rank of neither end can hold the most: Llama 3.1 405B over pp 16 (8 blocks
// on rank 1, 7 and the embedding on rank 0, both with 8 micro-batches in flight) plans rank 1's
// memory, which the first and last stages alone left out (about 3 GiB more, an audit's estimate).
TEST(MeshPlan, BusiestMiddleRankCanHoldTheMost) {
  TrainConfig c = test::make_config("llama3.1-405b", "H100-80GB-SXM", 128, ShardingStrategy::full_shard, AcMode::full,
                                    8, 8192);
  c.runtime = "torchtitan";
  c.parallelism.tp = 8;
  c.parallelism.pp = 16;
  validate_or_throw(c);
  const Prediction p = plan_of(c);
  ASSERT_EQ(p.pp_stages.size(), 3u);
  EXPECT_EQ(p.pp_stages[2].stage, "middle");
  EXPECT_GT(p.pp_stages[2].device_total_bytes, p.pp_stages[0].device_total_bytes);
  EXPECT_GT(p.pp_stages[2].device_total_bytes, p.pp_stages[1].device_total_bytes);
  EXPECT_EQ(p.mem_device_total_bytes, p.pp_stages[2].device_total_bytes);
  bool named = false;
  for (const std::string& n : p.mesh_notes) named |= n.find("busiest middle rank's (rank 1: 8 blocks)") != std::string::npos;
  EXPECT_TRUE(named);
}

// A pipeline plan with the fp32 up-cast loss and with the native one (the loss's tensors differ,
// nothing else), each with its two stages.
struct LossPair {
  Prediction upcast, native;
};
LossPair plans_by_loss(const TrainConfig& c) {
  validate_or_throw(c);
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  PlanOptions o = resolve_plan_options(c, hw);
  LossPair p;
  o.cross_entropy = CrossEntropyImpl::fp32_upcast;
  p.upcast = plan(c, hw, o);
  o.cross_entropy = CrossEntropyImpl::native;
  p.native = plan(c, hw, o);
  // first, last and (pp > 2) the busiest middle rank; the V: its first rank and the busiest other.
  const bool v = c.parallelism.pp_schedule == PpSchedule::zbv_zero_bubble;
  const size_t stages = c.parallelism.pp > 2 && !v ? 3u : 2u;
  EXPECT_EQ(p.upcast.pp_stages.size(), stages);
  EXPECT_EQ(p.native.pp_stages.size(), stages);
  return p;
}
// Equal up to summation order (1e-12).
void expect_same_stage_memory(const StageMemory& a, const StageMemory& b) {
  EXPECT_NEAR(a.peak_bytes, b.peak_bytes, 1e-12 * a.peak_bytes);
  EXPECT_NEAR(a.reserved_bytes, b.reserved_bytes, 1e-12 * a.reserved_bytes);
}

// The loss runs on the last stage only: the first stage's memory, allocated and as the caching
// allocator replays it, is the same whether the loss up-casts the logits to fp32 or not, while
// the last stage's grows with the fp32 copies. (The replay once gave the first stage's stand-in
// block the up-cast loss's tensors: 41.2 against 31.6 GB reserved here.) Exact up to summation
// order (1e-12).
TEST(MeshPlan, FirstPipelineStageHoldsNoLossTensors) {
  // Llama 3 8B on 8 GPUs as FSDP 2 x PP 4 without TP: the logits whole, the loss's fp32 tensors
  // (4.2 GB each) the step's largest.
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  c.runtime = "torchtitan";
  c.parallelism.pp = 4;
  const LossPair p = plans_by_loss(c);
  expect_same_stage_memory(p.upcast.pp_stages[0], p.native.pp_stages[0]);
  EXPECT_GT(p.upcast.pp_stages[1].reserved_bytes, p.native.pp_stages[1].reserved_bytes);
}

// The last pipeline rank holds the micro-batches its schedule keeps in flight there: one under
// 1F1B, every one under GPipe (all forwards before any backward, the head's loss tensors
// included), ((v − 1)·pp + 1) / v under Interleaved1F1B. So its memory orders GPipe > interleaved
// > 1F1B, and under 1F1B it has no in-flight component of its own.
TEST(MeshPlan, LastPipelineStageHoldsWhatItsScheduleKeepsInFlight) {
  TrainConfig c = pipelined_config(8);
  c.parallelism.pp_microbatch = 1;  // 8 micro-batches of one sequence
  auto last = [&](PpSchedule s) {
    c.parallelism.pp_schedule = s;
    c.parallelism.pp_virtual_stages = 0;
    validate_or_throw(c);
    const Prediction p = plan_of(c);
    EXPECT_EQ(p.pp_stages.size(), 3u);
    return p.pp_stages.at(1).peak_bytes;
  };
  const double one = last(PpSchedule::one_f_one_b), all = last(PpSchedule::gpipe),
               interleaved = last(PpSchedule::interleaved_1f1b);
  EXPECT_GT(all, interleaved);
  EXPECT_GT(interleaved, one);
}

// ZBVZeroBubble's V puts the model's first and last stage on the first rank: its memory holds the
// loss's fp32 up-cast tensors (it grows when the loss up-casts the logits), its last rank holds
// neither end (the same whichever loss). The 1F1B case is FirstPipelineStageHoldsNoLossTensors.
// Exact up to summation order (1e-12).
TEST(MeshPlan, ZeroBubbleVFirstRankHoldsBothEnds) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 4, 8192);
  c.runtime = "torchtitan";
  c.parallelism.pp = 4;
  c.parallelism.pp_microbatch = 1;
  c.parallelism.pp_schedule = PpSchedule::zbv_zero_bubble;
  const LossPair p = plans_by_loss(c);
  EXPECT_GT(p.upcast.pp_stages[0].peak_bytes, p.native.pp_stages[0].peak_bytes);
  expect_same_stage_memory(p.upcast.pp_stages[1], p.native.pp_stages[1]);
}

// Without TP there is no vocabulary shard and no loss_parallel (torchtitan's
// ParallelDims.loss_parallel_enabled: tp > 1): a cp or pp mesh's head is planned the same whether
// the runtime runs torch's loss_parallel handlers or not; with tp 2 their extra fp32 shard shows.
TEST(MeshPlan, LossParallelTermsNeedTp) {
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::full, 1, 8192);
  c.runtime = "torchtitan-2025-07";
  c.parallelism.cp = 2;
  auto no_dtensor_loss = [](PlanOptions& o) { o.loss_parallel_dtensor = false; };
  const TermFlip cp = plans_flipping(c, no_dtensor_loss);
  ASSERT_TRUE(cp.options.loss_parallel_dtensor);
  EXPECT_EQ(cp.resolved.mem_peak_bytes, cp.flipped.mem_peak_bytes);
  EXPECT_EQ(cp.resolved.mem_reserved_bytes, cp.flipped.mem_reserved_bytes);
  c.parallelism.cp = 1;
  c.parallelism.tp = 2;
  const TermFlip tp = plans_flipping(c, no_dtensor_loss);
  EXPECT_GT(tp.resolved.mem_peak_bytes, tp.flipped.mem_peak_bytes);
}

// A runtime runs the pipeline schedules its term pp_schedules lists: KempnerForge builds one stage
// per rank, so its Interleaved1F1B would raise (build_pipeline_schedule @601aba9); plan refuses it
// by name and search does not try it. torchtitan of 2024-10 ran no ZBVZeroBubble yet.
TEST(MeshPlan, RuntimesRunTheirOwnSchedulesOnly) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = pipelined_config(8);
  c.parallelism.pp_schedule = PpSchedule::interleaved_1f1b;
  TrainConfig kf = c;
  kf.precision.master_dtype = "bf16";  // KempnerForge's (its model cast to bf16 before fully_shard)
  const std::string why = runtime_refusal(runtime_preset("kempnerforge"), kf, hw);
  EXPECT_NE(why.find("pp_schedule = \"Interleaved1F1B\""), std::string::npos) << why;
  EXPECT_EQ(runtime_refusal(runtime_preset("torchtitan"), c, hw), "");
  c.parallelism.pp_schedule = PpSchedule::zbv_zero_bubble;
  c.activation_checkpointing.mode = AcMode::none;
  EXPECT_NE(runtime_refusal(runtime_preset("torchtitan-2024-10"), c, hw).find("ZBVZeroBubble"), std::string::npos);
  EXPECT_EQ(runtime_refusal(runtime_preset("torchtitan-2025-02"), c, hw), "");
}

// The runtimes' splits of a model into pipeline stages (runtime term pp_split), by hand from their
// code: torchtitan's effective layers (L + 2, the extras on the first stages), its 9dec370 rule
// (the first stage short, the extras on the middle ones) and KempnerForge's blocks (the extras
// first). Every split places every block once.
TEST(MeshTerms, PipelineSplitsAsTheRuntimesDo) {
  auto eq = [](const PpRankBlocks& b, int first, int last, int middle, int both) {
    EXPECT_EQ(b.first, first);
    EXPECT_EQ(b.last, last);
    EXPECT_EQ(b.middle, middle);
    EXPECT_EQ(b.both, both);
  };
  const PpSchedule one = PpSchedule::one_f_one_b, loop = PpSchedule::interleaved_1f1b, v = PpSchedule::zbv_zero_bubble;
  // 70B over pp 8: 82 layer-equivalents, 11 11 10 10 10 10 10 10: rank 1 runs 11 blocks.
  eq(pp_rank_block_counts(PpSplit::effective_layers, 80, 8, 1, one), 10, 9, 11, 0);
  // 405B over pp 8 divides evenly (the published rows): 15 beside each end, 16 between, every rule.
  eq(pp_rank_block_counts(PpSplit::effective_layers, 126, 8, 1, one), 15, 15, 16, 0);
  eq(pp_rank_block_counts(PpSplit::blocks_base_first, 126, 8, 1, one), 15, 15, 16, 0);
  // 9dec370 over 16 stages: 7, 8 x 14, 7; rank r holds stages r and r + 8.
  eq(pp_rank_block_counts(PpSplit::blocks_base_first, 126, 8, 2, loop), 15, 15, 16, 0);
  // KempnerForge's 70B over pp 4: 20 a stage.
  eq(pp_rank_block_counts(PpSplit::blocks, 80, 4, 1, one), 20, 20, 20, 0);
  // The V: 70B over pp 4, 8 stages of 10 11 10 10 10 10 10 9 blocks; rank 0 holds stages 0 and 7.
  eq(pp_rank_block_counts(PpSplit::effective_layers, 80, 4, 2, v), 19, 20, 21, 19);
  for (PpSplit split : {PpSplit::effective_layers, PpSplit::blocks_base_first, PpSplit::blocks})
    for (int L : {16, 26, 32, 40, 80, 126})
      for (int pp : {2, 4, 8})
        for (PpSchedule s : {one, loop}) {
          const int stages = pp * (s == loop ? 2 : 1);
          if (stages > L / 2) continue;
          const PpRankBlocks b = pp_rank_block_counts(split, L, pp, s == loop ? 2 : 1, s);
          // first + last + the middle ranks (each at most `middle`) hold the L blocks.
          EXPECT_LE(b.first + b.last + (pp - 2) * b.middle - L, pp > 2 ? (pp - 2) : 0) << L << " " << pp;
          EXPECT_GE(b.first + b.last + (pp - 2) * b.middle, L) << L << " " << pp;
          if (pp == 2) {
            EXPECT_EQ(b.first + b.last, L) << L;
          }
        }
}

// A pipeline runs at its slowest rank's pace, and the plan times that rank (its note names it):
// Llama 3 8B over pp 4 is 34 layer-equivalents split 9 9 8 8, the ends one each, so rank 1 runs 9
// blocks and the last 7 and the head (under full checkpointing the head's work is less than two
// blocks'): rank 1 is the slowest (the plan's equal split once gave the last 8 blocks and timed
// it). Llama 3.1 405B's head is lighter than a block at tp 8, so over pp 8 a middle rank, with 16
// blocks and neither end, is; Llama 3 70B over pp 8 (82 layer-equivalents) runs 11 on rank 1.
TEST(MeshPlan, PipelineIsTimedOnItsSlowestRank) {
  auto timed = [](const Prediction& p) {
    const std::string key = "timed on its slowest rank, ";
    for (const std::string& n : p.mesh_notes)
      if (const size_t at = n.find(key); at != std::string::npos) return n.substr(at + key.size(), n.find(';', at) - at - key.size());
    return std::string();
  };
  // torchtitan, full checkpointing, sequences of 8192, micro-batches of one sequence.
  auto timed_rank = [&](const char* model, int gpus, int tp, int pp, int micro_batch) {
    TrainConfig c = test::make_config(model, "H100-80GB-SXM", gpus, ShardingStrategy::full_shard, AcMode::full,
                                      micro_batch, 8192);
    c.runtime = "torchtitan";
    c.parallelism.tp = tp;
    c.parallelism.pp = pp;
    c.parallelism.pp_microbatch = 1;
    validate_or_throw(c);
    return timed(plan_of(c));
  };
  EXPECT_EQ(timed_rank("llama3-8b", 8, 1, 4, 4), "a rank of neither end (9 blocks)");
  EXPECT_EQ(timed_rank("llama3.1-405b", 512, 8, 8, 8), "a rank of neither end (16 blocks)");
  EXPECT_EQ(timed_rank("llama3-70b", 64, 8, 8, 8), "a rank of neither end (11 blocks)");
}

// The reserved estimate with expandable segments off and on brackets the plan's own: the
// pipeline's in-flight activations and held parameters are segments beside the replayed trace,
// in the range as in the estimate (the range once stopped at the allocated peak below it).
TEST(MeshPlan, PipelineReservedRangeBracketsTheEstimate) {
  const TrainConfig c = pipelined_config(8);
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  PlanOptions o = resolve_plan_options(c, hw);
  o.reserved_range = true;
  const Prediction p = plan(c, hw, o);
  ASSERT_GT(test::component(p, "pipeline_in_flight"), 0);
  EXPECT_GE(p.mem_reserved_range_bytes.first, p.mem_peak_bytes);
  EXPECT_LE(p.mem_reserved_range_bytes.first, p.mem_reserved_bytes * (1 + 1e-12));
  EXPECT_GE(p.mem_reserved_range_bytes.second, p.mem_reserved_bytes * (1 - 1e-12));
}

// pp_reshard_after_forward: a stage that reshards after each forward gathers its units again in
// every micro-batch's backward (KempnerForge), one that does not once a step (torchtitan). The
// same bytes are held either way; the all-gathers cost more time with resharding.
TEST(MeshPlan, PipelineStageReshardingGathersEveryMicroBatch) {
  TrainConfig c = pipelined_config(8);
  const TermFlip t = plans_flipping(c, [](PlanOptions& o) { o.pp_reshard_after_forward = true; });
  ASSERT_FALSE(t.options.pp_reshard_after_forward);  // torchtitan
  EXPECT_GT(t.flipped.comm_s, t.resolved.comm_s);
  EXPECT_EQ(test::component(t.flipped, "pipeline_gathered_parameters"),
            test::component(t.resolved, "pipeline_gathered_parameters"));
}

TEST(MeshPlan, TimelineHasALanePerDimension) {
  TrainConfig c = torchtitan_config(64);
  c.training.micro_batch = 8;
  c.parallelism.tp = 8;
  c.parallelism.pp = 2;
  validate_or_throw(c);
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  PlanOptions o = resolve_plan_options(c, hw);
  o.timeline = true;
  const Prediction p = plan(c, hw, o);
  double tp = 0, pp = 0;
  for (const TimelineEvent& e : p.timeline) {
    if (e.lane == "tp") tp += e.duration_s;
    if (e.lane == "pp") pp += e.duration_s;
  }
  EXPECT_GT(tp, 0);
  EXPECT_NEAR(pp, p.pp_bubble_s + p.pp_send_s, 1e-12);
  // One step's lanes are at most the step's TP exposure (micro-steps beyond the timeline's are
  // not drawn twice).
  EXPECT_LE(tp, p.tp_exposed_s * (1 + 1e-9));
}

TEST(MeshPlan, RuntimesRefuseWhatTheyDoNotRun) {
  TrainConfig c = torchtitan_config(64);
  c.parallelism.tp = 8;
  c.runtime = "fms-fsdp";
  const HardwareSpec hw = load_hardware(c.cluster.hardware);
  EXPECT_NE(runtime_refusal(runtime_preset("fms-fsdp"), c, hw).find("cannot run parallelism.tp = 8"), std::string::npos);
  c.runtime = "torchtitan";
  c.parallelism.tp_async = true;
  EXPECT_NE(runtime_refusal(runtime_preset("torchtitan"), c, hw).find("needs precision.compile = true"), std::string::npos);
  c.precision.compile = true;
  EXPECT_EQ(runtime_refusal(runtime_preset("torchtitan"), c, hw), "");
  // The zero-bubble schedules with activation checkpointing in the generations of the bug
  // (pytorch/torchtitan#773), by name; without checkpointing, or with 1F1B, they are planned.
  c.parallelism.tp_async = false;
  c.precision.compile = false;
  c.parallelism.pp = 8;
  // (torchtitan-2025-02 runs both; torchtitan-2024-10 no ZBVZeroBubble yet: its pp_schedules.)
  for (PpSchedule z : {PpSchedule::interleaved_zero_bubble, PpSchedule::zbv_zero_bubble}) {
    c.parallelism.pp_schedule = z;
    c.activation_checkpointing.mode = AcMode::full;
    const std::string why = runtime_refusal(runtime_preset("torchtitan-2025-02"), c, hw);
    EXPECT_NE(why.find("pytorch/torchtitan#773"), std::string::npos) << why;
    EXPECT_NE(why.find(to_string(z)), std::string::npos) << why;
    EXPECT_EQ(runtime_refusal(runtime_preset("torchtitan"), c, hw), "");
    c.activation_checkpointing.mode = AcMode::none;
    EXPECT_EQ(runtime_refusal(runtime_preset("torchtitan-2025-02"), c, hw), "");
  }
  c.parallelism.pp_schedule = PpSchedule::one_f_one_b;
  c.activation_checkpointing.mode = AcMode::full;
  EXPECT_EQ(runtime_refusal(runtime_preset("torchtitan-2024-10"), c, hw), "");
}

// A pipeline row whose memory figure does not say whose it is (mem_rank empty) is not compared
// on memory, and says so; rank 0's figure (mem_rank 0) is compared with the first stage, every
// rank's (max) with the larger stage: three ways of reading the same row's plan.
TEST(MeshRuns, PipelineRowsCompareMemoryOnlyWithTheirRank) {
  const std::vector<PublishedRow> all =
      read_published_csv(std::string(SHARDCAST_TEST_PUBLISHED_DIR) + "/outside_mesh.csv", {});
  std::vector<PublishedRow> rows;
  for (const PublishedRow& r : all)
    if (r.row_id == "kf_cv_13b_32gpu_tp4_pp2") rows = {r, r, r};
  ASSERT_EQ(rows.size(), 3u);
  rows[1].mem_rank = "max";
  rows[2].mem_rank = "";
  HardwareSet hw;
  const auto cases = resolve_cases(rows, hw);
  const ValidationResult v = validate_cases(rows, cases, hw);
  ASSERT_EQ(v.rows.size(), 3u);
  ASSERT_EQ(cases.size(), 3u);
  const Prediction p = predict(cases[0].cfg, hw.at(cases[0].hardware), cases[0].options);
  ASSERT_EQ(p.pp_stages.size(), 2u);
  const double gib = double(1ull << 30);
  EXPECT_TRUE(v.rows[0].has_mem);
  EXPECT_NEAR(v.rows[0].predicted_mem_gib, p.pp_stages[0].peak_bytes / gib, 1e-9);  // allocated, first stage
  EXPECT_TRUE(v.rows[1].has_mem);
  EXPECT_NEAR(v.rows[1].predicted_mem_gib, p.mem_peak_bytes / gib, 1e-9);  // the larger stage's
  EXPECT_FALSE(v.rows[2].has_mem);
  EXPECT_NE(v.rows[2].config_notes.find("memory not compared"), std::string::npos) << v.rows[2].config_notes;
}

// Published mesh runs never fitted on (configs/published/outside_mesh.csv). Issue 54's targets
// (tokens/s/GPU MAPE <= 10 %, |bias| <= 4 %, no memory row more than 5 % under, >= 68 % inside 1σ)
// are NOT met: these are regression bounds at the measured values (docs/validation.md "Device
// meshes" states both), so a change that makes the mesh model worse fails here.
TEST(MeshRuns, PublishedMeshRunsHoldTheirRegressionBounds) {
  const ValidationResult v =
      test::validate_published_file(std::string(SHARDCAST_TEST_PUBLISHED_DIR) + "/outside_mesh.csv");
  const ValidationSummary& s = v.overall;
  // Every row predicted but the async-TP row of a generation without it and the
  // InterleavedZeroBubble row of pytorch/torchtitan#773 (refused by torchtitan-2024-10: the bug
  // with checkpointing). The four Qwen3-32B rows are planned with model.head_dim and qk_norm.
  EXPECT_EQ(s.n, 44);
  // Since the pipeline stages' memory and gathered parameters (docs/cost-model.md §12): MAPE 11.9
  // -> 12.9 (KempnerForge's PP rows gather once a micro-batch, not twice, as its code does: +23 ..
  // +33 -> +27 .. +61 % fast), memory MAPE 8.0 -> 8.8 (its PP rows like for like, rank 0's first
  // stage: +60.6 -> +5.9 %; torchtitan's 405B PP rows' reserved 11-24 % under).
  // The first stage's replay without the loss's tensors (FirstPipelineStageHoldsNoLossTensors):
  // torchtitan's six 405B PP rows 0.3 GiB lower. Then ring attention as torch runs it
  // (RingAttentionGathersKvAndRingsItsFp32Gradients, RingAttentionBuffers): K and V at the width
  // SDPA takes them on the rank (repeated to the query heads in torchtitan of 2024-12), the fp32
  // gradient ring, and the buffers: the CP rows 1-8 points slower (median 8.5 -> 9.2), the 405B
  // CP rows' memory 4-8 points closer (memory MAPE 8.9 -> 8.2).
  // Then the step timed on the pipeline's slowest rank (read_pipeline): torchtitan's 405B PP rows
  // ~9 points slower (a middle stage's 16 blocks, not 14 beside both ends: +18.3 / +20.1 -> +9.6 /
  // +11.3 %, the CP rows -9.8 .. -20.1 %, as slow as the 8B CP rows' attention), KempnerForge's
  // within 3 points: MAPE 13.0 -> 13.5, median 9.2 -> 9.7, bias +7.9 -> +6.5.
  EXPECT_LE(s.mape_tps, 13.8);             // measured 13.5
  EXPECT_LE(s.median_abs_err_tps, 10.0);   // measured 9.7
  EXPECT_GE(s.within_1sigma, 28);          // measured 28 of 44
  // Then no loss_parallel tensor without TP (LossParallelTermsNeedTp): the three 8B CP rows'
  // memory +1.1 .. +1.7 -> -1.0 .. -0.4 % (memory MAPE 8.2 -> 8.1).
  // Then the head's allocator replay with torch's loss_parallel extra fp32 shard, as its lumps
  // count it (the replay's reserved had stopped at the allocated peak): the four Qwen3 TP rows
  // -14.6 .. -12.1 -> -2.2 .. 0.0 %, the 70B TP 8 rows -20.3 / -15.2 -> -12.2 / -6.6 % (memory
  // MAPE 8.1 -> 6.0, 12 -> 8 rows more than 5 % under by the estimate).
  EXPECT_LE(s.mape_mem, 6.3);              // measured 6.0 (n = 30)
  EXPECT_LE(s.mem_under_5pct, 8);          // measured 8 of 30 more than 5 % under (target: none)
  EXPECT_LE(s.mem_under_5pct_band, 5);     // measured 5 against the allocator range: torchtitan's 405B PP rows
  // KempnerForge's PP rows state rank 0's max_memory_allocated (mem_rank 0): the first stage's,
  // measured +5.9, +0.6 and +0.9 %; with both ends on one rank the 13B row was +60.6 %.
  for (const ValidationRowResult& r : v.rows)
    if (r.row_id.rfind("kf_cv_", 0) == 0 && r.row_id.find("_pp") != std::string::npos) {
      EXPECT_TRUE(r.has_mem) << r.row_id;
      EXPECT_LT(std::abs(r.err_mem_pct), 6.5) << r.row_id;
    }
}

}  // namespace
}  // namespace shardcast::planner
