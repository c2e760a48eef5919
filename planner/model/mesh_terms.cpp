#include "planner/model/mesh_terms.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace shardcast::planner {

namespace {

bool is_column_gemm(const char* name) {  // split by output columns: n / tp
  for (const char* c : {"wqkv", "w1_w3", "fc1", "output"})
    if (std::strcmp(name, c) == 0) return true;
  return false;
}

bool is_sequence_op(const char* name) {  // on sequence shards only under sequence parallel
  for (const char* c : {"attention_norm", "ffn_norm", "residual_add", "final_norm"})
    if (std::strcmp(name, c) == 0) return true;
  return false;
}

}  // namespace

void split_ops(std::vector<Op>& ops, int tp, int cp, bool loss_parallel, bool sequence_parallel) {
  const double t = tp;
  for (Op& op : ops) {
    if (op.kind == OpKind::attention) op.flops *= cp;  // queries of s/cp tokens score all s keys
    if (!loss_parallel && std::strcmp(op.name, "cross_entropy") == 0) continue;  // whole logits on every rank
    if (!sequence_parallel && is_sequence_op(op.name)) continue;  // whole tokens on every rank
    op.flops /= t;
    op.bytes /= t;
    op.fused_bytes /= t;
    op.saved_bytes /= t;
    if (op.kind == OpKind::matmul) {
      if (is_column_gemm(op.name)) op.n /= t;
      else op.k /= t;  // row-parallel: wo, w2, fc2
    } else if (op.measured == MeasuredOp::swiglu) {
      op.n /= t;  // the FFN width is split
    } else if (op.measured == MeasuredOp::rmsnorm) {
      op.m /= t;  // sequence parallel: the norm runs on T / tp tokens
    }
  }
}

MeshGroups mesh_groups(const Mesh& m, int gpn) {
  gpn = std::max(1, gpn);
  auto span = [&](int ranks, int stride) {  // a group of `ranks` ranks `stride` apart
    const int width = ranks * stride;
    // Groups lie at multiples of `width` in rank order: inside a node when width divides it; a
    // narrower group that does not (tp 4 on 6-GPU nodes: ranks 4-7 on nodes 0 and 1) has groups
    // across a node boundary, and a collective waits for its slowest group.
    if (width <= gpn) return CommGroup{ranks, gpn % width == 0 ? 1 : 2};
    const int per_node = std::max(1, gpn / stride);
    return CommGroup{ranks, std::max(1, (ranks + per_node - 1) / per_node)};
  };
  MeshGroups g;
  g.tp = span(m.tp, 1);
  g.cp = span(m.cp, m.tp);
  g.dp_shard = span(m.dp_shard, m.tp * m.cp);
  g.dp_replicate = span(m.dp_replicate, m.dp_shard * m.tp * m.cp);
  g.fsdp = span(m.dp_shard * m.cp, m.tp);
  // A stage's ranks send to the next stage's, dp·tp·cp ranks on: off the node when that stride is a
  // node or more, or does not divide it (some pairs straddle a node boundary).
  const int64_t stride = m.dp() * m.tp * m.cp;
  g.pp_crosses_nodes = m.pp > 1 && (stride >= gpn || gpn % stride != 0);
  g.tp_crosses_nodes = g.tp.nodes > 1;
  return g;
}

namespace {

// A collective paired with a GEMM under async TP: it runs in tp chunks, each overlapped with the
// GEMM's chunk beside it, so the first chunk and what the GEMM cannot cover stay exposed
// (torchtitan's async TP, torch._inductor micro_pipeline_tp: the all-gather / reduce-scatter
// decomposed into tp steps of a symmetric-memory ring; PyTorch forum "Distributed w/ TorchTitan:
// Introducing Async Tensor Parallelism", 2024). While a chunk runs beside the GEMM, the GEMM
// progresses at 1/(1 + slowdown), the rule the step simulator applies beside FSDP's collectives
// (docs/cost-model.md §4): the hidden part costs slowdown × its length.
double async_exposed(double comm, double gemm, int tp, double slowdown) {
  const double first = comm / tp;
  const double hidden = std::min(comm - first, gemm);
  return first + std::max(0.0, comm - first - gemm) + slowdown * hidden;
}

}  // namespace

BlockMeshComm block_mesh_comm(const Mesh& m, const MeshGroups& g, const CommContext& comm, const BlockMeshInputs& in) {
  BlockMeshComm r;
  const double A = in.act_bytes, T = in.tokens;
  if (m.tp > 1 && !in.sequence_parallel) {
    // Basic TP (Megatron's f and g, Korthikanti et al. 2022 §4.2.2): forward all-reduces the
    // outputs of wo and w2, backward the input gradients of wqkv and w1_w3 (of each column
    // projection where each redistributes its own input); A·T·d each, on the compute stream.
    const double ar = collective_time(Collective::all_reduce, A * T * in.d_model, g.tp, comm);
    r.tp_fwd_s = 2 * ar;
    r.tp_bwd_s = (in.column_inputs[0] + in.column_inputs[1]) * ar;
    r.tp_busy_s = r.tp_fwd_s + r.tp_bwd_s;
  } else if (m.tp > 1) {
    // Sequence parallel: forward all-gathers the normed input before wqkv and w1_w3 and
    // reduce-scatters the outputs of wo and w2 (4 collectives of the T·d activation, gathered
    // size A·T·d); backward runs each one's transpose (Korthikanti et al. 2022 §4.2.2). Gathered
    // per projection, the all-gather before wqkv (w1_w3) runs once per projection, each paired
    // with its share of the GEMM.
    const double ag = collective_time(Collective::all_gather, A * T * in.d_model, g.tp, comm);
    const double rs = collective_time(Collective::reduce_scatter, A * T * in.d_model, g.tp, comm);
    const double each[4] = {ag, rs, ag, rs};  // wqkv, wo, w1_w3, w2
    const int times[4] = {in.column_inputs[0], 1, in.column_inputs[1], 1};
    for (int i = 0; i < 4; ++i) {
      const double gemm = in.gemm_fwd_s[i] / times[i];
      for (int k = 0; k < times[i]; ++k) {
        r.tp_busy_s += 2 * each[i];
        if (in.tp_async) {
          r.tp_fwd_s += async_exposed(each[i], gemm, m.tp, in.overlap_compute_slowdown);
          r.tp_bwd_s += async_exposed(each[i], 2 * gemm, m.tp, in.overlap_compute_slowdown);  // backward: two GEMMs
        } else {
          r.tp_fwd_s += each[i];
          r.tp_bwd_s += each[i];
        }
      }
    }
  }
  if (m.tp > 1 && in.qk_gather_bytes > 0) {
    // torchtitan's NoParallel on q_norm and k_norm (f9e8897a6 .. 8c1d1c5fc, pytorch/torchtitan#1867):
    // the head-sharded norm output is redistributed to Replicate, an all-gather of q and k that
    // the next op waits for; in backward their gradients come back from the head slices SDPA
    // takes locally, gathered again (DTensor's Redistribute.backward to the Replicate spec).
    const double ag = collective_time(Collective::all_gather, in.qk_gather_bytes, g.tp, comm);
    r.tp_fwd_s += ag;
    r.tp_bwd_s += ag;
    r.tp_busy_s += 2 * ag;
  }
  if (m.cp > 1) {
    // Ring attention (torch context_parallel, _attention.py): forward gathers the other ranks' K
    // and V (2 · kv_width per token, T per rank); backward gathers them again and passes the fp32
    // dK/dV accumulator round the ring, one permute per step, cp in all (dkv_rotater, always
    // all-to-all). A permute moves one rank's buffer one hop: a ring all-gather is cp − 1 of them.
    const double kv = A * 2.0 * in.kv_width * T;                     // one rank's K and V  // bytes
    const double dkv = 4.0 * 2.0 * in.kv_width * T;                  // its fp32 dK and dV  // bytes
    const double gather = collective_time(Collective::all_gather, kv * m.cp, g.cp, comm);  // s
    const double kv_hop = gather / (m.cp - 1);                                                // s
    const double dkv_hop = collective_time(Collective::all_gather, dkv * m.cp, g.cp, comm) / (m.cp - 1);  // s
    const double attn_bwd = 2.5 * in.attention_fwd_s;  // the flash backward's share of attention  // s
    r.cp_busy_s = 2.0 * gather + m.cp * dkv_hop;
    // The dK/dV permute of a step is waited for at the next step, after that step's attention
    // backward: hidden behind cp − 1 of the cp chunks' backward, the last one exposed.
    const double grad_ring = dkv_hop + std::max(0.0, (m.cp - 1) * dkv_hop - attn_bwd * (m.cp - 1) / m.cp);
    if (in.cp_rotate == CpRotate::alltoall) {
      // cp − 1 K/V hops each way, each hidden behind the attention of the chunk before it.
      r.cp_fwd_s = kv_hop + std::max(0.0, gather - kv_hop - in.attention_fwd_s);
      r.cp_bwd_s = kv_hop + std::max(0.0, gather - kv_hop - attn_bwd) + grad_ring;
    } else {
      r.cp_fwd_s = gather;  // waited for at the second chunk, before which one chunk's attention ran
      r.cp_bwd_s = gather + grad_ring;
    }
  }
  return r;
}

double cp_attention_width(const ModelSpec& model, int tp, bool gqa_repeated) {
  return double(gqa_repeated ? model.q_dim() : model.kv_dim()) / tp;
}

CpAttentionMemory cp_attention_memory(int cp, CpRotate rotate, double tokens, double q_width, double kv_width,
                                      int act_bytes) {
  CpAttentionMemory r;
  if (cp <= 1) return r;
  const double kv = act_bytes * 2.0 * kv_width * tokens;  // one rank's K and V  // bytes
  const double exchanged = rotate == CpRotate::allgather ? cp * kv : kv;  // bytes
  r.fwd = exchanged + kv + 2.0 * 4.0 * q_width * tokens;
  r.bwd = exchanged + kv + 4.0 * (q_width + 2.0 * kv_width) * tokens + 2.0 * 4.0 * 2.0 * kv_width * tokens;
  return r;
}

double end_unit_tp_comm_s(const Mesh& m, const MeshGroups& g, const CommContext& comm, double tokens, double d_model,
                          int act_bytes) {
  if (m.tp <= 1) return 0;
  return collective_time(Collective::all_gather, act_bytes * tokens * d_model, g.tp, comm);
}

double logits_gather_s(const Mesh& m, const MeshGroups& g, const CommContext& comm, double tokens, double vocab,
                       int act_bytes) {
  if (m.tp <= 1) return 0;
  return collective_time(Collective::all_gather, act_bytes * tokens * vocab, g.tp, comm);
}

double pp_bubble_s(PpSchedule s, int pp, int v, int grad_accum, double t_fwd, double t_bwd,
                   double t_wgrad) {
  if (pp <= 1) return 0;
  const double p1 = pp - 1;
  double per_flush = 0;  // s
  switch (s) {
    // GPipe and 1F1B: (pp - 1) micro-batch stage times idle per flush (Narayanan et al. 2021,
    // "Efficient Large-Scale Language Model Training on GPU Clusters", §2.2.1).
    case PpSchedule::gpipe:
    case PpSchedule::one_f_one_b: per_flush = p1 * (t_fwd + t_bwd); break;
    // Interleaved 1F1B: the bubble divided by the stages per rank (ibid. §2.2.2).
    case PpSchedule::interleaved_1f1b: per_flush = p1 * (t_fwd + t_bwd) / v; break;
    // Zero bubble (Qi et al. 2024, "Zero Bubble Pipeline Parallelism"): backward split into input
    // gradient (B) and weight gradient (W) fills the bubble; ZB-H1 (§2.1) leaves (p-1)(F + B - W),
    // the V schedule (§6) (p-1)(F + B - 2W), clipped at 0. Divided by v for v stages per rank as
    // Interleaved1F1B's bubble is (an assumption: no source states the interleaved ZB1P's bubble).
    case PpSchedule::interleaved_zero_bubble:
      per_flush = p1 * std::max(0.0, t_fwd + (t_bwd - t_wgrad) - t_wgrad) / v;
      break;
    case PpSchedule::zbv_zero_bubble:
      per_flush = p1 * std::max(0.0, t_fwd + (t_bwd - t_wgrad) - 2.0 * t_wgrad) / v;
      break;
  }
  return per_flush * grad_accum;
}

double pp_inflight_microbatches(PpSchedule s, int pp, int v, int n_micro, int rank) {
  if (pp <= 1) return 1;
  switch (s) {
    case PpSchedule::gpipe: return n_micro;
    case PpSchedule::one_f_one_b: return std::min(pp - rank, n_micro);
    case PpSchedule::zbv_zero_bubble: return std::min(pp, n_micro);  // ZB-V: 1F1B's peak (Qi et al. §6)
    case PpSchedule::interleaved_1f1b:
    case PpSchedule::interleaved_zero_bubble: {
      // torch.distributed.pipelining _get_warmup_ops: (v − 1)·microbatches_per_round + factor·(pp −
      // 1 − rank) warm-up forwards, at most v·n, plus the steady phase's first; rounds = max(1,
      // n // pp), microbatches_per_round = n // rounds; factor 2 for ScheduleInterleaved1F1B, 1 for
      // ScheduleInterleavedZeroBubble (its multiply_factor=1).
      const int rounds = std::max(1, n_micro / pp), per_round = n_micro / rounds;
      const int factor = s == PpSchedule::interleaved_1f1b ? 2 : 1;
      const double chunks =
          std::min(double(v) * n_micro, double((v - 1) * per_round + factor * (pp - 1 - rank) + 1));
      return chunks / v;
    }
  }
  return std::min(pp - rank, n_micro);
}

int pp_rank_blocks(int n_layers, int pp) { return std::max(1, pp_blocks_beside_ends(n_layers, pp)); }

const char* to_string(PpSplit s) {
  switch (s) {
    case PpSplit::blocks_base_first: return "blocks_base_first";
    case PpSplit::blocks: return "blocks";
    case PpSplit::effective_layers: break;
  }
  return "effective_layers";
}

namespace {

// Blocks of each of the S stages (the ends not counted), by the split's rule.
std::vector<int> pp_stage_blocks(PpSplit split, int L, int S) {
  std::vector<int> b(size_t(S), 0);
  if (split == PpSplit::effective_layers) {  // L + 2 layer-equivalents, the extras first
    const int base = (L + 2) / S, extra = (L + 2) % S;
    for (int i = 0; i < S; ++i) b[size_t(i)] = base + (i < extra ? 1 : 0);
    b.front() -= 1;  // the embedding's layer-equivalent
    b.back() -= 1;   // the norm and output's
  } else if (split == PpSplit::blocks) {     // L blocks, the extras first
    for (int i = 0; i < S; ++i) b[size_t(i)] = L / S + (i < L % S ? 1 : 0);
  } else {                                   // base on the first, extras on the middle ones
    int extra = L % S, used = L / S;
    b.front() = L / S;
    for (int i = 1; i + 1 < S; ++i) {
      b[size_t(i)] = L / S + (extra > 0 ? 1 : 0);
      extra -= extra > 0 ? 1 : 0;
      used += b[size_t(i)];
    }
    b.back() = L - used;
  }
  return b;
}

}  // namespace

PpRankBlocks pp_rank_block_counts(PpSplit split, int n_layers, int pp, int v, PpSchedule s) {
  const int S = pp * std::max(1, v);
  const std::vector<int> stage = pp_stage_blocks(split, n_layers, S);
  std::vector<int> blocks(size_t(pp), 0);
  std::vector<bool> embed(size_t(pp), false), head(size_t(pp), false);
  for (int i = 0; i < S; ++i) {
    const int r = s == PpSchedule::zbv_zero_bubble && i >= pp ? 2 * pp - 1 - (i % (2 * pp)) : i % pp;
    blocks[size_t(r)] += stage[size_t(i)];
    if (i == 0) embed[size_t(r)] = true;
    if (i == S - 1) head[size_t(r)] = true;
  }
  PpRankBlocks out;
  out.first = blocks.front();
  out.last = blocks.back();
  for (int r = 0; r < pp; ++r) {
    if (embed[size_t(r)] && head[size_t(r)]) out.both = blocks[size_t(r)];
    if (!embed[size_t(r)] && !head[size_t(r)] && blocks[size_t(r)] > out.middle) {
      out.middle = blocks[size_t(r)];
      out.middle_rank = r;
    }
  }
  return out;
}

}  // namespace shardcast::planner
