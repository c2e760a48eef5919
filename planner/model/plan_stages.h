// The stages of plan() (plan.h) and the typed results they hand each other.
//
// What it is: plan() reads as its steps — the step's shape, the compute context, each unit's ops
// timed, the activation and transient bytes, the FSDP units with their collectives and the
// optimizer step, the simulated step, then memory and time read off it. Each stage is a function
// here that takes only what it uses and returns one of the structs below; plan.cpp,
// activation_terms.cpp and fsdp_units.cpp define them.
// What it is not: a public interface. Callers use plan() (or evidence/predict.h); tests of a
// term test the term's own header (ops.h, ac_policy.h, memory_model.h, ...). Every struct is a
// plain value made once per plan() call on the caller's thread: no sharing, no locking.
#pragma once

#include <array>
#include <vector>

#include "planner/model/ac_policy.h"
#include "planner/model/allocator/block_tensor_sequence.h"
#include "planner/model/comm_model.h"
#include "planner/model/efficiency.h"
#include "planner/model/mesh_terms.h"
#include "planner/model/ops.h"
#include "planner/model/plan_options.h"
#include "planner/model/power_limit.h"
#include "planner/model/simulator.h"
#include "shared/hardware_spec.h"
#include "shared/prediction.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// Which pipeline rank the memory read-out is of (pp > 1), by the ends of the model it holds: the
// simulated rank of the step's time holds both ends, the embedding and the head (and so does
// ZBVZeroBubble's first rank, whose V puts the first and the last stage on it); the first rank of
// the other schedules holds the embedding and the most micro-batches in flight, their last rank
// the head and its loss; a rank of neither end is the split's busiest middle rank
// (StepShape::pp_blocks), under ZBVZeroBubble any rank but its first (pipeline_stage_view).
enum class PpStage { both_ends, first, last, neither };

// The step's shape on one rank: world, groups, tokens and the bytes of each dtype.
struct StepShape {
  int world = 1;               // ranks (W)
  int gpus_per_node = 1;       // the cluster's (gpn)
  int shard_group = 1;         // ranks a unit is sharded over (Ns)
  int replicas = 1;            // shard groups (R = W / Ns)
  int micro_batch = 1;         // sequences per rank per micro-step (b)
  int seq_len = 1;             // tokens per sequence (s)
  int grad_accum = 1;          // micro-steps per optimizer step (GA)
  double tokens = 0;           // b · s per rank per micro-step (T)
  // More ranks per node than the profile has devices (CPU profiles: devices = cores): ranks
  // time-share them, so each rank's compute takes this factor longer (>= 1).
  double time_share = 1;
  ShardingStrategy strategy = ShardingStrategy::full_shard;
  bool no_shard = false;       // no_shard, or a shard group of one: gradients all-reduced
  // Ranks the fp32 master, its gradient and the AdamW moments are partitioned over: the shard
  // group (1 under no_shard); every data-parallel rank under shard_optimizer (ZeRO stage 1,
  // whose parameters are whole: shard_group 1, no_shard true).
  int state_group = 1;
  int param_bytes = 2;         // precision.param_dtype  // bytes per element
  int reduce_bytes = 4;        // precision.reduce_dtype  // bytes per element
  int master_bytes = 4;        // precision.master_dtype: shards and their gradients
  int moment_bytes = 4;        // each AdamW moment: master_bytes, or 2 under optimizer.state_dtype bf16
  // DeepSpeed ZeRO stage 1 or 2 (shard_optimizer or shard_grad_op under a ZeRO runtime): the whole
  // 16-bit model on every rank in one flat buffer (no unit gathers it), every reduction over all
  // W ranks (shard_group 1, replicas W), the master, its gradients and AdamW's moments partitioned
  // over W, and the updated parameters all-gathered after the step (docs/cost-model.md §10.1).
  bool zero_whole_params = false;
  // The device mesh (shared/train_config.h; mesh_stage.cpp). In 1-D (tp = cp = pp = 1) nothing below
  // differs from the fields above. With a mesh, the fields above are one rank's: shard_group =
  // dp_shard, replicas = dp_replicate, tokens = b · s / cp, and with pp > 1 micro_batch is one
  // pipeline micro-batch and grad_accum counts pipeline micro-batches.
  Mesh mesh;
  MeshGroups groups;
  int pp_micro = 1;              // pipeline micro-batches per micro-step
  int pp_virtual = 1;            // stages per pp rank (v)
  PpSchedule pp_schedule = PpSchedule::one_f_one_b;
  int pp_flushes = 1;            // pipeline flushes per optimizer step (the config's grad_accum)
  int rank_blocks = 0;           // blocks on the simulated rank (n_layers without pp)
  PpRankBlocks pp_blocks;        // with pp > 1: the blocks of the ranks read, by the runtime's split
  PpSplit pp_split_rule = PpSplit::effective_layers;
  PpStage pp_stage = PpStage::both_ends;  // the stage a memory read-out is of (pp > 1)
  double tokens_per_gpu_step = 0;  // the step's global tokens / world size
  int64_t rank_params = 0;       // parameters of the simulated rank's units, one TP shard of each
  bool loss_parallel = true;     // with tp > 1: the loss on vocabulary shards (RuntimeMesh)
  bool loss_parallel_dtensor = true;  // ... by torch's DTensor handlers (RuntimeMesh)
  // With tp > 1: sequence parallel (RuntimeMesh); false: basic TP, only the blocks' Linears split.
  bool sequence_parallel = true;
  // With tp > 1: the token embedding split over tp (RuntimeMesh; basic TP never splits it).
  bool embedding_split = true;
  // With tp > 1: how many times a block redistributes the attention's and the FFN's input before
  // their column-parallel projections (RuntimeMesh: 1 each, or one per projection).
  int column_inputs[2] = {1, 1};
  // With tp > 1 and model.qk_norm: q and k gathered after their norms (RuntimeMesh qk_norm_gathered).
  bool qk_gathered = false;
  bool one_d() const { return mesh.one_d(); }
};

// The efficiency parameters of the preset as the runtime runs them (host time hidden or not).
EfficiencyParams runtime_efficiency(const HardwareSpec& hw, const RuntimeLoop& opt);
// Throws ConfigError for nodes that cannot talk or a dtype the config names wrongly.
StepShape step_shape(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt);

// How each op is timed on this hardware for this runtime: rates, kernels, the power limit.
struct ComputeSetup {
  ComputeContext cc;
  PowerLimit power;
  double rated_peak = 0;  // the param dtype's datasheet peak, MFU's denominator  // FLOP/s
};
// Throws ConfigError where the runtime's attention kernel has no rate on this preset.
ComputeSetup compute_setup(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt,
                           const EfficiencyParams& eff, const StepShape& shape);

// Each unit kind's forward ops and their cost (ops.h): the embedding, one block, the head.
struct UnitCosts {
  std::vector<Op> embed_ops, block_ops, head_ops;
  UnitCost embed, block, head;
};
UnitCosts unit_costs(const ModelSpec& m, const RuntimeKernels& opt, const StepShape& shape, const ComputeContext& cc);

// Activation and transient bytes of one micro-step (activation_terms.cpp): what each block
// keeps under each checkpointing policy, what its forward and backward hold besides, the loss
// and the model's output the loop keeps. Every such formula is in activation_terms.cpp with its
// source.
struct ActivationTerms {
  LossMemory loss;             // the head's loss tensors, the held logits taken out  // bytes
  bool upcast_loss = false;    // the loss runs on an fp32 up-cast of the logits
  bool logits_held = false;    // the model returns those fp32 logits and the loop keeps them
  double kv_layer = 0;         // one layer's returned K and V (use_cache)  // bytes
  double output_bytes = 0;     // the model's output the loop keeps  // bytes
  double scores_bytes = 0;     // eager attention's fp32 softmax output, one block  // bytes
  double norm_extra = 0;       // an eager RMSNorm's fp32 tensors  // bytes
  bool kv_repeated = false;    // K and V repeated to the query heads before attention (runtime term gqa)
  // The loss's transients (`loss`) are one rank's of a vocabulary-sharded loss already (the chunked
  // loss under TP's loss parallel), not the whole vocabulary's to divide over tp.
  bool loss_per_vocab_shard = false;
  bool trainer_block = false;  // shardcast-train's eager block, counted to the byte
  bool eager_program = false;  // torchtitan's eager block, tensor by tensor
  double kept_plain = 0, kept_ckpt = 0, kept_sac = 0;  // a block keeps, per policy  // bytes
  SacRecompute sac;            // op-SAC's recompute in a block's backward
  double ckpt_recompute_s = 0; // a checkpointed block's recompute  // s
};
// shardcast-train's block: the d_model-wide fp32 tensors a token keeps (12 with the eager
// RMSNorm, 8 with the fused one), and what its final RMSNorm keeps besides its output (2 or 0).
double trainer_block_kept_d(NormImpl norm);
double trainer_final_norm_extra_d(NormImpl norm);
// ... and the ffn_dim-wide ones (4 with the eager SwiGLU, 3 with the fused one).
double trainer_block_kept_f(bool swiglu_fused);

ActivationTerms activation_terms(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape,
                                 const ComputeContext& cc, const std::vector<Op>& block_ops);

// One block unit's memory in the simulator (saved, forward and backward transients) under its
// checkpointing policy, and the tensor sequence of an eager torchtitan block where one applies.
// P: the unit's parameters. Returns the policy whose sequence the unit takes, or -1.
int block_unit_memory(const TrainConfig& cfg, const PlanOptions& opt, const StepShape& shape,
                      const ActivationTerms& act, double P, bool ckpt, bool op_sac,
                      std::array<BlockTensorSequence, 3>* block_seq, SimUnit* u);

// The links and groups the collectives run on.
struct CommSetup {
  CommContext comm;
  CommGroup shard_group, replica_group, reduce_group;
};
CommSetup comm_setup(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const EfficiencyParams& eff,
                     const StepShape& shape);

// The simulator's input — every FSDP unit's compute, memory and collectives — and what the
// read-outs need of how it was built.
struct FsdpUnits {
  SimInput in;
  std::vector<int64_t> unit_params;             // [embedding, blocks..., head]
  std::array<BlockTensorSequence, 3> block_seq;  // by BlockAc
  std::vector<int> block_seq_of;                 // a unit's BlockAc sequence, or -1
  // With pp > 1: each unit's unsharded parameters, which the stage keeps gathered for the whole
  // step (fsdp_units.cpp unit_collectives), outside the timeline; 0 without pp.  // bytes
  std::vector<double> held_gathered_bytes;
  bool device_timed = false;     // a measured kernel table times the plan
  bool caching_allocator = false;  // GPUs: the caching allocator is replayed
  double unit_host_s = 0;        // host time per unit and pass in series  // s
  int checkpointed_blocks = 0;
  double sac_recompute_flops = 0;  // op-SAC GEMMs recomputed per micro-step  // FLOP
  // With a mesh: TP's and CP's exposed time per micro-step on the compute stream (in fwd_s /
  // bwd_s above), and the rank's forward and backward compute per micro-step.  // s
  double tp_exposed_s = 0, cp_exposed_s = 0, tp_busy_s = 0, cp_busy_s = 0;
  double rank_fwd_s = 0, rank_bwd_s = 0, rank_wgrad_s = 0;
  // Per unit, TP's and CP's exposed time inside its forward and backward (the timeline's tp and
  // cp lanes), and its weight-gradient GEMMs' share of backward (rank_wgrad_s's terms).  // s
  std::vector<std::array<double, 4>> unit_mesh_s;  // {tp fwd, tp bwd, cp fwd, cp bwd}
  std::vector<double> unit_wgrad_s;
};
FsdpUnits fsdp_units(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                     const EfficiencyParams& eff, const ComputeContext& cc, const UnitCosts& costs,
                     const ActivationTerms& act, const CommSetup& comm);
// Clipping and the AdamW update over the local shard: its time and its temporaries, into in.
void add_optimizer_step(const TrainConfig& cfg, const RuntimeLoop& opt, const StepShape& shape,
                        const HardwareSpec& hw, const ComputeContext& cc, bool device_timed, SimInput* in);

// The mesh's stages (mesh_stage.cpp), called by the stages above where tp, cp or pp > 1.
void mesh_step_shape(const TrainConfig& cfg, const RuntimeMesh& opt, StepShape* sh);
void mesh_split_unit_ops(const StepShape& shape, UnitCosts* u);
void mesh_comm_groups(const StepShape& shape, CommSetup* c);
std::vector<int64_t> mesh_unit_params(const ModelSpec& m, const StepShape& shape);
// What every block of a mesh shares, computed once per plan: its TP and CP collectives
// (mesh_terms.h block_mesh_comm) and the forward time of its Linears (the weight gradient a
// zero-bubble schedule defers).
struct MeshBlockTerms {
  BlockMeshComm comm;
  double wgrad_s = 0;  // s
};
MeshBlockTerms mesh_block_terms(const TrainConfig& cfg, const StepShape& shape, const CommSetup& comm,
                                const UnitCosts& costs, const ComputeContext& cc, const ActivationTerms& act);
// A unit's TP and CP collectives into its compute (forward, backward, a checkpointed block's
// recompute; a block's from `block`) and the activation bytes of a unit divided over tp;
// totals into `units`.
void mesh_unit_terms(const TrainConfig& cfg, const StepShape& shape, const CommSetup& comm,
                     const UnitCosts& costs, const ComputeContext& cc, const ActivationTerms& act,
                     const MeshBlockTerms& block, int i, int U, bool ckpt, SimUnit* u, FsdpUnits* units);
// The pipeline's bubble and sends and its in-flight activations, and the mesh's read-outs, into p.
// In-flight: the activations of shape.pp_stage's other micro-batches in flight.  // bytes
double mesh_inflight_bytes(const StepShape& shape, const SimInput& in);
// A pipeline rank (PpStage) as the simulated rank's units show it: each end the rank lacks
// becomes one more block, its parameters, memory, time and mesh terms a block's, and the rank then
// holds the blocks the runtime's split gives it (StepShape::pp_blocks). False (nothing
// changed) where the rank has no block to copy.
bool pipeline_stage_view(PpStage stage, StepShape* shape, FsdpUnits* units);
// The pipeline rank whose work per micro-batch is the largest, which sets the pace of every other
// (the step is timed on it): of the first rank (the embedding), the last (the head), a middle one
// (neither end; pp ≥ 3); under ZBVZeroBubble the first (both ends) and the others (neither).
PpStage pipeline_slowest_rank(const StepShape& shape, const FsdpUnits& units);
// The timeline's tp, cp and pp lanes (p->timeline already holds the simulated step).
void add_mesh_lanes(const FsdpUnits& units, Prediction* p);
void mesh_read_time(const TrainConfig& cfg, const HardwareSpec& hw, const StepShape& shape, const CommSetup& comm,
                    const FsdpUnits& units, Prediction* p);

// The caching allocator replayed over the step (plan.cpp): its reserved peak, and p's reserved range.
double replay_reserved(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                       const ActivationTerms& act, const FsdpUnits& units, const SimResult& sim, bool grads_static,
                       double runtime, Prediction* p);
// The read-outs of the simulated step into p.
void read_memory(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                 const EfficiencyParams& eff, const ActivationTerms& act, const FsdpUnits& units,
                 const SimResult& sim, Prediction* p);
// With pp > 1, the read-outs of the pipeline's ranks, each its own view of the units
// (pipeline_stage_view) simulated once: the memory of the first and the last stage and of the
// busiest middle rank into p->pp_stages, p's memory the largest one's; p's time, timeline and
// mesh lanes those of the slowest rank (pipeline_slowest_rank). False, p untouched, where the
// units give no view (fewer than three): the caller reads the simulated rank's step instead.
bool read_pipeline(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                   const EfficiencyParams& eff, const ComputeSetup& compute, const UnitCosts& costs,
                   const CommSetup& comm, const ActivationTerms& act, const FsdpUnits& units, Prediction* p);
void read_time(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
               const EfficiencyParams& eff, const ComputeSetup& compute, const UnitCosts& costs,
               const CommSetup& comm, const FsdpUnits& units, const SimResult& sim, Prediction* p);
// read_time of the simulated rank, its timeline and mesh lanes into p too (with pp, read_pipeline
// times the slowest rank instead).
void read_step_time(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                    const EfficiencyParams& eff, const ComputeSetup& compute, const UnitCosts& costs,
                    const CommSetup& comm, const FsdpUnits& units, SimResult sim, Prediction* p);

}  // namespace shardcast::planner
