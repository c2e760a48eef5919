// The FSDP units of one step: each unit's compute, memory and collectives as the simulator
// takes them (simulator.h SimInput), and the optimizer step. Stages of plan() (plan_stages.h).
#include <algorithm>
#include <array>
#include <string>

#include "planner/model/comm_model.h"
#include "planner/model/fsdp_copies.h"
#include "planner/model/optimizer_step.h"
#include "planner/model/plan_stages.h"

namespace shardcast::planner {

namespace {

// A unit's collectives, their buffers and FSDP2's copies around them.
struct UnitCollectiveInputs {
  bool no_shard = false, fp8_gather = false, caching_allocator = false, fsdp2_copies = false;
  double unsynced_bytes = 0;  // bytes per element of a kept unsynced gradient sum
  double copy_bw = 0;         // B/s
};

// A unit's buffers: its working copy (gathered_bytes), unsharded and sharded gradients and
// the reduction's buffers.  // bytes
void unit_buffers(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape, const UnitCollectiveInputs& ci,
                  const SimInput& in, bool is_block, double P, SimUnit& u) {
  const ModelSpec& m = cfg.model;
  const int Ns = shape.shard_group, GA = shape.grad_accum;
  const int param_bytes = shape.param_bytes, reduce_bytes = shape.reduce_bytes;
  // fp8 all-gather: a block's Linear weights (all but its norm vectors) at 1 byte.
  const double norm_params = is_block ? double(m.block_norm_params()) : 0.0;
  u.gathered_bytes = ci.fp8_gather && is_block ? (P - norm_params) * 1.0 + norm_params * param_bytes
                                               : P * param_bytes;
  // Unsharded fp32 parameters computed in fp32 (no_shard, no mixed precision): the unit's
  // "gathered" parameters are the fp32 master itself, no copy (FSDP's NO_SHARD uses the flat
  // parameter directly; shardcast-train aliases it, trainer/fsdp/fsdp.cpp issue_gather).
  if (ci.no_shard && param_bytes == 4) u.gathered_bytes = 0;
  // ZeRO stages 1 and 2: the whole 16-bit parameters are DeepSpeed's flat buffer, static over the
  // step (zero_memory.h zero_bit16_parameters), not a working copy per unit.
  if (shape.zero_whole_params) u.gathered_bytes = 0;
  u.grad_bytes = P * (!in.sync_every_micro_step && GA > 1 ? ci.unsynced_bytes : param_bytes);
  // Sharded fp32 gradient (the param's dtype; FSDP casts the reduced gradient back).
  if (opt.grads_freed_between_steps) u.shard_grad_bytes = shape.master_bytes * P / shape.state_group;
  u.reduce_buffer_bytes = reduce_bytes != param_bytes || opt.reduce_copies_gradient ? P * reduce_bytes : 0;
  // The reduce-scatter's own output buffer (runtime term reduce_output = "buffer").
  if (opt.reduce_output_buffer) u.reduce_buffer_bytes += P * reduce_bytes / (ci.no_shard ? 1 : Ns);
}

// A unit's collectives: the all-gather of its working copy, its gradient's reduction (and the
// replicas' all-reduce), and whether it is gathered again in backward (reshards).
void unit_collective_times(const StepShape& shape, const CommSetup& cs, const UnitCollectiveInputs& ci, double P,
                           bool reshards, SimUnit& u) {
  const int W = shape.world, Ns = shape.shard_group, R = shape.replicas;
  const int param_bytes = shape.param_bytes, reduce_bytes = shape.reduce_bytes;
  const CommContext& comm = cs.comm;
  if (!ci.no_shard) {
    u.all_gather_s = collective_time(Collective::all_gather, u.gathered_bytes, cs.shard_group, comm);
    u.reduce_s = collective_time(Collective::reduce_scatter, P * reduce_bytes, cs.shard_group, comm);
    if (R > 1)
      u.replica_all_reduce_s =
          collective_time(Collective::all_reduce, P * reduce_bytes / Ns, cs.replica_group, comm);
    u.reshard_after_forward = reshards;
  } else {
    u.reduce_s = collective_time(Collective::all_reduce, P * reduce_bytes, cs.reduce_group, comm);
    u.reshard_after_forward = false;
  }
  // On a GPU a world of one still reduces when the reduction has buffers: the gradient is cast
  // into reduce_dtype and the reduce-scatter over a group of one is a device copy into its
  // output (NCCL on one rank; shardcast-train's SelfCollectives), on the reduce stream: device
  // memory traffic, read and written once each (docs/cost-model.md §5.4). shardcast-train's CPU
  // path takes a group of one as the identity (trainer/fsdp/fsdp.cpp post_backward: out = red).
  // Where FSDP2's copies are charged (add_fsdp2_copies), the cast is their reduce-scatter copy-in.
  if (W == 1 && ci.caching_allocator && shape.strategy != ShardingStrategy::no_shard && u.reduce_buffer_bytes > 0) {
    const double cast = reduce_bytes != param_bytes && !ci.fsdp2_copies ? P * (param_bytes + reduce_bytes) : 0.0;
    u.reduce_s = shape.time_share * (cast + 2.0 * P * reduce_bytes) / ci.copy_bw;
  }
}

// FSDP2's copy-in and copy-out around each collective (fsdp_copies.h), charged where a
// measured kernel table times the plan (the fitted fractions carry them), at the table's copy
// rate. They are memory-bound kernels that take the SMs compute would run on, so they are in
// series with compute whichever stream issues them (the stack probes' kernel times add up to
// their wall time: no two kernels ran at once; docs/validation.md). A unit that reshards
// after forward gathers again in backward, in a group of one as well. A group of one's
// reduction (unit_collective_times) keeps only its device copy on the reduce stream, where the
// timeline takes its buffers' lifetimes.
void add_fsdp2_copies(const StepShape& shape, const UnitCollectiveInputs& ci, const SimInput& in, double P,
                      bool reshards, double gathers_per_micro_step, SimUnit& u) {
  const int Ns = shape.shard_group, GA = shape.grad_accum;
  const int param_bytes = shape.param_bytes, reduce_bytes = shape.reduce_bytes;
  const FsdpCopyBytes cp = per_parameter_copy_bytes(P, u.gathered_bytes, Ns, param_bytes, reduce_bytes);
  const double gather = (cp.gather_compute + cp.gather_stream) * gathers_per_micro_step;  // bytes
  // The reduce side per micro-step: a copy-in and copy-out on each when every micro-step
  // reduces; where only the last does, the step's unsharded gradient sum and its one
  // reduction (fsdp_copies.h), spread over the micro-steps the simulator runs alike.
  const double reduce = !in.sync_every_micro_step && GA > 1
                            ? unsynced_step_reduce_bytes(P, GA, Ns, param_bytes, reduce_bytes, int(ci.unsynced_bytes)) / GA
                            : cp.reduce_compute + cp.reduce_stream;  // bytes
  const double fwd_copy = gather / ci.copy_bw;                                 // s
  const double bwd_copy = ((reshards ? gather : 0.0) + reduce) / ci.copy_bw;  // s
  u.fwd_s += shape.time_share * fwd_copy;
  u.bwd_s += shape.time_share * bwd_copy;
  u.copy_s = fwd_copy + bwd_copy;
}

// Unit i of U (P parameters): its buffers, collectives and FSDP2's copies around them. Returns
// the unsharded bytes a pipeline stage keeps gathered for the whole step (below); 0 without pp.
double unit_collectives(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape, const CommSetup& cs,
                        const UnitCollectiveInputs& ci, const SimInput& in, int i, int U, double P, SimUnit* unit) {
  const bool is_block = i > 0 && i < U - 1;
  // A pipeline stage: torch.distributed.pipelining runs every backward but the step's last with
  // set_reshard_after_backward(False) (stage.py backward_maybe_with_nosync), so each unit stays
  // gathered after its backward; a stage that does not reshard after forward either (runtime term
  // pp_reshard_after_forward = false, torchtitan) gathers it once a step, one that does
  // (KempnerForge) again in each micro-batch's backward, the next forward using that copy.
  const bool pipelined = shape.mesh.pp > 1;
  // A unit gathered again in backward: not under shard_grad_op, nor the last unit (backward
  // starts with it: FSDP1 root, FSDP2 last module), nor the embedding of a root unit (kept
  // gathered likewise), nor on a pipeline stage (above).
  const bool reshards =
      !pipelined && shape.strategy != ShardingStrategy::shard_grad_op && i != U - 1 && !(i == 0 && opt.root_unit);
  const double gathers_per_micro_step = pipelined && !opt.pp_reshard_after_forward ? 1.0 / shape.grad_accum : 1.0;
  SimUnit& u = *unit;
  unit_buffers(cfg, opt, shape, ci, in, is_block, P, u);
  unit_collective_times(shape, cs, ci, P, reshards, u);
  if (ci.fsdp2_copies) add_fsdp2_copies(shape, ci, in, P, reshards, gathers_per_micro_step, u);
  if (!pipelined || u.all_gather_s <= 0) return 0.0;
  // Once a step: its time spread over the micro-steps the simulator runs alike. Its bytes are
  // held beside the timeline (read_memory): at the end of each backward the stage holds every unit
  // gathered, with the in-flight micro-batches' activations.
  u.all_gather_s *= gathers_per_micro_step;
  const double held = u.gathered_bytes;
  u.gathered_bytes = 0;
  return held;
}

// The simulator's step-wide inputs: micro-steps, when gradients are reduced, host time,
// what the loop keeps and what is recorded. `device_timed`: a measured kernel table times the
// plan; `caching_allocator`: the device runs PyTorch's caching allocator.
SimInput step_sim_input(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape,
                        const EfficiencyParams& eff, bool device_timed, bool caching_allocator) {
  SimInput in;
  in.grad_accum = shape.grad_accum;
  // no_shard as well: a runtime that syncs every micro-step all-reduces every micro-step
  // (DDP without no_sync(); shardcast-train's post_backward), one that does not, once.
  // A pipeline stage never does: torch.distributed.pipelining runs every backward but the last
  // of a step with set_requires_gradient_sync(False) and set_reshard_after_backward(False) on an
  // FSDP2 stage (stage.py backward_maybe_with_nosync), whatever the runtime's own loop does
  // without pp; every runtime whose mesh lists pp (torchtitan, KempnerForge) pipelines with it.
  in.sync_every_micro_step = opt.sync_every_micro_step && shape.mesh.pp <= 1;
  in.all_reduce_grads = shape.no_shard;
  in.max_inflight_all_gathers = std::max(1, cfg.parallelism.max_inflight_all_gathers);
  in.overlap_compute_slowdown = eff.overlap_compute_slowdown;
  // Host time. With the fitted fractions it is in series, as it was fitted: unit_overhead_s per
  // unit and pass, step_overhead_s per step (host work competes for the cores too). A plan a
  // measured kernel table times is the device's work alone, and the host, issuing ahead of the
  // device, shows only where its own time for the step is longer: the step is the longer of the
  // two (docs/cost-model.md §2.2).
  in.step_overhead_s = device_timed ? 0.0 : shape.time_share * eff.step_overhead_s;
  in.outputs_kept = opt.outputs_kept;
  in.loss_in_model = opt.loss_in_model;
  in.record_timeline = opt.timeline;
  // Its reserved memory is replayed from the step's allocation sequence (allocation_trace.h).
  // CPU runs use a counting allocator.
  in.record_allocations = caching_allocator;
  return in;
}

// What every unit's collectives share (unit_collectives).
UnitCollectiveInputs collective_inputs(const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                                       const ComputeContext& cc, bool device_timed, bool caching_allocator) {
  UnitCollectiveInputs ci;
  ci.no_shard = shape.no_shard;
  ci.fp8_gather = cc.fp8_weights_precast;
  ci.caching_allocator = caching_allocator;
  // FSDP2's copies charged as device work (unit_collectives): where a measured kernel table
  // times the plan.
  ci.fsdp2_copies = device_timed && opt.per_parameter_copies && shape.strategy != ShardingStrategy::no_shard &&
                    !shape.zero_whole_params;
  // Autograd's unsharded gradient (param_dtype); without sync on every micro-step each unit
  // keeps its sum from the first micro-step to the last one's reduction, in the runtime's
  // dtype for it (docs/cost-model.md §3).
  // FSDP2 keeps a gradient it does not reduce in its reduce dtype (_fsdp_param.py
  // to_accumulated_grad_if_needed): a pipeline stage's sum is in that.
  ci.unsynced_bytes = opt.unsynced_gradient_dtype == UnsyncedGradDtype::fp32 ? 4.0
                      : opt.unsynced_gradient_dtype == UnsyncedGradDtype::reduce_dtype || shape.mesh.pp > 1
                          ? shape.reduce_bytes
                          : shape.param_bytes;
  // Device memory traffic runs at this rate: the preset's, or the measured table's copy rate.  // B/s
  ci.copy_bw = hw.gpu.hbm_bandwidth * cc.eff.hbm_eff;
  return ci;
}

// Unit i's compute (its forward and backward with recompute and host time) and its memory:
// a block's from its checkpointing policy (block_unit_memory; *policy its tensor sequence, or
// -1), the embedding's and head's from their costs, the head's with the loss and the output.
void unit_compute_memory(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape,
                         const ActivationTerms& act, const UnitCost& c, int i, int U, double P, double unit_host_s,
                         bool ckpt, bool op_sac, std::array<BlockTensorSequence, 3>* block_seq, int* policy,
                         SimUnit* unit) {
  SimUnit& u = *unit;
  const double time_share = shape.time_share;
  const bool is_block = i > 0 && i < U - 1;
  u.name = i == 0 ? "embedding" : (i == U - 1 ? "head" : "block " + std::to_string(i - 1));
  u.fwd_s = time_share * (c.fwd_s + unit_host_s);
  u.bwd_s = time_share * (c.bwd_s + (ckpt ? act.ckpt_recompute_s : 0) + (op_sac ? act.sac.time_s : 0) + unit_host_s);
  *policy = -1;
  if (is_block) {
    // (With a mesh, the whole-width block's memory, divided over tp in mesh_unit_terms.)
    *policy = block_unit_memory(cfg, opt, shape, act, shape.one_d() ? P : P * shape.mesh.tp, ckpt, op_sac, block_seq, &u);
  } else {
    u.saved_bytes = c.saved_bytes;
    // The trainer's final eager RMSNorm keeps x² and x·rsqrt(·) besides its output, the fused
    // one nothing (activation_terms.cpp).
    if (act.trainer_block && i == U - 1)
      u.saved_bytes += shape.tokens * 4.0 * trainer_final_norm_extra_d(opt.rmsnorm) * cfg.model.d_model;
    else if (i == U - 1) u.saved_bytes += act.norm_extra;
  }
  if (i == U - 1) {
    u.fwd_transient_bytes = act.loss.fwd_transient;
    u.bwd_transient_bytes = act.loss.bwd_transient;
    u.output_bytes = act.output_bytes;
  }
}

}  // namespace

FsdpUnits fsdp_units(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                     const EfficiencyParams& eff, const ComputeContext& cc, const UnitCosts& costs,
                     const ActivationTerms& act, const CommSetup& comm) {
  const ModelSpec& m = cfg.model;
  FsdpUnits out;
  // Units: [embedding, blocks..., head].
  const std::vector<int64_t> unit_params = shape.one_d() ? m.fsdp_unit_params() : mesh_unit_params(m, shape);
  const int U = int(unit_params.size());
  const bool device_timed = cc.kernels != nullptr;
  const double unit_host_s = device_timed ? 0.0 : eff.unit_overhead_s;
  // GPUs run PyTorch's caching allocator.
  const bool caching_allocator = hw.gpu.bf16_flops > 0 || hw.gpu.fp16_flops > 0;
  SimInput in = step_sim_input(cfg, opt, shape, eff, device_timed, caching_allocator);
  in.units.resize(U);
  const UnitCollectiveInputs collectives = collective_inputs(hw, opt, shape, cc, device_timed, caching_allocator);
  const AcMode ac = cfg.activation_checkpointing.mode;
  int checkpointed_blocks = 0;
  double sac_recompute_flops = 0;  // op-SAC GEMMs recomputed per micro-step  // FLOP
  std::array<BlockTensorSequence, 3> block_seq;  // by BlockAc
  std::vector<int> block_seq_of(size_t(U), -1);
  const MeshBlockTerms mesh_block = shape.one_d() ? MeshBlockTerms{} : mesh_block_terms(cfg, shape, comm, costs, cc, act);
  for (int i = 0; i < U; ++i) {
    SimUnit& u = in.units[i];
    const double P = double(unit_params[i]);
    const UnitCost& c = i == 0 ? costs.embed : (i == U - 1 ? costs.head : costs.block);
    const bool is_block = i > 0 && i < U - 1;
    const bool ckpt = is_block && (ac == AcMode::full ||
                                   (ac == AcMode::selective && cfg.activation_checkpointing.block_checkpointed(i - 1)));
    const bool op_sac = is_block && ac == AcMode::selective_op;
    checkpointed_blocks += ckpt;
    sac_recompute_flops += op_sac ? act.sac.flops : 0;
    unit_compute_memory(cfg, opt, shape, act, c, i, U, P, unit_host_s, ckpt, op_sac, &block_seq, &block_seq_of[size_t(i)], &u);
    if (!shape.one_d()) mesh_unit_terms(cfg, shape, comm, costs, cc, act, mesh_block, i, U, ckpt, &u, &out);
    out.held_gathered_bytes.push_back(unit_collectives(cfg, opt, shape, comm, collectives, in, i, U, P, &u));
  }
  // ZeRO stages 1 and 2: each rank steps its 1/W of the fp32 master, then one
  // all_gather_into_tensor per parameter group refills the whole 16-bit parameters, in series
  // after the step (stage_1_and_2.py step -> runtime/utils.py all_gather_dp_groups @38327e07f;
  // docs/cost-model.md §10.1).
  if (shape.zero_whole_params && shape.state_group > 1)
    in.post_step_all_gather_s = collective_time(Collective::all_gather, double(m.total_params()) * shape.param_bytes,
                                                comm.reduce_group, comm.comm);
  out.in = std::move(in);
  out.unit_params = unit_params;
  out.block_seq = std::move(block_seq);
  out.block_seq_of = std::move(block_seq_of);
  out.device_timed = device_timed;
  out.caching_allocator = caching_allocator;
  out.unit_host_s = unit_host_s;
  out.checkpointed_blocks = checkpointed_blocks;
  out.sac_recompute_flops = sac_recompute_flops;
  return out;
}

void add_optimizer_step(const TrainConfig& cfg, const RuntimeLoop& opt, const StepShape& shape,
                        const HardwareSpec& hw, const ComputeContext& cc, bool device_timed, SimInput* sim_in) {
  const ModelSpec& m = cfg.model;
  const int master_bytes = shape.master_bytes;
  const double time_share = shape.time_share;
  // Device memory traffic runs at this rate: the preset's, or the measured table's copy rate.  // B/s
  const double copy_bw = hw.gpu.hbm_bandwidth * cc.eff.hbm_eff;
  SimInput& in = *sim_in;
  const double shard_elems = double(shape.one_d() ? m.total_params() : shape.rank_params) / shape.state_group;
  // Clipping and the AdamW update over the local shard as the runtime runs them
  // (optimizer_step.h): its accesses per element at the copy bandwidth, the moments' at their
  // bytes (optimizer.state_dtype), the others' at master_bytes; where a measured kernel table
  // times this runtime, the step is clip_grad_norm_ then the fused AdamW and the moments are in
  // the master dtype (the tables time no other), the table's measured step of that dtype at the
  // shard's mean tensor size (one tensor per parameter under FSDP2, one flat parameter per unit
  // under FSDP1) instead.
  in.optimizer_s = time_share *
                   optimizer_bytes_per_element(opt.adamw_update, opt.grad_clip, master_bytes, shape.moment_bytes) *
                   shard_elems / copy_bw;
  if (device_timed && opt.adamw_update == AdamwUpdate::fused && opt.grad_clip == GradClip::norm_and_scale &&
      shape.moment_bytes == master_bytes) {
    const double tensors = opt.per_parameter_copies ? double(m.parameter_tensors()) : double(m.n_fsdp_units());
    if (const double t = cc.kernels->adamw_fused_clip_seconds(cfg.precision.master_dtype, shard_elems, tensors); t > 0)
      in.optimizer_s = time_share * t;
  }
  // Memory: one shard of temporaries for torch.optim's AdamW whatever its implementation, none
  // for an optimizer whose state is made with the model (shardcast-train's one fused pass). The
  // fused update itself allocates none; torchtitan's fused and foreach runs of PR #355 peak at
  // the same reserved bytes, so the peak is elsewhere, and without this shard the model is 8-13 %
  // under on torchtitan's fused 8B runs (docs/validation.md "The optimizer step as each runtime
  // runs it"): a stand-in for what the backward peak misses there, kept until that is found.
  in.optimizer_transient_bytes = opt.adamw_state_at_init ? 0.0 : master_bytes * shard_elems;

}

}  // namespace shardcast::planner
