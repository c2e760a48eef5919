// The stages of plan() that a device mesh changes (plan_stages.h): the rank's shape, its ops
// split over tp × cp, its groups, each unit's TP and CP collectives and activation bytes, and the
// pipeline's bubble, sends and in-flight activations. Each is called only where tp, cp or pp > 1,
// so a 1-D plan is computed exactly as without them. Terms and sources: mesh_terms.h.
#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "planner/model/mesh_terms.h"
#include "planner/model/plan_stages.h"
#include "shared/op_category.h"

namespace shardcast::planner {

void mesh_step_shape(const TrainConfig& cfg, const RuntimeMesh& opt, StepShape* out) {
  StepShape& sh = *out;
  sh.loss_parallel = opt.loss_parallel;
  sh.loss_parallel_dtensor = opt.loss_parallel_dtensor;
  // A pipeline stage of a runtime that runs it without sequence parallel runs basic TP (mesh_terms.h).
  sh.sequence_parallel = opt.sequence_parallel_with_pp || sh.mesh.pp <= 1;
  sh.embedding_split = sh.sequence_parallel && opt.embedding_vocab_parallel;
  sh.qk_gathered = opt.qk_norm_gathered && cfg.model.qk_norm && sh.mesh.tp > 1;
  if (opt.column_inputs_per_projection) {  // q, k and v; the MLP's gate and up (SwiGLU) or its up
    sh.column_inputs[0] = 3;
    sh.column_inputs[1] = cfg.model.mlp_type == MlpType::swiglu ? 2 : 1;
  }
  const Mesh& m = sh.mesh;
  const ParallelismConfig& par = cfg.parallelism;
  sh.groups = mesh_groups(m, sh.gpus_per_node);
  // FSDP shards each parameter over dp_shard x cp: context parallel's ranks hold the same
  // parameters (torchtitan/distributed/parallel_dims.py at its HEAD b5bcd76, the "fsdp" mesh
  // "includes dp_shard and cp"; at 9dec370 the flattened "dp_shard_cp").
  sh.shard_group = sh.groups.fsdp.ranks;
  sh.replicas = m.dp_replicate;
  sh.no_shard = sh.strategy == ShardingStrategy::no_shard || sh.shard_group == 1;
  const int b = cfg.training.micro_batch, GA = cfg.training.grad_accum;
  sh.tokens_per_gpu_step = double(b) * sh.seq_len * GA * m.dp() / sh.world;
  sh.pp_flushes = GA;
  if (m.pp > 1) {  // one pipeline micro-batch per simulated micro-step
    sh.pp_micro = pp_microbatches(par, b);
    sh.micro_batch = par.pp_microbatch;
    sh.grad_accum = GA * sh.pp_micro;
    sh.pp_virtual = pp_stages_per_rank(par);
    sh.pp_schedule = par.pp_schedule;
    sh.rank_blocks = pp_rank_blocks(cfg.model.n_layers, m.pp);
    sh.pp_split_rule = opt.pp_split;
    sh.pp_blocks = pp_rank_block_counts(opt.pp_split, cfg.model.n_layers, m.pp, sh.pp_virtual, sh.pp_schedule);
  }
  sh.tokens = double(sh.micro_batch) * sh.seq_len / m.cp;
  // The rank's units, one TP shard of each (mesh_unit_params: what stays whole), summed.
  const std::vector<int64_t> units = mesh_unit_params(cfg.model, sh);
  sh.rank_params = std::accumulate(units.begin(), units.end(), int64_t{0});
}

void mesh_split_unit_ops(const StepShape& shape, UnitCosts* u) {
  split_ops(u->block_ops, shape.mesh.tp, shape.mesh.cp, true, shape.sequence_parallel);
  if (shape.qk_gathered)  // RoPE on every head of the gathered q and k (runtime term tp_qk_norm)
    for (Op& op : u->block_ops)
      if (std::strcmp(op.name, "rope") == 0) {
        op.bytes *= shape.mesh.tp;
        op.fused_bytes *= shape.mesh.tp;
      }
  if (!shape.sequence_parallel) return;  // basic TP: the embedding and the head whole on every rank
  if (shape.embedding_split) split_ops(u->embed_ops, shape.mesh.tp, 1);
  split_ops(u->head_ops, shape.mesh.tp, 1, shape.loss_parallel);
}

void mesh_comm_groups(const StepShape& shape, CommSetup* c) {
  c->shard_group = shape.groups.fsdp;
  c->replica_group = shape.groups.dp_replicate;
  c->reduce_group = shape.no_shard ? shape.groups.dp_replicate : shape.groups.fsdp;
}

std::vector<int64_t> mesh_unit_params(const ModelSpec& m, const StepShape& shape) {
  const std::vector<int64_t> full = m.fsdp_unit_params();
  const int64_t tp = shape.mesh.tp, ends = shape.sequence_parallel ? tp : 1;  // basic TP: the ends whole
  std::vector<int64_t> units;
  units.push_back(full.front() / (shape.embedding_split ? tp : 1));  // a replicated embedding: whole
  for (int i = 0; i < shape.rank_blocks; ++i) units.push_back(full[1] / tp);
  units.push_back(full.back() / ends);
  return units;
}

namespace {

double op_fwd(const std::vector<Op>& ops, const char* a, const char* b, const ComputeContext& cc) {
  for (const Op& op : ops)
    if (std::strcmp(op.name, a) == 0 || std::strcmp(op.name, b) == 0) return op_forward_time(op, cc);
  return 0;
}

// The embedding's and the head's TP terms (unit i of U): sequence parallel's entry and exit
// collectives, and the head's loss tensors, on vocabulary shards under loss parallel, whole with
// the logits' all-gather without it. Adds the exposed time to *fwd / *bwd and the totals to units.
void end_unit_tp_terms(const TrainConfig& cfg, const StepShape& shape, const CommSetup& comm, const UnitCost& c,
                       const ActivationTerms& act, int i, int U, SimUnit* unit, FsdpUnits* units, double* fwd,
                       double* bwd) {
  SimUnit& u = *unit;
  const Mesh& m = shape.mesh;
  const double tp = m.tp, ts = shape.time_share;
  // Sequence parallel's entry (the embedding's output reduce-scattered) and exit (the final
  // norm's output all-gathered before the column-parallel head), each with its transpose.
  // Basic TP: the ends' tensors whole, no collective. A replicated embedding's output is whole on
  // every rank and the first norm takes its sequence shard locally in forward; its backward
  // all-gathers the shards' gradients for the whole table (Shard(1) -> Replicate).
  const double e = shape.sequence_parallel
                       ? end_unit_tp_comm_s(m, shape.groups, comm.comm, shape.tokens, cfg.model.d_model, shape.param_bytes)
                       : 0.0;
  const bool replicated_entry = i == 0 && !shape.embedding_split;
  *fwd = replicated_entry ? 0.0 : e;
  *bwd = e;
  units->tp_exposed_s += *fwd + *bwd;
  units->tp_busy_s += *fwd + *bwd;
  if (units->unit_mesh_s.size() < size_t(U)) units->unit_mesh_s.resize(size_t(U), {0, 0, 0, 0});
  units->unit_mesh_s[size_t(i)] = {ts * *fwd, ts * *bwd, 0, 0};
  // Basic TP: the head's tensors whole, nothing gathered. Without TP (a cp or pp mesh) neither: no
  // vocabulary shard, no loss_parallel (torchtitan's ParallelDims.loss_parallel_enabled is tp > 1
  // and enable_loss_parallel).
  if (i != U - 1 || !shape.sequence_parallel || tp <= 1) return;
  // The final norm's fp32 extra on the sequence shard; the rest of the head's saved bytes are its
  // ops' (split_ops: the loss's on a vocabulary shard only under loss parallel). And, as for the
  // blocks' column-parallel GEMMs, the head's input is the final norm's output all-gathered to
  // the whole T · d, which the Linear keeps for its weight gradient (torchtitan's
  // ColwiseParallel(input_layouts=Shard(1)) on output; shardcast-train's gather before the head).
  u.saved_bytes = c.saved_bytes + (u.saved_bytes - c.saved_bytes) / tp +
                  shape.param_bytes * shape.tokens * cfg.model.d_model * (1.0 - 1.0 / tp);
  if (shape.loss_parallel) {  // the loss's transients and the output the loop keeps on a vocabulary shard
    if (!act.loss_per_vocab_shard) {  // the chunked loss's are the rank's already (activation_terms.cpp)
      u.fwd_transient_bytes /= tp;
      u.bwd_transient_bytes /= tp;
    }
    u.output_bytes /= tp;
    if (shape.loss_parallel_dtensor) {
      // torch's loss_parallel handlers (torch/distributed/tensor/parallel/loss.py): _log_softmax
      // holds the shifted logits beside its fp32 input and exp or the result; the fused backward
      // (grad_input + exp(x)) * grad_output holds zeros_like, exp (then the sum) and the product
      // beside the saved log-probabilities: one fp32 shard tensor more each way than cross_entropy.
      const double shard = 4.0 * shape.tokens * double(cfg.model.vocab) / tp;  // bytes
      u.fwd_transient_bytes += shard;
      u.bwd_transient_bytes += shard;
    }
    return;
  }
  // Without loss parallel the column-parallel head's vocabulary shard of the logits is
  // all-gathered to every rank (KempnerForge: ColwiseParallel(output_layouts=Replicate())) and the
  // loss runs on the whole logits: its tensors stay whole. Beside them forward holds the rank's
  // shard until the gather returns, backward the slice of the logits' gradient the head's GEMM takes.
  const double shard = shape.param_bytes * shape.tokens * double(cfg.model.vocab) / tp;  // bytes
  u.fwd_transient_bytes += shard;
  u.bwd_transient_bytes += shard;
  const double g = logits_gather_s(m, shape.groups, comm.comm, shape.tokens, double(cfg.model.vocab), shape.param_bytes);
  *fwd += g;
  units->tp_exposed_s += g;
  units->tp_busy_s += g;
  units->unit_mesh_s[size_t(i)][0] += ts * g;
}

}  // namespace

namespace {
// The weight-gradient GEMMs a zero-bubble schedule defers (Qi et al. 2023 §2: W, "the
// computation of the weight gradient"): dW = Xᵀ·dY of each Linear, the FLOPs (2·m·n·k) and so
// the time of its forward GEMM. Attention's and the elementwise ops' backward compute input
// gradients only (until 2026-12-07 this was half of all backward, attention's included).  // s
double weight_gradient_s(const std::vector<Op>& unit_ops, const ComputeContext& cc) {
  double wgrad = 0;
  for (const Op& op : unit_ops)
    if (op.kind == OpKind::matmul) wgrad += op_forward_time(op, cc);
  return wgrad;
}

BlockMeshComm block_collectives(const TrainConfig& cfg, const StepShape& shape, const CommSetup& comm,
                                const UnitCosts& costs, const ComputeContext& cc, const ActivationTerms& act) {
  const Mesh& m = shape.mesh;
  const double tp = m.tp;
  const double qk_width = double(cfg.model.q_dim() + cfg.model.kv_dim());  // q and k (or v) per token
  BlockMeshInputs in;
  in.tokens = shape.tokens;
  in.d_model = cfg.model.d_model;
  in.kv_width = cp_attention_width(cfg.model, int(tp), act.kv_repeated);
  in.act_bytes = shape.param_bytes;
  in.tp_async = cfg.parallelism.tp_async;
  in.overlap_compute_slowdown = cc.eff.overlap_compute_slowdown;
  in.sequence_parallel = shape.sequence_parallel;
  in.column_inputs[0] = shape.column_inputs[0];
  in.column_inputs[1] = shape.column_inputs[1];
  in.cp_rotate = cfg.parallelism.cp_rotate;
  in.qk_gather_bytes = shape.qk_gathered ? shape.param_bytes * shape.tokens * qk_width : 0.0;
  const std::vector<Op>& ops = costs.block_ops;
  in.gemm_fwd_s[0] = op_fwd(ops, "wqkv", "wqkv", cc);
  in.gemm_fwd_s[1] = op_fwd(ops, "wo", "wo", cc);
  in.gemm_fwd_s[2] = op_fwd(ops, "w1_w3", "fc1", cc);
  in.gemm_fwd_s[3] = op_fwd(ops, "w2", "fc2", cc);
  in.attention_fwd_s = op_fwd(ops, "attention", "attention", cc);
  return block_mesh_comm(m, shape.groups, comm.comm, in);
}
}  // namespace

MeshBlockTerms mesh_block_terms(const TrainConfig& cfg, const StepShape& shape, const CommSetup& comm,
                                const UnitCosts& costs, const ComputeContext& cc, const ActivationTerms& act) {
  MeshBlockTerms t;
  t.comm = block_collectives(cfg, shape, comm, costs, cc, act);
  t.wgrad_s = weight_gradient_s(costs.block_ops, cc);
  return t;
}

namespace {

// A block's memory under the mesh: sequence parallel divides its activations over tp, but for
// the gathered inputs of its column GEMMs, the full-width tensors around each collective, ring
// attention's buffers, a gathered q and k, and what basic TP keeps whole.  // bytes
void block_mesh_memory(const TrainConfig& cfg, const StepShape& shape, const ActivationTerms& act, bool ckpt,
                       SimUnit& u) {
  const Mesh& m = shape.mesh;
  const double tp = m.tp;
  // Sequence parallel divides every activation of the block over tp (mesh_terms.h); the memory
  // terms were computed for a whole-width block of T tokens.
  u.saved_bytes /= tp;
  u.fwd_transient_bytes /= tp;
  u.bwd_transient_bytes /= tp;
  // Except the all-gathered inputs of the column-parallel GEMMs (the attention and FFN norms'
  // outputs): the Linear's input is the gathered T · d tensor, which autograd keeps for the
  // weight gradient (torchtitan's PrepareModuleInput with input_layouts Shard(1) and
  // desired_input_layouts Replicate(), one each; a runtime that gathers per projection keeps
  // one per projection; Megatron instead keeps the shard and gathers again).
  const int copies = shape.sequence_parallel ? shape.column_inputs[0] + shape.column_inputs[1] : 2;
  const double gathered = copies * shape.param_bytes * shape.tokens * cfg.model.d_model * (1.0 - 1.0 / tp);  // bytes
  if (ckpt) u.bwd_transient_bytes += gathered;
  else u.saved_bytes += gathered;
  // And the full-width tensors around each collective that are not kept: in forward a row
  // GEMM's partial sums before their reduce-scatter, in backward the all-gathered gradient a
  // row GEMM's backward takes and the column GEMM's input gradient before its reduce-scatter
  // (one of each at a time; a checkpointed block runs its forward again inside backward).
  const double full = shape.param_bytes * shape.tokens * cfg.model.d_model * (1.0 - 1.0 / tp);  // bytes
  u.fwd_transient_bytes += full;
  u.bwd_transient_bytes += (ckpt ? 3.0 : 2.0) * full;
  if (m.cp > 1) {
    // Ring attention's exchanged K and V, fp32 merge and gradient accumulators (mesh_terms.h).
    const CpAttentionMemory cpm = cp_attention_memory(m.cp, cfg.parallelism.cp_rotate, shape.tokens,
                                                      double(cfg.model.q_dim()) / tp,
                                                      cp_attention_width(cfg.model, int(tp), act.kv_repeated),
                                                      shape.param_bytes);
    u.fwd_transient_bytes += cpm.fwd;
    u.bwd_transient_bytes += cpm.bwd;
  }
  const double qk_width = double(cfg.model.q_dim() + cfg.model.kv_dim());  // q and k (or v) per token
  if (shape.qk_gathered) {
    // The gathered q and k and RoPE's fp32 chain on every head (x.float(), the rotated product:
    // A + 8 bytes per element beyond the rank's share), live through the RoPE in forward (not
    // beside the row GEMM's partial sums) and again in backward with the recomputed block.
    const double chain = shape.tokens * qk_width * (shape.param_bytes + 8.0) * (1.0 - 1.0 / tp);  // bytes
    u.fwd_transient_bytes = std::max(u.fwd_transient_bytes, chain);
    u.bwd_transient_bytes += chain;
  }
  if (!shape.sequence_parallel) {
    // Basic TP keeps whole what sequence parallel shards outside attention and the MLP: the two
    // norms' inputs (the residual stream, with their 4-byte statistic) and an eager norm's fp32
    // tensors (Korthikanti et al. 2022 Table 2: the 10·s·b·h of their 10 + 24/t, less dropout's
    // masks, which a Llama block has not; the GEMM inputs are whole above). A checkpointed block
    // keeps its whole input and holds them while its recompute runs.
    const double outside = 2.0 * (shape.tokens * (shape.param_bytes * cfg.model.d_model + 4.0) + act.norm_extra) *
                           (1.0 - 1.0 / tp);  // bytes
    if (ckpt) {
      u.saved_bytes += shape.param_bytes * shape.tokens * cfg.model.d_model * (1.0 - 1.0 / tp);
      u.bwd_transient_bytes += outside;
    } else {
      u.saved_bytes += outside;
    }
  }
}

// A block's exposed TP and CP collectives (fwd, bwd: s, a checkpointed block gathers again) and
// their lanes on the timeline.
void block_mesh_time(const StepShape& shape, const MeshBlockTerms& block, int i, int U, bool ckpt, FsdpUnits* units,
                     double* fwd_out, double* bwd_out) {
  const double ts = shape.time_share;
  double& fwd = *fwd_out;
  double& bwd = *bwd_out;
  const BlockMeshComm& r = block.comm;
  fwd = r.tp_fwd_s + r.cp_fwd_s;
  bwd = r.tp_bwd_s + r.cp_bwd_s + (ckpt ? fwd : 0.0);  // a checkpointed block gathers again
  units->tp_exposed_s += r.tp_fwd_s + r.tp_bwd_s + (ckpt ? r.tp_fwd_s : 0.0);
  units->cp_exposed_s += r.cp_fwd_s + r.cp_bwd_s + (ckpt ? r.cp_fwd_s : 0.0);
  units->tp_busy_s += r.tp_busy_s;
  units->cp_busy_s += r.cp_busy_s;
  if (units->unit_mesh_s.size() < size_t(U)) units->unit_mesh_s.resize(size_t(U), {0, 0, 0, 0});
  units->unit_mesh_s[size_t(i)] = {ts * r.tp_fwd_s, ts * (r.tp_bwd_s + (ckpt ? r.tp_fwd_s : 0.0)), ts * r.cp_fwd_s,
                                   ts * (r.cp_bwd_s + (ckpt ? r.cp_fwd_s : 0.0))};
}

}  // namespace

void mesh_unit_terms(const TrainConfig& cfg, const StepShape& shape, const CommSetup& comm,
                     const UnitCosts& costs, const ComputeContext& cc, const ActivationTerms& act,
                     const MeshBlockTerms& block, int i, int U, bool ckpt, SimUnit* unit, FsdpUnits* units) {
  SimUnit& u = *unit;
  const double ts = shape.time_share;
  const bool is_block = i > 0 && i < U - 1;
  const UnitCost& c = i == 0 ? costs.embed : (i == U - 1 ? costs.head : costs.block);
  double fwd = 0, bwd = 0;  // exposed collectives  // s
  if (is_block) {
    block_mesh_memory(cfg, shape, act, ckpt, u);
    block_mesh_time(shape, block, i, U, ckpt, units, &fwd, &bwd);
  } else {
    end_unit_tp_terms(cfg, shape, comm, c, act, i, U, &u, units, &fwd, &bwd);
  }
  u.fwd_s += ts * fwd;
  u.bwd_s += ts * bwd;
  units->rank_fwd_s += u.fwd_s;
  units->rank_bwd_s += u.bwd_s;
  if (units->unit_wgrad_s.size() < size_t(U)) units->unit_wgrad_s.resize(size_t(U), 0.0);
  // The weight-gradient GEMMs a zero-bubble schedule defers (weight_gradient_s).
  const double wgrad = is_block ? block.wgrad_s : weight_gradient_s(i == 0 ? costs.embed_ops : costs.head_ops, cc);
  units->unit_wgrad_s[size_t(i)] = ts * std::min(wgrad, c.bwd_s);
  units->rank_wgrad_s += units->unit_wgrad_s[size_t(i)];
}

double mesh_inflight_bytes(const StepShape& shape, const SimInput& in) {
  if (shape.mesh.pp <= 1) return 0;
  // The simulator holds one micro-batch's activations at a time; the read-out's pipeline rank
  // (the first for a rank with the embedding or both ends, the last for one with the head, the
  // split's busiest rank of neither end for a middle one) holds this many at its peak
  // (mesh_terms.h pp_inflight_microbatches).
  const int pp = shape.mesh.pp, middle = shape.pp_blocks.middle_rank;
  const int rank = shape.pp_stage == PpStage::last      ? pp - 1
                   : shape.pp_stage == PpStage::neither ? (middle >= 0 ? middle : pp - 1)
                                                        : 0;
  const double n = pp_inflight_microbatches(shape.pp_schedule, pp, shape.pp_virtual, shape.pp_micro, rank);
  // The head and its loss live on the model's last stage, which runs each micro-batch's backward
  // right after its forward (one in flight) under every schedule but GPipe, which runs every
  // forward first: a rank with the head carries its tensors once, not once per micro-batch.
  const bool head = shape.pp_stage == PpStage::both_ends || shape.pp_stage == PpStage::last;
  const size_t units = in.units.size() - (head && shape.pp_schedule != PpSchedule::gpipe ? 1 : 0);
  double saved = 0;  // one micro-batch's activations through those units  // bytes
  for (size_t i = 0; i < units; ++i) saved += in.units[i].saved_bytes;
  return std::max(0.0, n - 1) * saved;
}

namespace {

// The blocks the runtime's split gives the rank a view stands for; 0 = keep the view's.
int pp_view_blocks(const PpRankBlocks& b, PpStage stage) {
  switch (stage) {
    case PpStage::first: return b.first;
    case PpStage::last: return b.last;
    case PpStage::neither: return b.middle;
    case PpStage::both_ends: break;
  }
  return b.both;
}

// k times unit i's share of the simulated rank's totals (its parameters, its time per
// micro-batch: the bubble's, the mesh's exposed time), added (k > 0) or taken away (k < 0).
void count_unit(size_t i, int k, StepShape* shape, FsdpUnits* units) {
  const size_t U = units->in.units.size();
  shape->rank_params += k * units->unit_params[i];
  units->rank_fwd_s += k * units->in.units[i].fwd_s;
  units->rank_bwd_s += k * units->in.units[i].bwd_s;
  if (units->unit_wgrad_s.size() == U) units->rank_wgrad_s += k * units->unit_wgrad_s[i];
  if (units->unit_mesh_s.size() == U) {
    const std::array<double, 4>& m = units->unit_mesh_s[i];
    const double ts = shape->time_share > 0 ? shape->time_share : 1.0;
    units->tp_exposed_s += k * (m[0] + m[1]) / ts;
    units->cp_exposed_s += k * (m[2] + m[3]) / ts;
  }
}

// `delta` blocks more (copies of unit 1) or fewer (delta < 0, one block kept at least) on the
// simulated rank, with their parameters, memory, time and mesh terms.
void add_blocks(int delta, StepShape* shape, FsdpUnits* units) {
  const int U = int(units->in.units.size());
  delta = std::max(delta, 1 - (U - 2));
  if (delta == 0 || U < 3) return;
  count_unit(1, delta, shape, units);
  shape->rank_blocks += delta;
  const size_t n = size_t(std::abs(delta));
  auto resize = [&](auto& v) {
    if (int(v.size()) != U) return;  // a per-unit list this plan does not fill
    const auto x = v[1];
    if (delta > 0) v.insert(v.begin() + 1, n, x);
    else v.erase(v.begin() + 1, v.begin() + 1 + long(n));
  };
  resize(units->in.units);
  resize(units->unit_params);
  resize(units->block_seq_of);
  resize(units->held_gathered_bytes);
  resize(units->unit_mesh_s);
  resize(units->unit_wgrad_s);
}

}  // namespace

bool pipeline_stage_view(PpStage stage, StepShape* shape, FsdpUnits* units) {
  const size_t U = units->in.units.size();
  if (U < 3) return false;
  shape->pp_stage = stage;
  // Each end the rank lacks becomes a block (a block's tensors, collectives and held parameters
  // stand in for it); then the rank takes the blocks the runtime's split gives it
  // (shape->pp_blocks, runtime term pp_split), one or more added or removed.
  auto block_for = [&](size_t end) {
    count_unit(1, 1, shape, units);
    count_unit(end, -1, shape, units);
    shape->rank_blocks += 1;
    units->in.units[end] = units->in.units[1];
    units->unit_params[end] = units->unit_params[1];
    units->block_seq_of[end] = units->block_seq_of[1];
    units->held_gathered_bytes[end] = units->held_gathered_bytes[1];
    if (units->unit_wgrad_s.size() == U) units->unit_wgrad_s[end] = units->unit_wgrad_s[1];
    if (units->unit_mesh_s.size() == U) units->unit_mesh_s[end] = units->unit_mesh_s[1];
  };
  // A checkpointed block stands in for an end: one more checkpointed block (HFU's recompute).
  const bool ckpt = units->checkpointed_blocks > 0;
  const int before = shape->rank_blocks;
  const double params = double(shape->rank_params);
  if (stage == PpStage::first || stage == PpStage::neither) block_for(U - 1);
  if (stage == PpStage::last || stage == PpStage::neither) block_for(0);
  // Then the blocks the runtime's split gives that rank (an uneven split: one more or fewer).
  const int target = pp_view_blocks(shape->pp_blocks, stage);
  if (target > 0) add_blocks(target - shape->rank_blocks, shape, units);
  // The optimizer's shard of temporaries is the rank's (fsdp_units.cpp): the view's parameters.
  if (params > 0) units->in.optimizer_transient_bytes *= double(shape->rank_params) / params;
  if (before > 0) {
    if (ckpt) units->checkpointed_blocks += shape->rank_blocks - before;
    units->sac_recompute_flops *= double(shape->rank_blocks) / before;  // op-SAC's, per block
  }
  return true;
}

PpStage pipeline_slowest_rank(const StepShape& shape, const FsdpUnits& units) {
  const std::vector<SimUnit>& u = units.in.units;
  const size_t U = u.size();
  if (shape.mesh.pp <= 1 || U < 3) return PpStage::both_ends;
  // Work per micro-batch of each rank, from the simulated rank's (both ends): an end a rank lacks
  // is a block more.  // s
  double all = 0;
  for (const SimUnit& x : u) all += x.fwd_s + x.bwd_s;
  const double block = u[1].fwd_s + u[1].bwd_s, embed = u[0].fwd_s + u[0].bwd_s,
               head = u[U - 1].fwd_s + u[U - 1].bwd_s;
  // The split's blocks of each rank against the simulated rank's (0: as the view makes it).
  const PpRankBlocks& pb = shape.pp_blocks;
  const int k = shape.rank_blocks;
  auto more = [&](int target, int view) { return target > 0 ? (target - view) * block : 0.0; };
  const double neither = all - embed - head + 2 * block + more(pb.middle, k + 2);
  if (shape.pp_schedule == PpSchedule::zbv_zero_bubble)
    return neither > all + more(pb.both, k) ? PpStage::neither : PpStage::both_ends;
  PpStage slowest = PpStage::first;
  double most = all - head + block + more(pb.first, k + 1);
  const double last = all - embed + block + more(pb.last, k + 1);
  if (last > most) {
    slowest = PpStage::last;
    most = last;
  }
  if (shape.mesh.pp >= 3 && neither > most) slowest = PpStage::neither;
  return slowest;
}

// The timeline's lanes of the mesh: inside each unit's forward and backward, the part TP's and
// CP's collectives hold the compute stream (at its end), and the pipeline's bubble after the step.
void add_mesh_lanes(const FsdpUnits& units, Prediction* out) {
  Prediction& p = *out;
  if (p.timeline.empty()) return;
  std::vector<TimelineEvent> lanes;
  double end = 0;
  for (const TimelineEvent& e : p.timeline) {
    end = std::max(end, e.start_s + e.duration_s);
    if (e.lane != "compute" || e.unit < 0 || size_t(e.unit) >= units.unit_mesh_s.size()) continue;
    const bool fwd = e.name.rfind("fwd ", 0) == 0, bwd = e.name.rfind("bwd ", 0) == 0;
    if (!fwd && !bwd) continue;
    const std::array<double, 4>& m = units.unit_mesh_s[size_t(e.unit)];
    for (int d = 0; d < 2; ++d) {
      const double t = std::min(e.duration_s, m[size_t(2 * d + (bwd ? 1 : 0))]);
      if (t > 0) lanes.push_back({std::string(d ? "cp " : "tp ") + e.name, d ? "cp" : "tp", e.start_s + e.duration_s - t, t, e.unit});
    }
  }
  if (p.pp_bubble_s + p.pp_send_s > 0)
    lanes.push_back({"pipeline bubble and sends", "pp", end, p.pp_bubble_s + p.pp_send_s, -1});
  p.timeline.insert(p.timeline.end(), lanes.begin(), lanes.end());
}

namespace {

// The pipeline's bubble and stage-to-stage sends, added to the step, and what the plan says of
// the stages (which rank is timed, whose memory is read, a bubble of fewer micro-batches than
// stages).
void read_pipeline_time(const TrainConfig& cfg, const StepShape& shape, const CommSetup& comm, const FsdpUnits& units,
                        Prediction& p) {
  const Mesh& m = shape.mesh;
  const MeshGroups& g = shape.groups;
  const int micro_steps = shape.grad_accum;
  const int v = shape.pp_virtual;
  p.pp_bubble_s = pp_bubble_s(shape.pp_schedule, m.pp, v, shape.pp_flushes, units.rank_fwd_s, units.rank_bwd_s,
                              units.rank_wgrad_s);
  // Each micro-batch crosses each of the rank's v stage boundaries forward (activations) and
  // backward (their gradients): T · d of the sequence-parallel shard, to the neighbouring stage
  // dp · tp · cp ranks away, on a NIC rail when that is another node.
  const CommContext& c = comm.comm;
  const double bytes = shape.param_bytes * shape.tokens * cfg.model.d_model / (shape.sequence_parallel ? m.tp : 1);
  const double bw = g.pp_crosses_nodes ? c.inter_node_bandwidth * c.eff.inter_node_bw_eff / std::max(1, c.gpus_per_node)
                                       : c.intra_node_bandwidth * c.eff.intra_node_bw_eff;
  const double lat = g.pp_crosses_nodes ? c.inter_node_latency : c.intra_node_latency;
  p.pp_send_s = micro_steps * 2.0 * v * (bytes / bw + lat);
  auto blocks = [](int n) { return fmt::format("{} block{}", n, n == 1 ? "" : "s"); };
  const std::string flush = fmt::format("{} micro-batch{} of {}", shape.pp_micro, shape.pp_micro == 1 ? "" : "es",
                                        shape.micro_batch);  // micro_batch: one pipeline micro-batch's sequences
  // The timed rank (read_pipeline: the slowest) and the two whose memory is read, with the
  // blocks the runtime's split gives them.
  const PpRankBlocks& pb = shape.pp_blocks;
  const std::string n = blocks(shape.rank_blocks);
  const std::string timed = shape.pp_stage == PpStage::first  ? "the first rank (the embedding and " + n + ")"
                            : shape.pp_stage == PpStage::last ? "the last rank (" + n + " and the head)"
                            : shape.pp_stage == PpStage::neither
                                ? "a rank of neither end (" + n + ")"
                                : "the rank with both ends (the embedding, " + n + " and the head)";
  if (shape.pp_schedule == PpSchedule::zbv_zero_bubble)
    p.mesh_notes.push_back(fmt::format(
        "pp {} x {} stages per rank in a V, {} per flush: the step is timed on its slowest rank, {}; memory is "
        "the first rank's (the embedding, {} and the head, with the micro-batches in flight) or the busiest "
        "middle rank's (rank {}: {}, neither end), the larger",
        m.pp, v, flush, timed, blocks(pb.both), pb.middle_rank, blocks(pb.middle)));
  else
    p.mesh_notes.push_back(fmt::format(
        "pp {} x {} stage(s) per rank, {} per flush (the runtime's split, pp_split = {}): the step is timed on "
        "its slowest rank, {}; memory is the largest of the first stage's (the embedding, {}, the micro-batches "
        "in flight), the last's ({} and the head){}",
        m.pp, v, flush, to_string(shape.pp_split_rule), timed, blocks(pb.first), blocks(pb.last),
        pb.middle_rank >= 0 ? fmt::format(" and the busiest middle rank's (rank {}: {})", pb.middle_rank,
                                          blocks(pb.middle))
                            : std::string()));
  p.step_time_s += p.pp_bubble_s + p.pp_send_s;
  if (!p.op_seconds.empty()) p.op_seconds[size_t(OpCategory::other)] += p.pp_bubble_s + p.pp_send_s;
  // Fewer micro-batches than stages: most of each flush is the bubble (say so, and how much).
  if (shape.pp_micro < m.pp)
    p.mesh_notes.push_back(fmt::format(
        "{} pipeline micro-batch{} for pp {}: the bubble is {:.0f} % of the step (more micro-batches, "
        "micro_batch / pp_microbatch >= pp, shrink it)",
        shape.pp_micro, shape.pp_micro == 1 ? "" : "es", m.pp, 100.0 * p.pp_bubble_s / p.step_time_s));
}

}  // namespace

void mesh_read_time(const TrainConfig& cfg, const HardwareSpec& hw, const StepShape& shape, const CommSetup& comm,
                    const FsdpUnits& units, Prediction* out) {
  Prediction& p = *out;
  const Mesh& m = shape.mesh;
  const MeshGroups& g = shape.groups;
  p.mesh = mesh_label(m);
  p.dp_replicate = m.dp_replicate;
  p.dp_shard = m.dp_shard;
  p.tp = m.tp;
  p.cp = m.cp;
  p.pp = m.pp;
  p.pp_virtual_stages = m.pp > 1 ? shape.pp_virtual : 1;
  const ParallelismConfig& par = cfg.parallelism;
  p.tp_async = m.tp > 1 && par.tp_async;
  p.pp_schedule = m.pp > 1 ? to_string(par.pp_schedule) : "";
  p.pp_microbatch = m.pp > 1 ? par.pp_microbatch : 1;
  p.cp_rotate = m.cp > 1 ? to_string(par.cp_rotate) : "";
  const int micro_steps = shape.grad_accum;
  p.tp_exposed_s = units.tp_exposed_s * micro_steps;
  p.cp_exposed_s = units.cp_exposed_s * micro_steps;
  if (g.tp_crosses_nodes)
    p.mesh_notes.push_back(
        m.tp > shape.gpus_per_node
            ? fmt::format("tp {} is more than the {} GPUs of a node: its collectives cross the nodes' NICs", m.tp,
                          shape.gpus_per_node)
            : fmt::format("tp {} does not divide the {} GPUs of a node: some TP groups span two nodes, and their "
                          "collectives cross the nodes' NICs",
                          m.tp, shape.gpus_per_node));
  if (m.pp > 1) read_pipeline_time(cfg, shape, comm, units, p);
  // Throughput per GPU: the step's global tokens over every rank of the mesh.
  const ModelSpec& md = cfg.model;
  const int s = shape.seq_len;
  p.tokens_per_s_per_gpu = shape.tokens_per_gpu_step / p.step_time_s;
  const double rated_peak = hw.peak_flops(cfg.precision.param_dtype);
  p.mfu = p.tokens_per_s_per_gpu * p.flops_per_token / rated_peak;
  const double recompute_fraction = shape.rank_blocks > 0 ? double(units.checkpointed_blocks) / shape.rank_blocks : 0;
  p.hfu = (p.tokens_per_s_per_gpu * md.hardware_flops_per_token(s, recompute_fraction) +
           units.sac_recompute_flops * micro_steps / p.step_time_s) /
          rated_peak;
}

}  // namespace shardcast::planner
