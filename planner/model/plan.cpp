// plan(): the spine of named stages (plan_stages.h), and the stages that set the step up and
// read the prediction off the simulated step. The activation terms are in activation_terms.cpp,
// the FSDP units in fsdp_units.cpp.
#include "planner/model/plan.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <deque>
#include <stdexcept>

#include <fmt/format.h>

#include "planner/model/ac_policy.h"
#include "planner/model/allocator/allocation_trace.h"
#include "planner/model/allocator/block_tensor_sequence.h"
#include "planner/model/comm_model.h"
#include "planner/model/document_mask.h"
#include "planner/model/efficiency.h"
#include "planner/model/fp8_formats.h"
#include "planner/model/fp8_recipe.h"
#include "planner/model/memory_model.h"
#include "planner/model/op_breakdown.h"
#include "planner/model/ops.h"
#include "planner/model/plan_stages.h"
#include "planner/model/power_limit.h"
#include "planner/model/simulator.h"
#include "shared/errors.h"

namespace shardcast::planner {

double effective_inter_node_bandwidth(const TrainConfig& cfg, const HardwareSpec& hw) {
  if (cfg.cluster.inter_node_gbps > 0) return cfg.cluster.inter_node_gbps * 1e9 / 8.0;
  // The preset states the NICs of its own node (node.gpus_per_node GPUs, one NIC rail per GPU
  // in every shipped preset); a node of another size has as many rails as it has GPUs.
  const int preset_gpn = hw.node.gpus_per_node, gpn = cfg.cluster.gpus_per_node;
  if (preset_gpn > 0 && gpn > 0) return hw.node.inter_node_bandwidth * double(gpn) / preset_gpn;
  return hw.node.inter_node_bandwidth;
}

Prediction plan(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt) {
  // 1. The step: the preset's rates as this runtime runs them, the ranks and groups, the dtypes.
  const EfficiencyParams eff = runtime_efficiency(hw, opt);
  const StepShape shape = step_shape(cfg, hw, opt);
  const ComputeSetup compute = compute_setup(cfg, hw, opt, eff, shape);
  // 2. Each unit kind's ops, timed (ops.h).
  const UnitCosts costs = unit_costs(cfg.model, opt, shape, compute.cc);
  // 3. Activation and transient bytes (activation_terms.cpp).
  const ActivationTerms act = activation_terms(cfg, opt, shape, compute.cc, costs.block_ops);
  // 4. FSDP units: compute, memory and collectives per unit (fsdp_units.cpp), then the optimizer.
  const CommSetup comm = comm_setup(cfg, hw, opt, eff, shape);
  FsdpUnits units = fsdp_units(cfg, hw, opt, shape, eff, compute.cc, costs, act, comm);
  add_optimizer_step(cfg, opt, shape, hw, compute.cc, units.device_timed, &units.in);
  // 5. The step simulated (simulator.h), 6. memory off its timeline and the allocator replay,
  // 7. time, tokens/s, MFU and HFU. With pp, each pipeline rank the plan reads is its own view of
  // the units, simulated once: memory of the first, the last and a middle rank, time of the slowest.
  Prediction p;
  if (shape.mesh.pp > 1 && read_pipeline(cfg, hw, opt, shape, eff, compute, costs, comm, act, units, &p)) return p;
  SimResult sim = simulate_fast(units.in);
  read_memory(cfg, hw, opt, shape, eff, act, units, sim, &p);
  read_step_time(cfg, hw, opt, shape, eff, compute, costs, comm, units, std::move(sim), &p);
  return p;
}

bool read_pipeline(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                   const EfficiencyParams& eff, const ComputeSetup& compute, const UnitCosts& costs,
                   const CommSetup& comm, const ActivationTerms& act, const FsdpUnits& units, Prediction* out) {
  Prediction& p = *out;
  // One pipeline rank's view and its simulated step, made on first use: the slowest rank is
  // also one whose memory is read.
  struct View {
    PpStage stage;
    StepShape shape;
    FsdpUnits units;
    SimResult sim;
  };
  std::deque<View> views;  // stable addresses
  auto view_of = [&](PpStage stage) -> View* {
    for (View& v : views)
      if (v.stage == stage) return &v;
    View v{stage, shape, units, {}};
    if (!pipeline_stage_view(stage, &v.shape, &v.units)) return nullptr;  // no block to stand in for an end
    v.sim = simulate_fast(v.units.in);
    views.push_back(std::move(v));
    return &views.back();
  };
  // Memory: the first and the last pipeline rank, and the split's busiest rank of neither end
  // (one more block than the first where the split puts its extras on the first stages, nearly
  // as many micro-batches in flight); the largest is the plan's. ZBVZeroBubble's V places stages
  // i and 2·pp − 1 − i on rank i (torchtitan stage_ids_this_rank, style "v"): its first rank
  // holds both ends, the others neither.
  const bool v_shape = shape.pp_schedule == PpSchedule::zbv_zero_bubble;
  std::vector<std::pair<PpStage, const char*>> ranks = {{v_shape ? PpStage::both_ends : PpStage::first, "first"}};
  if (!v_shape) ranks.push_back({PpStage::last, "last"});
  if (shape.pp_blocks.middle_rank >= 0) ranks.push_back({PpStage::neither, "middle"});
  Prediction larger;
  for (size_t k = 0; k < ranks.size(); ++k) {
    View* v = view_of(ranks[k].first);
    if (!v) return false;  // every view or none (pipeline_stage_view): p untouched
    Prediction q;
    read_memory(cfg, hw, opt, v->shape, eff, act, v->units, v->sim, &q);
    p.pp_stages.push_back({ranks[k].second, q.mem_peak_bytes, q.mem_reserved_bytes, q.mem_device_total_bytes,
                           q.mem_reserved_range_bytes});
    if (k == 0 || q.mem_device_total_bytes > larger.mem_device_total_bytes) larger = std::move(q);
  }
  p.memory = std::move(larger.memory);
  p.mem_peak_bytes = larger.mem_peak_bytes;
  p.mem_reserved_bytes = larger.mem_reserved_bytes;
  p.mem_reserved_range_bytes = larger.mem_reserved_range_bytes;
  p.mem_device_total_bytes = larger.mem_device_total_bytes;
  p.mem_capacity_bytes = larger.mem_capacity_bytes;
  p.fits = larger.fits;
  p.overflow_component = larger.overflow_component;
  // Time: the pipeline runs at its slowest rank's pace (ZBVZeroBubble's may be its rank of both
  // ends, with its split's blocks).
  View* t = view_of(pipeline_slowest_rank(shape, units));
  if (!t) return false;
  read_time(cfg, hw, opt, t->shape, eff, compute, costs, comm, t->units, t->sim, &p);
  p.timeline = std::move(t->sim.timeline);
  add_mesh_lanes(t->units, &p);
  return true;
}

EfficiencyParams runtime_efficiency(const HardwareSpec& hw, const RuntimeLoop& opt) {
  EfficiencyParams eff = read_efficiency(hw);
  if (opt.host_time_hidden) {  // runtime term host_time = "hidden" (docs/cost-model.md §2.2)
    eff.unit_overhead_s = 0;
    eff.step_overhead_s = 0;
  }
  if (opt.host_units_graphed) eff.unit_overhead_s = 0;  // host_time = "cuda_graphs" (§2.2)
  return eff;
}

StepShape step_shape(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt) {
  StepShape sh;
  const int W = cfg.world_size();
  const int gpn = cfg.cluster.gpus_per_node;
  if (cfg.cluster.nodes > 1 && effective_inter_node_bandwidth(cfg, hw) <= 0)
    throw ConfigError(hw.file.empty() ? hw.name : hw.file, "node.inter_node_gbps",
                      fmt::format("is 0, so {} nodes cannot talk to each other: set cluster.inter_node_gbps "
                                  "(--inter-node-gbps), or put all {} ranks on one node (--gpus-per-node {})",
                                  cfg.cluster.nodes, W, W));
  sh.world = W;
  sh.gpus_per_node = gpn;
  // More ranks per node than the profile has devices (CPU profiles: devices = cores): ranks
  // time-share them, so each rank's compute runs at devices / ranks of the rate.
  sh.time_share = std::max(1.0, double(gpn) / std::max(1, hw.node.gpus_per_node));
  sh.strategy = cfg.parallelism.sharding_strategy;
  sh.shard_group = std::max(1, cfg.parallelism.shard_group_size(W, gpn));
  // ZeRO stage 2 runs as stage 1 (DeepSpeedZeroOptimizer, stage_1_and_2.py @38327e07f): the
  // 16-bit model whole on every rank, its reductions over all ranks.
  sh.zero_whole_params = opt.zero && (sh.strategy == ShardingStrategy::shard_optimizer ||
                                      sh.strategy == ShardingStrategy::shard_grad_op);
  if (sh.zero_whole_params) sh.shard_group = 1;
  sh.replicas = std::max(1, W / sh.shard_group);
  sh.micro_batch = cfg.training.micro_batch;
  sh.seq_len = cfg.training.seq_len;
  sh.grad_accum = cfg.training.grad_accum;
  sh.tokens = double(sh.micro_batch) * sh.seq_len;
  sh.no_shard = sh.strategy == ShardingStrategy::no_shard || sh.shard_group == 1;
  try {
    sh.param_bytes = dtype_bytes(cfg.precision.param_dtype);
    sh.reduce_bytes = dtype_bytes(cfg.precision.reduce_dtype);
    // Sharded parameter, its gradient and each AdamW moment (docs/cost-model.md §3).
    sh.master_bytes = dtype_bytes(cfg.precision.master_dtype);
    sh.moment_bytes = adamw_moment_bytes(cfg);
  } catch (const ConfigError& e) {
    throw ConfigError(cfg.source_file, "precision", e.detail());
  }
  sh.mesh = resolve_mesh(cfg.parallelism, W, gpn);
  sh.rank_blocks = cfg.model.n_layers;
  sh.tokens_per_gpu_step = sh.tokens * sh.grad_accum;
  sh.rank_params = cfg.model.total_params();
  if (!sh.one_d()) mesh_step_shape(cfg, opt, &sh);
  sh.state_group = sh.zero_whole_params || sh.strategy == ShardingStrategy::shard_optimizer
                       ? sh.replicas * sh.shard_group
                   : sh.no_shard                                   ? 1
                                                                   : sh.shard_group;
  return sh;
}

namespace {

// The attention rate: SDPA on cuDNN attention at its fitted fraction of cuDNN's published rate,
// torch < 2.2's FlashAttention-1 at its published share, or a benchmark GPU's published
// flash-attention rates; else the fitted attention_eff.
void set_attention_rate(const ModelSpec& m, const HardwareSpec& hw, const PlanOptions& opt,
                        const EfficiencyParams& eff, const PowerLimit& power, int s, ComputeContext& cc) {
  if (opt.attention_cudnn) {
    // SDPA on cuDNN attention: the fitted fraction of cuDNN's published rate on this GPU.
    if (eff.cudnn_attention_ceiling <= 0)
      throw ConfigError(hw.file.empty() ? hw.name : hw.file, "efficiency.cudnn_attention_ceiling",
                        fmt::format("is 0, but runtime '{}' runs cuDNN attention on compute capability {}: state "
                                    "cuDNN's published attention rate on this GPU / its bf16 peak",
                                    opt.runtime, hw.gpu.compute_capability));
    cc.eff.attention_eff = eff.attention_eff * eff.cudnn_attention_ceiling;
  } else if (opt.attention_kernel == AttentionKernel::flash1) {
    // torch < 2.2's SDPA flash backend, FlashAttention-1: its published share of the flash
    // ceiling (kernel_rates.h).
    cc.eff.attention_eff = eff.attention_eff * eff.attention_ceiling * kFlashAttention1OverFlashAttention2;
  }
  cc.grid = GemmGrid{hw.gpu.sm_count, hw.gpu.gemm_tile_m, hw.gpu.gemm_tile_n, hw.gpu.gemm_tile_k};
  // Published flash-attention rates when the preset names a benchmark GPU (none of the shipped
  // presets does: docs/validation.md "Attention kernels"); otherwise the fitted attention_eff.
  if (hw.gpu.sm_count > 0 && !hw.gpu.attention_benchmark.empty() && !opt.attention_materialized) {
    if (opt.attention_kernel == AttentionKernel::flash1)
      throw ConfigError(hw.file.empty() ? hw.name : hw.file, "gpu.attention_benchmark",
                        fmt::format("configs/kernels/flash_attention.csv has no FlashAttention-1 rows, and runtime '{}' "
                                    "runs torch < 2.2's SDPA flash backend (attention = \"flash1\"): leave "
                                    "gpu.attention_benchmark empty",
                                    opt.runtime));
    if (opt.attention_cudnn)
      throw ConfigError(hw.file.empty() ? hw.name : hw.file, "gpu.attention_benchmark",
                        fmt::format("configs/kernels/flash_attention.csv has no cuDNN attention rows, and runtime "
                                    "'{}' runs cuDNN attention on compute capability {}: leave "
                                    "gpu.attention_benchmark empty (the cudnn_attention_ceiling times it)",
                                    opt.runtime, hw.gpu.compute_capability));
    cc.attention_flops = attention_rate(attention_table(), hw.gpu.attention_benchmark, to_string(opt.attention_kernel),
                                        double(m.head_dim()), /*causal=*/true, s,
                                        hw.peak_flops("bf16") * power.clock_scale * eff.matmul_ceiling);
  }
}

// The measured kernel table of the preset, where the runtime's torch release is the table's.
void take_kernel_table(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt,
                       const PowerLimit& power, int s, ComputeContext& cc) {
  const ModelSpec& m = cfg.model;
  // Measured kernel rates replace the anchored ones (planner/kernel_table.h) for a runtime of
  // the torch release the table was measured with (runtime term torch): the best GEMM rate per
  // dtype anchors the grid model (no fitted factor), measured shapes take their measured time,
  // copies run at the measured copy rate, and cuDNN attention (torch's default SDPA backend on
  // the GPUs the tables were made on) at the measured SDPA rate. A preset names a table measured
  // at its board power (the lent machines ran at their default limit, the presets' 700 W:
  // docs/gpu-runs/*/machine.txt), so a config's lower power limit scales the table's compute
  // rates as it scales the anchored ones (power_limit.h); copies keep theirs. Any other runtime
  // keeps the preset's fitted fractions: those carry what its published runs' kernels did.
  if (!hw.gpu.kernel_table.empty() && !opt.torch_release.empty()) {
    const KernelTable& kt = kernel_table_for(hw.gpu.kernel_table);
    if (kt.torch_release() == opt.torch_release) cc.kernels = &kt;
  }
  if (cc.kernels) {
    const KernelTable& kt = *cc.kernels;
    cc.dtype = cfg.precision.param_dtype;
    cc.kernel_clock_scale = power.clock_scale;
    // cc.peak_flops carries the clock scale: a fraction of it is the measured rate, scaled.
    if (const double r = kt.best_gemm_rate(cc.dtype); r > 0) cc.eff.matmul_eff = r * power.clock_scale / cc.peak_flops;
    if (const double r = kt.best_gemm_rate("fp8"); r > 0 && cc.fp8_peak_flops > 0)
      cc.eff.fp8_matmul_eff = r * power.clock_scale / cc.fp8_peak_flops;
    if (const double bw = kt.copy_bandwidth(); bw > 0) cc.eff.hbm_eff = bw / cc.hbm_bandwidth;
    if (const double r = kt.sdpa_rate(double(m.head_dim()), s); r > 0 && opt.attention_cudnn)
      cc.attention_flops = r * power.clock_scale;
  }
}

}  // namespace

ComputeSetup compute_setup(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt,
                           const EfficiencyParams& eff, const StepShape& shape) {
  const ModelSpec& m = cfg.model;
  const int s = shape.seq_len;
  const int param_bytes = shape.param_bytes;
  const EfficiencyParams rate = of_datasheet(eff);  // compute and HBM rates / datasheet
  // Compute. A board power limit lowers the SM clock and with it every compute rate (tensor
  // cores, attention); HBM and links keep theirs (power_limit.h). MFU stays against the rated peak.
  const PowerLimit power = resolve_power_limit(cfg, hw);
  const double rated_peak = hw.peak_flops(cfg.precision.param_dtype);
  ComputeContext cc;
  cc.peak_flops = rated_peak * power.clock_scale;
  cc.fp8 = cfg.precision.fp8;
  cc.fp8_peak_flops = cfg.precision.fp8_on() ? hw.peak_flops("fp8") * power.clock_scale : 0;
  // nvfp4's GEMMs at the fp4 tensor-core peak (fp8_formats.h).
  if (cfg.precision.fp8 == Fp8Recipe::nvfp4) cc.fp8_peak_flops *= fp4_over_fp8_peak(hw.gpu.compute_capability);
  // FSDP's float8 all-gather exists for tensorwise scaling only (torchtitan e61f2cce4
  // components/quantization/float8.py: recipe_name with enable_fsdp_float8_all_gather is refused).
  cc.fp8_weights_precast = cfg.precision.fp8 == Fp8Recipe::tensorwise && opt.fp8_all_gather;
  cc.mxfp8_casts = opt.mxfp8_casts;
  // nvfp4's bf16 tail of blocks (fp8_recipe.h); per-document masks (document_mask.h).
  if (cfg.precision.fp8 == Fp8Recipe::nvfp4) cc.fp8_block_share = nvfp4_block_fraction(m.n_layers);
  if (opt.attention_document_mask) cc.attention_work = document_attention_work(s, cfg.data.mean_doc_len);
  cc.hbm_bandwidth = hw.gpu.hbm_bandwidth;
  cc.act_bytes = param_bytes;
  cc.compile = cfg.precision.compile;
  cc.eff = rate;
  set_attention_rate(m, hw, opt, eff, power, s, cc);
  // Measured float8 Linear speed-ups by shape (configs/kernels/float8_linear.csv, torch.compile)
  // for a recipe the table has, this GPU's grid where it has one, else another GPU's as the prior;
  // eager runs and recipes without a grid keep the recipe's roofline (fp8_linear_table.h).
  // torchao's eager Float8Linear takes the compiled grid too (ops.cpp fp8_time adds the casts
  // compile would fuse), so eager is never predicted faster than compiled.
  cc.fp8_linear = fp8_linear_grid_for(cc.fp8, cc.compile || opt.fp8_library == Fp8Library::torchao, hw.gpu.sm_count, hw.name);
  take_kernel_table(cfg, hw, opt, power, s, cc);
  return ComputeSetup{cc, power, rated_peak};
}

UnitCosts unit_costs(const ModelSpec& m, const RuntimeKernels& opt, const StepShape& shape, const ComputeContext& cc) {
  // A sequence's tokens on this rank (context parallel splits it over cp ranks).
  const int b = shape.micro_batch, s = shape.seq_len / shape.mesh.cp, param_bytes = shape.param_bytes;
  const double T = shape.tokens;
  UnitCosts u;
  u.block_ops = block_forward_ops(m, b, s, param_bytes, opt.rmsnorm, opt.rope_fused, opt.swiglu_fused);
  u.embed_ops = embedding_forward_ops(m, b, s, param_bytes);
  u.head_ops = head_forward_ops(m, b, s, param_bytes, opt.cross_entropy, opt.rmsnorm);
  if (!shape.one_d()) mesh_split_unit_ops(shape, &u);
  const double sp = shape.sequence_parallel ? shape.mesh.tp : 1;  // sequence parallel: a block's input is a 1/tp shard
  u.block = unit_cost(u.block_ops, T * param_bytes * m.d_model / sp, 0, cc);
  u.embed = unit_cost(u.embed_ops, 0, 0, cc);
  u.head = unit_cost(u.head_ops, T * param_bytes * m.d_model / sp, 0, cc);
  return u;
}

CommSetup comm_setup(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const EfficiencyParams& eff,
                     const StepShape& shape) {
  const int W = shape.world, gpn = shape.gpus_per_node, Ns = shape.shard_group, R = shape.replicas;
  CommSetup c;
  c.comm.intra_node_bandwidth = hw.node.intra_node_bandwidth;
  c.comm.inter_node_bandwidth = effective_inter_node_bandwidth(cfg, hw);
  c.comm.intra_node_latency = hw.node.intra_node_latency;
  c.comm.inter_node_latency = hw.node.inter_node_latency;
  c.comm.gpus_per_node = gpn;
  c.comm.direct_link_max_gpus = hw.node.direct_link_max_gpus;
  c.comm.node_gpus = cfg.cluster.node_gpus;
  c.comm.eff = eff;
  c.comm.reduce_scatter_one_round = opt.reduce_scatter_one_round;
  c.shard_group = CommGroup{Ns, std::max(1, (Ns + gpn - 1) / gpn)};
  // Replica groups: one rank per shard group; a shard group smaller than a node puts several
  // of a replica group's ranks on one node.
  const int replica_ranks_per_node = Ns >= gpn ? 1 : std::max(1, gpn / Ns);
  c.replica_group = CommGroup{R, std::max(1, R / replica_ranks_per_node)};
  c.reduce_group = shape.no_shard ? CommGroup{W, cfg.cluster.nodes} : c.shard_group;
  if (!shape.one_d()) mesh_comm_groups(shape, &c);
  return c;
}

// The caching allocator replayed over the step's allocation sequence (allocation_trace.h,
// caching_allocator.h): its reserved peak (0 where the trace passes the replay's address range),
// and p's reserved range under this and (opt.reserved_range) the other expandable_segments.
double replay_reserved(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                       const ActivationTerms& act, const FsdpUnits& units, const SimResult& sim, bool grads_static,
                       double runtime, Prediction* out) {
  Prediction& p = *out;
  const ModelSpec& m = cfg.model;
  const int U = int(units.unit_params.size());
  const int master_bytes = shape.master_bytes, param_bytes = shape.param_bytes;
  const double T = shape.tokens;
  const std::vector<int64_t>& unit_params = units.unit_params;
  const SimInput& in = units.in;
  const LossMemory& loss = act.loss;
  const bool upcast_loss = act.upcast_loss, logits_held = act.logits_held;
  double reserved = 0;  // the replay's peak  // bytes
  const double shard = 1.0 / double(shape.state_group);  // 1 / Ns; 1 under no_shard, 1 / W under ZeRO 1 and 2
  TraceInputs ti;
  for (int64_t P : unit_params) {
    ti.param_shard_bytes.push_back(master_bytes * double(P) * shard);
    ti.optimizer_bytes.push_back(shape.moment_bytes * double(P) * shard);
    ti.static_grad_bytes.push_back(grads_static ? master_bytes * double(P) * shard : 0.0);
  }
  ti.record_stream = opt.record_stream_buffers;
  ti.optimizer_state_at_init = opt.adamw_state_at_init;
  ti.cuda_graphs = opt.host_units_graphed;  // host_time = "cuda_graphs" on a CUDA GPU, no pipeline
  ti.stand_in_pieces_per_unit = int(std::max<int64_t>(1, m.parameter_tensors() / std::max(1, U)));
  // torchtitan's eager blocks tensor by tensor (block_tensor_sequence.h).
  for (int i = 0; i < U; ++i)
    if (units.block_seq_of[size_t(i)] >= 0) {
      ti.sequences.resize(size_t(U));
      ti.sequences[size_t(i)] = units.block_seq[size_t(units.block_seq_of[size_t(i)])].seq;
    }
  // The fp32 up-cast loss tensor by tensor (allocation_trace.h): its 4·tokens·vocab blocks
  // are the largest of the step, and where they land decides the segments' high-water mark.
  // A pipeline rank without the head has a block for its last unit (pipeline_stage_view).
  if (upcast_loss && shape.pp_stage != PpStage::first && shape.pp_stage != PpStage::neither) {  // with a mesh, on a 1/tp vocabulary shard under loss parallel, whole without it
    const double tp = shape.loss_parallel && shape.sequence_parallel ? shape.mesh.tp : 1;
    // torch's loss_parallel handlers' extra fp32 shard, as the head's lumps count it (mesh_stage.cpp).
    const bool dtensor_extra = tp > 1 && shape.loss_parallel_dtensor;
    const SimUnit& h = in.units[size_t(U - 1)];
    ti.sequences.resize(size_t(U));
    ti.sequences[size_t(U - 1)] = fp32_upcast_loss_sequence(T * double(m.vocab) / tp, param_bytes, h.saved_bytes - loss.saved / tp,
                                                             logits_held, opt.cross_entropy, dtensor_extra);
  }
  thread_local std::vector<AllocEvent> trace;  // storage reused by the next plan() on this thread
  build_allocation_trace(sim, ti, &trace);
  CachingAllocatorConfig ac_cfg;
  ac_cfg.expandable_segments = opt.expandable_segments;
  ac_cfg.capacity_bytes = hw.gpu.hbm_bytes - runtime;
  // A trace whose segments pass the replay's address range (2^50 bytes over the replayed
  // steps: an allocated peak of hundreds of TiB, far past any device) is not replayed: the
  // reserved estimate is then the proportional one, as for the configurations search does not
  // replay (over_by_allocated), and the plan does not fit either way.
  try {
    reserved = replay_allocation_trace(trace, ac_cfg, ti.cuda_graphs).peak_reserved;
    p.mem_reserved_range_bytes = {reserved, reserved};  // the trace's alone: read_memory adds what is beside it
    if (opt.reserved_range) {
      ac_cfg.expandable_segments = !opt.expandable_segments;
      const double other = replay_allocation_trace(trace, ac_cfg, ti.cuda_graphs).peak_reserved;
      p.mem_reserved_range_bytes = {std::min(reserved, other), std::max(reserved, other)};
    }
  } catch (const std::length_error&) {
    assert(p.mem_peak_bytes > hw.gpu.hbm_bytes);
    reserved = 0;
    p.mem_reserved_range_bytes = {0, 0};
  }
  return reserved;
}

void read_memory(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                 const EfficiencyParams& eff, const ActivationTerms& act, const FsdpUnits& units,
                 const SimResult& sim, Prediction* out) {
  Prediction& p = *out;
  const StateMemory state = state_memory(shape.one_d() ? cfg.model.total_params() : shape.rank_params,
                                         shape.state_group, shape.master_bytes, shape.moment_bytes);
  // The pipeline's other in-flight micro-batches: their activations held beside the simulated
  // one; and the parameters a stage keeps gathered all step.  // bytes
  const double inflight = shape.one_d() ? 0.0 : mesh_inflight_bytes(shape, units.in);
  double held = 0;
  for (double b : units.held_gathered_bytes) held += b;
  // Static: parameters and optimizer states always; the gradients too unless the loop frees
  // them between steps, in which case the timeline places them (kMemShardedGrads).
  const bool grads_static = !opt.grads_freed_between_steps;
  // DeepSpeed ZeRO's own flat buffers (zero_memory.h; none for other runtimes): static too.
  const std::vector<ZeroBuffer> zero = zero_buffers(cfg, opt, shape.state_group, shape.param_bytes);
  double zero_bytes = 0;
  for (const ZeroBuffer& b : zero) zero_bytes += b.bytes;
  const double static_bytes =
      state.parameters + state.optimizer_states + (grads_static ? state.gradients : 0.0) + inflight + held + zero_bytes;
  p.memory.push_back({"sharded_parameters", state.parameters});
  p.memory.push_back({"sharded_gradients", grads_static ? state.gradients : sim.mem_at_peak[kMemShardedGrads]});
  p.memory.push_back({"optimizer_states", state.optimizer_states});
  for (const ZeroBuffer& b : zero) p.memory.push_back({b.name, b.bytes});
  for (int c = 0; c < kMemCategories; ++c)
    if (c != kMemShardedGrads) p.memory.push_back({mem_category_name(c), sim.mem_at_peak[c]});
  if (inflight > 0) p.memory.push_back({"pipeline_in_flight", inflight});
  if (held > 0) p.memory.push_back({"pipeline_gathered_parameters", held});
  p.mem_peak_bytes = static_bytes + sim.mem_peak_bytes;
  AllocatorInputs alloc;
  alloc.allocated_peak = p.mem_peak_bytes;
  alloc.fragmentation = eff.fragmentation;
  const double runtime = eff.runtime_overhead_gib * double(1ull << 30);
  alloc.outside_allocator = runtime;
  const bool over_by_allocated = opt.replay_within_bytes > 0 && p.mem_peak_bytes + runtime > opt.replay_within_bytes;
  // Segments of their own beside the replayed trace: the pipeline's other in-flight micro-batches,
  // its held parameters and DeepSpeed's flat buffers; the range takes them like the estimate.
  const double beside_trace = inflight + held + zero_reserved_bytes(zero);  // bytes
  if (units.caching_allocator && !over_by_allocated)
    alloc.replayed_reserved = replay_reserved(cfg, hw, opt, shape, act, units, sim, grads_static, runtime, &p) + beside_trace;
  if (p.mem_reserved_range_bytes.second > 0)
    for (double* b : {&p.mem_reserved_range_bytes.first, &p.mem_reserved_range_bytes.second})
      *b = std::max(p.mem_peak_bytes, *b + beside_trace);
  const DeviceMemory dm = device_memory(alloc);
  p.mem_reserved_bytes = dm.reserved;
  p.mem_device_total_bytes = dm.device_total;
  p.memory.push_back({"runtime_overhead", runtime});
  p.mem_capacity_bytes = hw.gpu.hbm_bytes;
  p.fits = p.mem_device_total_bytes <= p.mem_capacity_bytes;
  if (!p.fits) {
    auto largest = std::max_element(p.memory.begin(), p.memory.end(),
                                    [](const MemoryComponent& a, const MemoryComponent& c) {
                                      return a.bytes < c.bytes;
                                    });
    p.overflow_component = largest->name;
  }

}

void read_step_time(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
                    const EfficiencyParams& eff, const ComputeSetup& compute, const UnitCosts& costs,
                    const CommSetup& comm, const FsdpUnits& units, SimResult sim, Prediction* out) {
  Prediction& p = *out;
  read_time(cfg, hw, opt, shape, eff, compute, costs, comm, units, sim, &p);
  p.timeline = std::move(sim.timeline);
  if (!shape.one_d()) add_mesh_lanes(units, &p);
}

void read_time(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt, const StepShape& shape,
               const EfficiencyParams& eff, const ComputeSetup& compute, const UnitCosts& costs,
               const CommSetup& comm, const FsdpUnits& units, const SimResult& sim, Prediction* out) {
  Prediction& p = *out;
  const ModelSpec& m = cfg.model;
  const int GA = shape.grad_accum, s = shape.seq_len, U = int(units.unit_params.size());
  const double T = shape.tokens, time_share = shape.time_share, rated_peak = compute.rated_peak;
  const bool device_timed = units.device_timed;
  const ComputeContext& cc = compute.cc;
  const PowerLimit& power = compute.power;
  // The host's own time for the step where the device's work is not in series with it (above).
  const double host_step_s =
      device_timed ? time_share * (double(GA) * 2.0 * U * eff.unit_overhead_s + eff.step_overhead_s) : 0.0;
  p.step_time_s = std::max(sim.step_time_s, host_step_s);
  p.host_bound_s = p.step_time_s - sim.step_time_s;
  p.compute_s = sim.compute_s;
  p.comm_s = sim.comm_s;
  p.exposed_comm_s = sim.exposed_comm_s;
  p.optimizer_s = sim.optimizer_s;
  if (opt.op_breakdown) {
    // A pipeline rank's end it lacks is a block (pipeline_stage_view): a block's ops there.
    const bool embed_block = shape.pp_stage == PpStage::last || shape.pp_stage == PpStage::neither;
    const bool head_block = shape.pp_stage == PpStage::first || shape.pp_stage == PpStage::neither;
    const UnitOps unit_ops{embed_block ? costs.block_ops : costs.embed_ops, costs.block_ops,
                           head_block ? costs.block_ops : costs.head_ops};
    auto ops = op_breakdown(cfg, opt, cc, unit_ops, units.in, sim, time_share, units.unit_host_s);
    ops[size_t(OpCategory::other)] += p.host_bound_s;  // the host's time beyond the device's
    p.op_seconds.assign(ops.begin(), ops.end());
  }
  p.tokens_per_s_per_gpu = T * GA / p.step_time_s;
  p.flops_per_token = m.flops_per_token(s);
  p.mfu = p.tokens_per_s_per_gpu * p.flops_per_token / rated_peak;
  // HFU: the published convention (a checkpointed block adds its forward, 2N_block + 4·d·s
  // per token) plus the GEMMs op-level SAC recomputes.
  const double recompute_fraction = m.n_layers > 0 ? double(units.checkpointed_blocks) / m.n_layers : 0;
  p.hfu = p.tokens_per_s_per_gpu *
          (m.hardware_flops_per_token(s, recompute_fraction) + units.sac_recompute_flops / T) / rated_peak;
  p.runtime = opt.runtime;
  p.attention = opt.attention_document_mask                 ? "flex_document"
                : opt.attention_cudnn                         ? "cudnn"
                : opt.attention_causal_blocks               ? "eager_causal_blocks"
                : opt.attention_materialized                ? "eager"
                : opt.attention_kernel != AttentionKernel::flash2 ? to_string(opt.attention_kernel)
                                                            : "flash";
  p.kernel_table = cc.kernels ? hw.gpu.kernel_table : "";
  p.power_limit_w = power.limit_w;
  p.board_power_w = power.board_w;
  p.clock_scale = power.clock_scale;
  if (!shape.one_d()) mesh_read_time(cfg, hw, shape, comm, units, &p);
}

}  // namespace shardcast::planner
