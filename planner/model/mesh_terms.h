// The terms a device mesh adds to one rank's step: tensor parallel (with or without sequence parallel),
// context parallel and pipeline parallel, beside FSDP over the data-parallel dimensions.
//
// What it is: pure functions of the mesh (shared/train_config.h) and the step's per-rank quantities.
// - split_ops(): a block's (or the embedding's, the head's) ops as one rank of tp × cp runs them.
//   With sequence parallel every op is divided over tp: GEMMs by columns (wqkv, w1_w3, fc1,
//   output under loss parallel) or rows (wo, w2, fc2), attention by heads, norms, residuals and
//   the loss on sequence or vocabulary shards (Korthikanti et al. 2022, "Reducing Activation
//   Recomputation in Large Transformer Models", §4.2.2: every activation divided by t with SP;
//   torchtitan parallelize_llama at b5bcd76: colwise wq/wk/wv/w1/w3, rowwise wo/w2, SequenceParallel
//   norms, loss_parallel output). Without loss parallel (runtime term loss_parallel = false:
//   KempnerForge's output head gathered to Replicate) the loss op runs whole on every tp rank. The
//   ops come built for s/cp tokens per sequence; attention's
//   work is then multiplied by cp, each rank's queries scoring the whole sequence's keys with the
//   causal load balance (torch.distributed.tensor.experimental context_parallel: 2·cp chunks).
// - Without sequence parallel (runtime term tp_sequence_parallel = "without_pp" on a pipeline
//   stage: KempnerForge's tensor_parallel.py, "Pipeline parallel stages use basic TP (no
//   SequenceParallel)") only the blocks' Linears and attention are split; the norms and residual
//   adds run whole on every tp rank, the embedding and the head are not split, and each row-parallel
//   GEMM's output is all-reduced (Korthikanti et al. 2022 §4.2.2 and Table 2: s·b·h·(10 + 24/t +
//   5as/(ht)) bytes per layer without SP against s·b·h·(34/t + 5as/(ht)) with it).
// - A runtime that redistributes each column-parallel projection's input on its own (runtime term
//   tp_column_inputs = "per_projection": KempnerForge's ColwiseParallel(input_layouts=Shard(1)) on
//   q, k, v, gate and up) runs one all-gather per projection in forward and one reduce-scatter of
//   each one's input gradient in backward (basic TP: one all-reduce of each), where torchtitan's
//   PrepareModuleInput on the attention and the FFN runs one each.
// - A model with per-head q/k norms (model.qk_norm, Qwen3) under a runtime that redistributes
//   the norms' output to Replicate (runtime term tp_qk_norm = "gathered": torchtitan's NoParallel
//   on q_norm and k_norm from f9e8897a6 until 8c1d1c5fc, pytorch/torchtitan#1867) all-gathers q
//   and k (A·T·(q + kv)) in forward and their gradients in backward, and runs RoPE on every head.
// - block_mesh_comm(): TP's and CP's collectives of one block and how much of each the compute
//   stream waits for (TP's all-gathers and reduce-scatters are in the critical path unless async
//   TP overlaps each with its GEMM; CP's K/V exchange is in series with allgather rotation and
//   overlapped with each chunk's attention under alltoall rotation).
// - the pipeline: the schedule's bubble as a function of stages, stages per rank and
//   micro-batches; the micro-batches whose activations the first rank holds at once; the
//   point-to-point sends between stages.
// What it is not: FSDP's own collectives (fsdp_units.cpp, over the dp groups comm_setup builds
// from the mesh) or the step simulation (simulator.h). Thread-safe, no state.
#pragma once

#include <string>
#include <vector>

#include "planner/model/comm_model.h"
#include "planner/model/ops.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// ops as one rank of tp × cp runs them: ops built for s/cp tokens per sequence (attention's
// flops multiplied by cp, as its queries score every key), every op divided over tp but the
// loss (cross_entropy) without loss parallel, which every tp rank runs on the whole logits.
// Without sequence parallel the norms and residual adds (attention_norm, ffn_norm, residual_add,
// final_norm) are whole on every rank.
void split_ops(std::vector<Op>& ops, int tp, int cp, bool loss_parallel = true, bool sequence_parallel = true);

// The groups of a mesh rank, torchtitan's rank order (tp innermost, then cp, dp_shard,
// dp_replicate, pp outermost; torchtitan/distributed/parallel_dims.py), as the comm model sees
// them: ranks and the nodes they span.
struct MeshGroups {
  CommGroup tp, cp, dp_shard, dp_replicate;
  CommGroup fsdp;  // what FSDP shards over: dp_shard x cp (torchtitan's fsdp mesh)
  bool pp_crosses_nodes = false;  // neighbouring stages on different nodes
  bool tp_crosses_nodes = false;  // a TP group spans nodes (tp > gpus_per_node, or tp does not divide it)
};
MeshGroups mesh_groups(const Mesh& m, int gpus_per_node);

// One block's TP and CP collectives and what the compute stream waits for.  // s
struct BlockMeshComm {
  double tp_fwd_s = 0, tp_bwd_s = 0;  // exposed TP time, forward and backward
  double cp_fwd_s = 0, cp_bwd_s = 0;  // exposed CP time
  double tp_busy_s = 0, cp_busy_s = 0;  // the collectives' own time, forward + backward
};
struct BlockMeshInputs {
  double tokens = 0;          // b · s / cp per rank per micro-step (T)
  double d_model = 0;
  // Width of the K (and of the V) one rank's attention takes, per token: its heads × head_dim
  // (kv heads / tp, or heads / tp where the runtime repeats K and V before SDPA): what ring
  // attention exchanges (cp_attention_width).
  double kv_width = 0;
  int act_bytes = 2;          // bytes per activation element
  bool tp_async = false;
  bool sequence_parallel = true;  // false: basic TP, all-reduces (never async here)
  // Redistributions of the attention's and the FFN's input before their column-parallel GEMMs:
  // 1 each (torchtitan's PrepareModuleInput), or one per projection (runtime term tp_column_inputs).
  int column_inputs[2] = {1, 1};
  CpRotate cp_rotate = CpRotate::allgather;
  // Bytes of q and k after their norms, gathered over tp once each way (runtime term
  // tp_qk_norm = "gathered": A·T·(q + kv)); 0 = the norms stay on the rank's heads.
  double qk_gather_bytes = 0;
  // Forward times of the GEMMs TP's collectives pair with (one rank): the column GEMM after each
  // all-gather (wqkv, w1_w3) and the row GEMM before each reduce-scatter (wo, w2); attention's. // s
  double gemm_fwd_s[4] = {0, 0, 0, 0};
  double attention_fwd_s = 0;
  // Compute slows by (1 + this) while a collective runs beside it (EfficiencyParams::
  // overlap_compute_slowdown, the simulator's rule for FSDP's overlapped collectives); async TP's
  // hidden chunks pay it too.
  double overlap_compute_slowdown = 0;
};
BlockMeshComm block_mesh_comm(const Mesh& m, const MeshGroups& g, const CommContext& comm, const BlockMeshInputs& in);

// Context parallel's ring attention (torch context_parallel: _templated_ring_attention and its
// backward in torch/distributed/tensor/experimental/_attention.py): the K and V one rank's SDPA
// call takes, per token: its kv heads (n_kv_heads / tp) × head_dim, or its query heads where the
// runtime repeats K and V to the query heads before SDPA (runtime term gqa = "repeated").
double cp_attention_width(const ModelSpec& model, int tp, bool gqa_repeated);
// Its buffers beside the block's own attention tensors, for T tokens on the rank, K/V width w
// (cp_attention_width) and query width q per token (q_dim / tp), A bytes an activation:
//   forward: the exchanged K and V (all-gathered: cp chunks of 2·w·A·T; all-to-all: the next
//   chunk), the concatenated local chunk sent (2·w·A·T), and _SDPAMerger's fp32 output and the
//   step's fp32 copy of it (2 · 4·q·T);
//   backward: the same K/V buffers, the fp32 accumulators of dq, dk and dv (4·(q + 2w)·T) and the
//   fp32 dK/dV ring's buffer sent and the one received (2 · 4·2w·T).  // bytes
struct CpAttentionMemory {
  double fwd = 0, bwd = 0;
};
CpAttentionMemory cp_attention_memory(int cp, CpRotate rotate, double tokens, double q_width, double kv_width,
                                      int act_bytes);
// The embedding's and the head's TP collectives (sequence parallel's entry and exit): one
// reduce-scatter / all-gather of T·d each way.  // s
double end_unit_tp_comm_s(const Mesh& m, const MeshGroups& g, const CommContext& comm, double tokens, double d_model,
                          int act_bytes);

// Without loss parallel: the head's logits all-gathered over the tp group in forward (A·T·V
// bytes gathered; its backward takes the rank's slice locally, no collective).  // s
double logits_gather_s(const Mesh& m, const MeshGroups& g, const CommContext& comm, double tokens, double vocab,
                       int act_bytes);

// The pipeline schedule's idle time on a rank per optimizer step, for micro-batch stage times
// t_fwd and t_bwd (the rank's v stages together; t_wgrad: backward's weight-gradient part)
// and grad_accum pipeline flushes per optimizer step.  // s
double pp_bubble_s(PpSchedule s, int pp, int v, int grad_accum, double t_fwd, double t_bwd,
                   double t_wgrad);
// Micro-batches whose activations pipeline rank `rank` (0 … pp − 1) holds at its peak, in units
// of one micro-batch through all its v stages: its warm-up forwards and the first forward of its
// steady phase (torch.distributed.pipelining schedules.py). 1F1B: min(pp − rank, n); GPipe: n
// (every forward before any backward); interleaved (Interleaved1F1B, InterleavedZeroBubble,
// get_rank_warmup_ops): min(v·n, (v − 1)·pp + 2·(pp − 1 − rank) + 1) chunks / v; ZBVZeroBubble:
// min(pp, n) on every rank (the V shape balances them at 1F1B's first rank's peak, Qi et al. 2024
// "Zero Bubble Pipeline Parallelism" §6; torch's ScheduleZBVZeroBubble cites Section 6).
double pp_inflight_microbatches(PpSchedule s, int pp, int v, int n_micro, int rank);
// The blocks on the simulated pipeline rank: torchtitan splits the model with the embedding and
// the output counted as one layer each (pipeline_parallel.py generate_llm_fqn_per_model_part,
// input_weight = output_weight = 1), so a balanced rank holds (L + 2) / pp layer-equivalents;
// the planner simulates one rank with the embedding, the head and the rest in blocks.
int pp_rank_blocks(int n_layers, int pp);

// How a runtime splits the model into pipeline stages when the config gives no split (runtime
// term pp_split; shared/runtime_spec.cpp says each rule's source).
enum class PpSplit { effective_layers, blocks_base_first, blocks };
const char* to_string(PpSplit s);  // parse_pp_split: plan_options.h
// Blocks (beside the ends) of the pipeline ranks the plan reads, under `split` over S = pp · v
// stages (stage s on rank s mod pp; ZBVZeroBubble's V: s and 2·pp − 1 − s on rank s): first —
// rank 0, which holds the embedding; last — rank pp − 1 (the head; under the V neither end);
// middle — the most on a rank of neither end (0 where no rank has neither); both — the rank with
// both ends (the V's rank 0; 0 otherwise).
struct PpRankBlocks {
  int first = 0, last = 0, middle = 0, both = 0;
  int middle_rank = -1;  // the lowest rank of neither end with `middle` blocks (the most in flight); -1: none
};
PpRankBlocks pp_rank_block_counts(PpSplit split, int n_layers, int pp, int v, PpSchedule s);

}  // namespace shardcast::planner
