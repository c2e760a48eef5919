#include "planner/plan.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "planner/ac_policy.h"
#include "planner/allocation_trace.h"
#include "planner/block_tensor_sequence.h"
#include "planner/comm_model.h"
#include "planner/efficiency.h"
#include "planner/error_band.h"
#include "planner/fsdp_copies.h"
#include "planner/memory_model.h"
#include "planner/op_breakdown.h"
#include "planner/ops.h"
#include "planner/power_limit.h"
#include "planner/simulator.h"
#include "shared/causal_blocks.h"
#include "shared/config_io.h"
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

namespace {


}  // namespace

Prediction plan(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt) {
  const ModelSpec& m = cfg.model;
  EfficiencyParams eff = read_efficiency(hw);
  if (opt.host_time_hidden) {  // runtime term host_time = "hidden" (docs/cost-model.md §2.2)
    eff.unit_overhead_s = 0;
    eff.step_overhead_s = 0;
  }
  const EfficiencyParams rate = of_datasheet(eff);  // compute and HBM rates / datasheet
  const int W = cfg.world_size();
  const int gpn = cfg.cluster.gpus_per_node;
  if (cfg.cluster.nodes > 1 && effective_inter_node_bandwidth(cfg, hw) <= 0)
    throw ConfigError(hw.file.empty() ? hw.name : hw.file, "node.inter_node_gbps",
                      fmt::format("is 0, so {} nodes cannot talk to each other: set cluster.inter_node_gbps "
                                  "(--inter-node-gbps), or put all {} ranks on one node (--gpus-per-node {})",
                                  cfg.cluster.nodes, W, W));
  // More ranks per node than the profile has devices (CPU profiles: devices = cores): ranks
  // time-share them, so each rank's compute runs at devices / ranks of the rate.
  const double time_share = std::max(1.0, double(gpn) / std::max(1, hw.node.gpus_per_node));
  const ShardingStrategy strategy = cfg.parallelism.sharding_strategy;
  const int Ns = std::max(1, cfg.parallelism.shard_group_size(W, gpn));
  const int R = std::max(1, W / Ns);
  const int b = cfg.training.micro_batch, s = cfg.training.seq_len;
  const int GA = cfg.training.grad_accum;

  int param_bytes, reduce_bytes, master_bytes;
  try {
    param_bytes = dtype_bytes(cfg.precision.param_dtype);
    reduce_bytes = dtype_bytes(cfg.precision.reduce_dtype);
    // Sharded parameter, its gradient and each AdamW moment (docs/cost-model.md §3).
    master_bytes = dtype_bytes(cfg.precision.master_dtype);
  } catch (const ConfigError& e) {
    throw ConfigError(cfg.source_file, "precision", e.detail());
  }

  // Compute. A board power limit lowers the SM clock and with it every compute rate (tensor
  // cores, attention); HBM and links keep theirs (power_limit.h). MFU stays against the rated peak.
  const PowerLimit power = resolve_power_limit(cfg, hw);
  const double rated_peak = hw.peak_flops(cfg.precision.param_dtype);
  ComputeContext cc;
  cc.peak_flops = rated_peak * power.clock_scale;
  cc.fp8 = cfg.precision.fp8;
  cc.fp8_peak_flops = cfg.precision.fp8_on() ? hw.peak_flops("fp8") * power.clock_scale : 0;
  // FSDP's float8 all-gather exists for tensorwise scaling only (torchtitan e61f2cce4
  // components/quantization/float8.py: recipe_name with enable_fsdp_float8_all_gather is refused).
  cc.fp8_weights_precast = cfg.precision.fp8 == Fp8Recipe::tensorwise && opt.fp8_all_gather;
  cc.hbm_bandwidth = hw.gpu.hbm_bandwidth;
  cc.act_bytes = param_bytes;
  cc.compile = cfg.precision.compile;
  cc.eff = rate;
  if (opt.attention_cudnn) {
    // SDPA on cuDNN attention: the fitted fraction of cuDNN's published rate on this GPU.
    if (eff.cudnn_attention_ceiling <= 0)
      throw ConfigError(hw.file.empty() ? hw.name : hw.file, "efficiency.cudnn_attention_ceiling",
                        fmt::format("is 0, but runtime '{}' runs cuDNN attention on compute capability {}: state "
                                    "cuDNN's published attention rate on this GPU / its bf16 peak",
                                    opt.runtime, hw.gpu.compute_capability));
    cc.eff.attention_eff = eff.attention_eff * eff.cudnn_attention_ceiling;
  } else if (opt.attention_kernel == "flash1") {
    // torch < 2.2's SDPA flash backend, FlashAttention-1: its published share of the flash
    // ceiling (kernel_rates.h).
    cc.eff.attention_eff = eff.attention_eff * eff.attention_ceiling * kFlashAttention1OverFlashAttention2;
  }
  cc.grid = GemmGrid{hw.gpu.sm_count, hw.gpu.gemm_tile_m, hw.gpu.gemm_tile_n, hw.gpu.gemm_tile_k};
  // Published flash-attention rates when the preset names a benchmark GPU (none of the shipped
  // presets does: docs/validation.md "Attention kernels"); otherwise the fitted attention_eff.
  if (hw.gpu.sm_count > 0 && !hw.gpu.attention_benchmark.empty() && !opt.attention_materialized) {
    if (opt.attention_kernel == "flash1")
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
    cc.attention_flops = attention_rate(attention_table(), hw.gpu.attention_benchmark, opt.attention_kernel,
                                        double(m.d_model) / m.n_heads, /*causal=*/true, s,
                                        hw.peak_flops("bf16") * power.clock_scale * eff.matmul_ceiling);
  }
  // Measured float8 Linear speed-ups by shape (configs/kernels/float8_linear.csv, torch.compile)
  // for a recipe the table has, this GPU's grid where it has one, else another GPU's as the prior;
  // eager runs and recipes without a grid keep the recipe's roofline (fp8_linear_table.h).
  // torchao's eager Float8Linear takes the compiled grid too (ops.cpp fp8_time adds the casts
  // compile would fuse), so eager is never predicted faster than compiled.
  cc.fp8_linear = fp8_linear_grid_for(cc.fp8, cc.compile || opt.fp8_library == "torchao", hw.gpu.sm_count, hw.name);
  // Measured kernel rates replace the anchored ones (planner/kernel_table.h) for a runtime of
  // the torch release the table was measured with (runtime term torch): the best GEMM rate per
  // dtype anchors the grid model (no fitted factor), measured shapes take their measured time,
  // copies run at the measured copy rate, and cuDNN attention (torch's default SDPA backend on
  // the GPUs the tables were made on) at the measured SDPA rate. A preset names a table measured
  // at its board power (the lent machines ran at their default limit, the presets' 700 W:
  // docs/gpu-runs/*/machine.txt), so a config's lower power limit scales the table's compute
  // rates as it scales the anchored ones (power_limit.h); copies keep theirs. Any other runtime
  // keeps the preset's fitted fractions: those carry what its published runs' kernels did.
  if (!hw.gpu.kernel_table.empty() && opt.torch_release != "unstated") {
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
    if (const double r = kt.sdpa_rate(double(m.d_model) / m.n_heads, s); r > 0 && opt.attention_cudnn)
      cc.attention_flops = r * power.clock_scale;
  }
  const double T = double(b) * s;
  const std::vector<Op> block_ops = block_forward_ops(m, b, s, param_bytes, opt.rmsnorm, opt.rope_fused, opt.swiglu_fused);
  const UnitCost block = unit_cost(block_ops, T * param_bytes * m.d_model, 0, cc);
  const std::vector<Op> embed_ops = embedding_forward_ops(m, b, s, param_bytes);
  const std::vector<Op> head_ops = head_forward_ops(m, b, s, param_bytes, opt.cross_entropy, opt.rmsnorm);
  const UnitCost embed = unit_cost(embed_ops, 0, 0, cc);
  const UnitCost head = unit_cost(head_ops,
                                  T * param_bytes * m.d_model, 0, cc);
  LossMemory loss = loss_memory(opt.cross_entropy, T, double(m.vocab), param_bytes);
  // fp32 logits the model returns and the loop keeps (runtime term fp32_logits_held): the
  // up-cast copy moves from the forward's transients to the model's output.
  const bool upcast_loss = is_fp32_upcast(opt.cross_entropy);
  const bool logits_held = opt.fp32_logits_held && upcast_loss;
  const double held_logits = logits_held ? 4.0 * T * double(m.vocab) : 0.0;
  loss.fwd_transient -= held_logits;
  // The KV cache the model returns (runtime term use_cache): every layer's K and V after the
  // rotary embedding, at n_kv_heads width (cached before any repeat_kv), in the activation dtype.
  const double kv_layer = opt.use_cache ? T * 2.0 * param_bytes * double(m.kv_dim()) : 0.0;
  // The model's output the loop keeps (SimInput::outputs_kept says how long), one block.
  const double output_bytes = held_logits + double(m.n_layers) * kv_layer;
  // Activations a block keeps (ac_policy.h): eager or compiled, plain, checkpointed or op-SAC.
  const bool compile = cfg.precision.compile;
  // The fp32 scores of eager attention (PlanOptions::attention_materialized): b·heads·s·s, or
  // the causal query blocks' share of it (attention_causal_blocks, shared/causal_blocks.h).
  const double score_elements = opt.attention_causal_blocks ? causal_block_score_elements(s) : double(s) * s;
  const double scores_bytes = opt.attention_materialized ? double(b) * m.n_heads * score_elements * 4.0 : 0.0;
  // shardcast-train's eager SwiGLU block (trainer/model/llama.cpp), counted to the byte by
  // trainer/microbench/bench_block_memory on tiny-2l, small-6l, llama3.2-1b and llama2-7b blocks
  // (with the query-block attention again on tiny-2l, small-6l and llama3.2-1b).
  // Per token, fp32: each RMSNorm keeps x², x·rsqrt(·) and its output (3d) plus the rsqrt (1);
  // q's contiguous copy for the bmm, k and v at n_heads width (repeat_interleave or the bmm's
  // copy) and the attention output (4d); the mid residual (d); SwiGLU's gate, silu, up and
  // product (4f). Per block: the causal blocks' softmax outputs (scores_bytes).
  const bool trainer_block = opt.attention_causal_blocks && m.mlp_type == MlpType::swiglu && !compile;
  // An eager RMSNorm's fp32 tensors (ops.h eager_norm_extra_saved_per_token): two per block, one
  // in the head.
  const double norm_extra = T * eager_norm_extra_saved_per_token(m, param_bytes, opt.rmsnorm, compile);
  // A fused q/k/v GEMM whose output attention keeps whole through v's view (runtime term
  // qkv_output_kept; ac_policy.h qkv_output_extra_saved_per_token), eager or compiled.
  const double qkv_extra = T * qkv_output_extra_saved_per_token(m, param_bytes, opt.qkv_output_kept);
  // torchao's tensorwise Float8Linear keeping its fp8-cast input instead of the input (runtime
  // term fp8_input_saved; ac_policy.h fp8_input_saving_per_token).
  const double fp8_input_saving =
      T * fp8_input_saving_per_token(m, param_bytes, opt.fp8_input_saved && cfg.precision.fp8 == Fp8Recipe::tensorwise);
  const double kept_plain =
      trainer_block ? T * 4.0 * (11.0 * m.d_model + 4.0 * double(m.ffn_dim) + 2.0) + scores_bytes
                    : block_kept_bytes(m, T, param_bytes, BlockAc::none, compile, opt.gqa_repeated) +
                          2.0 * norm_extra + qkv_extra + scores_bytes - fp8_input_saving;
  const double kept_ckpt = block_kept_bytes(m, T, param_bytes, BlockAc::checkpointed, compile);
  const double kept_sac =
      block_kept_bytes(m, T, param_bytes, BlockAc::selective_op, compile, false, opt.sac_attention_saved());
  const SacRecompute sac = selective_op_recompute(m, block_ops, cc, opt.sac_attention_saved());
  const double ckpt_recompute_s = checkpointed_recompute_time(block_ops, cc, opt.recompute_early_stop);

  // Communication.
  CommContext comm;
  comm.intra_node_bandwidth = hw.node.intra_node_bandwidth;
  comm.inter_node_bandwidth = effective_inter_node_bandwidth(cfg, hw);
  comm.intra_node_latency = hw.node.intra_node_latency;
  comm.inter_node_latency = hw.node.inter_node_latency;
  comm.gpus_per_node = gpn;
  comm.eff = eff;
  const CommGroup shard_group{Ns, std::max(1, (Ns + gpn - 1) / gpn)};
  // Replica groups: one rank per shard group; a shard group smaller than a node puts several
  // of a replica group's ranks on one node.
  const int replica_ranks_per_node = Ns >= gpn ? 1 : std::max(1, gpn / Ns);
  const CommGroup replica_group{R, std::max(1, R / replica_ranks_per_node)};
  const bool no_shard = strategy == ShardingStrategy::no_shard || Ns == 1;
  const CommGroup reduce_group = no_shard ? CommGroup{W, cfg.cluster.nodes} : shard_group;

  // Units: [embedding, blocks..., head].
  const std::vector<int64_t> unit_params = m.fsdp_unit_params();
  const int U = int(unit_params.size());
  SimInput in;
  in.units.resize(U);
  in.grad_accum = GA;
  // no_shard as well: a runtime that syncs every micro-step all-reduces every micro-step
  // (DDP without no_sync(); shardcast-train's post_backward), one that does not, once.
  in.sync_every_micro_step = opt.sync_every_micro_step;
  in.all_reduce_grads = no_shard;
  in.max_inflight_all_gathers = std::max(1, cfg.parallelism.max_inflight_all_gathers);
  in.overlap_compute_slowdown = eff.overlap_compute_slowdown;
  // Host time. With the fitted fractions it is in series, as it was fitted: unit_overhead_s per
  // unit and pass, step_overhead_s per step (host work competes for the cores too). A plan a
  // measured kernel table times is the device's work alone, and the host, issuing ahead of the
  // device, shows only where its own time for the step is longer: the step is the longer of the
  // two (docs/cost-model.md §2.2).
  const bool device_timed = cc.kernels != nullptr;
  const double unit_host_s = device_timed ? 0.0 : eff.unit_overhead_s;
  in.step_overhead_s = device_timed ? 0.0 : time_share * eff.step_overhead_s;
  in.outputs_kept = opt.outputs_kept;
  in.loss_in_model = opt.loss_in_model;
  in.record_timeline = opt.timeline;
  // GPUs run PyTorch's caching allocator: its reserved memory is replayed from the step's
  // allocation sequence (allocation_trace.h). CPU runs use a counting allocator.
  const bool caching_allocator = hw.gpu.bf16_flops > 0 || hw.gpu.fp16_flops > 0;
  in.record_allocations = caching_allocator;
  const AcMode ac = cfg.activation_checkpointing.mode;
  const bool fp8_gather = cc.fp8_weights_precast;
  int checkpointed_blocks = 0;
  double sac_recompute_flops = 0;  // op-SAC GEMMs recomputed per micro-step  // FLOP
  // Autograd's unsharded gradient (param_dtype); without sync on every micro-step each unit
  // keeps its sum from the first micro-step to the last one's reduction, in the runtime's
  // dtype for it (docs/cost-model.md §3).
  const double unsynced_bytes = opt.unsynced_gradient_dtype == "fp32"           ? 4.0
                                : opt.unsynced_gradient_dtype == "reduce_dtype" ? reduce_bytes
                                                                                : param_bytes;
  // An eager Llama block tensor by tensor (block_tensor_sequence.h), per policy, where the
  // runtime runs torchtitan's block program eagerly with the ops it lists (eager norm and RoPE,
  // no fp8): its peaks are the unit's transients and the replay sees its holes. Other blocks
  // keep their lumps.
  const bool eager_program = opt.torchtitan_block_program && !compile && m.mlp_type == MlpType::swiglu && !trainer_block &&
                             opt.rmsnorm == NormImpl::eager && !opt.rope_fused && !opt.swiglu_fused &&
                             !opt.attention_materialized && !opt.qkv_output_kept && !cfg.precision.fp8_on();
  std::array<BlockTensorSequence, 3> block_seq;  // by BlockAc
  std::vector<int> block_seq_of(size_t(U), -1);
  // Device memory traffic runs at this rate: the preset's, or the measured table's copy rate.  // B/s
  const double copy_bw = hw.gpu.hbm_bandwidth * cc.eff.hbm_eff;
  // FSDP2's copies charged as device work (below): where a measured kernel table times the plan.
  const bool fsdp2_copies = device_timed && opt.per_parameter_copies && strategy != ShardingStrategy::no_shard;
  for (int i = 0; i < U; ++i) {
    SimUnit& u = in.units[i];
    const double P = double(unit_params[i]);
    const UnitCost& c = i == 0 ? embed : (i == U - 1 ? head : block);
    const int blk = i - 1;
    const bool is_block = i > 0 && i < U - 1;
    u.name = i == 0 ? "embedding" : (i == U - 1 ? "head" : "block " + std::to_string(blk));
    const bool ckpt = is_block && (ac == AcMode::full ||
                                   (ac == AcMode::selective &&
                                    cfg.activation_checkpointing.block_checkpointed(blk)));
    const bool op_sac = is_block && ac == AcMode::selective_op;
    u.fwd_s = time_share * (c.fwd_s + unit_host_s);
    u.bwd_s = time_share * (c.bwd_s + (ckpt ? ckpt_recompute_s : 0) + (op_sac ? sac.time_s : 0) + unit_host_s);
    checkpointed_blocks += ckpt;
    sac_recompute_flops += op_sac ? sac.flops : 0;
    if (is_block) {
      // torchao's Float8Linear keeping each Linear's fp8-cast weight for backward (runtime term
      // fp8_weight_saved): 1 byte per Linear weight (the block's parameters but its two norm
      // vectors), kept by a plain block from forward to backward and by a checkpointed or op-SAC
      // block while its recompute runs (the cast is not on torchtitan's SAC save list).
      const double fp8_weights = cfg.precision.fp8_on() && opt.fp8_weight_saved ? P - 2.0 * m.d_model : 0.0;
      u.saved_bytes = ckpt ? kept_ckpt : (op_sac ? kept_sac : kept_plain + fp8_weights);
      // With the KV cache returned, the K and V a block saves for attention are the cache's
      // tensors, counted once, in the output: a plain block's k and v at kv width (not when
      // they are repeated to n_heads first: attention then saves the copies), an op-SAC
      // block's v (wv's output; its k after rotary is recomputed). A checkpointed block keeps
      // neither.
      if (!ckpt && !trainer_block) u.saved_bytes -= op_sac ? 0.5 * kv_layer : (opt.gqa_repeated ? 0.0 : kv_layer);
      // Backward working set: the recomputed tensors of a checkpointed / op-SAC block.
      u.bwd_transient_bytes = ckpt ? kept_plain + fp8_weights : (op_sac ? std::max(0.0, kept_plain - kept_sac) + fp8_weights : 0);
      // Forward transients beside what the block keeps.
      // - The trainer's block (bench_block_memory, fp32, s = 32..512 on small-6l, tiny-2l and
      //   llama3.2-1b): 2d per token above kept + output at the forward peak, which falls in
      //   the MLP (a query block's scores are smaller); without grad (checkpointed) the peak
      //   is 7d + 4f per token above the output. Past that, at long s one query block's
      //   scores and softmax (2·b·heads·rows·s, not measured here) can be larger: the larger
      //   of the two is taken.
      // - Other eager attention: one more (b, heads, s, s) tensor (the masked scores) beside
      //   the kept softmax output (a checkpointed block keeps neither: two such tensors).
      // In backward the softmax/scores gradients add one scores-sized tensor.
      if (eager_program) {
        const BlockAc policy = ckpt ? BlockAc::checkpointed : (op_sac ? BlockAc::selective_op : BlockAc::none);
        BlockTensorSequence& q = block_seq[size_t(policy)];
        if (q.seq.empty() && q.kept_bytes == 0) {  // once per policy (refused: tried per block)
          BlockProgram prog;
          prog.tokens = T;
          prog.act_bytes = param_bytes;
          prog.ac = policy;
          prog.gqa_repeated = opt.gqa_repeated;
          prog.sac_attention_saved = opt.sac_attention_saved();
          q = eager_block_sequence(m, prog, u.saved_bytes);
        }
        if (!q.seq.empty()) {
          u.fwd_transient_bytes = q.fwd_transient;
          u.bwd_transient_bytes = q.bwd_transient;
          block_seq_of[size_t(i)] = int(policy);
        }
      }
      if (trainer_block) {
        const double block_scores = 2.0 * b * m.n_heads * double(causal_query_block_rows(s)) * s * 4.0;
        u.fwd_transient_bytes =
            ckpt ? std::max(T * 4.0 * (7.0 * m.d_model + 4.0 * double(m.ffn_dim)), block_scores)
                 : std::max(T * 4.0 * 2.0 * m.d_model, block_scores);
      } else if (opt.attention_materialized) {
        u.fwd_transient_bytes = (ckpt ? 2.0 : 1.0) * scores_bytes;
      }
      u.bwd_transient_bytes += scores_bytes;
    } else {
      u.saved_bytes = c.saved_bytes;
      // The trainer's final RMSNorm keeps x² and x·rsqrt(·) besides its output (see above).
      if (trainer_block && i == U - 1) u.saved_bytes += T * 4.0 * 2.0 * m.d_model;
      else if (i == U - 1) u.saved_bytes += norm_extra;
    }
    if (i == U - 1) {
      u.fwd_transient_bytes = loss.fwd_transient;
      u.bwd_transient_bytes = loss.bwd_transient;
      u.output_bytes = output_bytes;
    }
    // fp8 all-gather: a block's Linear weights (all but its two norm vectors) at 1 byte.
    const double norm_params = is_block ? 2.0 * m.d_model : 0.0;
    u.gathered_bytes = fp8_gather && is_block ? (P - norm_params) * 1.0 + norm_params * param_bytes
                                              : P * param_bytes;
    // Unsharded fp32 parameters computed in fp32 (no_shard, no mixed precision): the unit's
    // "gathered" parameters are the fp32 master itself, no copy (FSDP's NO_SHARD uses the flat
    // parameter directly; shardcast-train aliases it, trainer/fsdp/fsdp.cpp issue_gather).
    if (no_shard && param_bytes == 4) u.gathered_bytes = 0;
    u.grad_bytes = P * (!in.sync_every_micro_step && GA > 1 ? unsynced_bytes : param_bytes);
    // Sharded fp32 gradient (the param's dtype; FSDP casts the reduced gradient back).
    if (opt.grads_freed_between_steps) u.shard_grad_bytes = master_bytes * P / (no_shard ? 1 : Ns);
    u.reduce_buffer_bytes = reduce_bytes != param_bytes || opt.reduce_copies_gradient ? P * reduce_bytes : 0;
    // The reduce-scatter's own output buffer (runtime term reduce_output = "buffer").
    if (opt.reduce_output_buffer) u.reduce_buffer_bytes += P * reduce_bytes / (no_shard ? 1 : Ns);
    if (!no_shard) {
      u.all_gather_s = collective_time(Collective::all_gather, u.gathered_bytes, shard_group, comm);
      u.reduce_s = collective_time(Collective::reduce_scatter, P * reduce_bytes, shard_group, comm);
      if (R > 1)
        u.replica_all_reduce_s =
            collective_time(Collective::all_reduce, P * reduce_bytes / Ns, replica_group, comm);
      // shard_grad_op keeps units gathered from forward into backward; so does the last unit
      // (backward starts with it: FSDP1 root, FSDP2 last module).
      // With opt.root_unit the embedding belongs to the root unit, kept gathered likewise.
      u.reshard_after_forward =
          strategy != ShardingStrategy::shard_grad_op && i != U - 1 && !(i == 0 && opt.root_unit);
    } else {
      u.reduce_s = collective_time(Collective::all_reduce, P * reduce_bytes, reduce_group, comm);
      u.reshard_after_forward = false;
    }
    // On a GPU a world of one still reduces when the reduction has buffers: the gradient is cast
    // into reduce_dtype and the reduce-scatter over a group of one is a device copy into its
    // output (NCCL on one rank; shardcast-train's SelfCollectives), on the reduce stream: device
    // memory traffic, read and written once each (docs/cost-model.md §5.4). shardcast-train's CPU
    // path takes a group of one as the identity (trainer/fsdp/fsdp.cpp post_backward: out = red).
    // Where FSDP2's copies are charged (below), the cast is their reduce-scatter copy-in.
    if (W == 1 && caching_allocator && strategy != ShardingStrategy::no_shard && u.reduce_buffer_bytes > 0) {
      const double cast = reduce_bytes != param_bytes && !fsdp2_copies ? P * (param_bytes + reduce_bytes) : 0.0;
      u.reduce_s = time_share * (cast + 2.0 * P * reduce_bytes) / copy_bw;
    }
    // FSDP2's copy-in and copy-out around each collective (fsdp_copies.h), charged where a
    // measured kernel table times the plan (the fitted fractions carry them), at the table's copy
    // rate. They are memory-bound kernels that take the SMs compute would run on, so they are in
    // series with compute whichever stream issues them (the stack probes' kernel times add up to
    // their wall time: no two kernels ran at once; docs/validation.md). A unit that reshards
    // after forward gathers again in backward, in a group of one as well. A group of one's
    // reduction (above) keeps only its device copy on the reduce stream, where the timeline
    // takes its buffers' lifetimes.
    if (fsdp2_copies) {
      const FsdpCopyBytes cp = per_parameter_copy_bytes(P, u.gathered_bytes, Ns, param_bytes, reduce_bytes);
      const bool regather = strategy != ShardingStrategy::shard_grad_op && i != U - 1 && !(i == 0 && opt.root_unit);
      const double gather = cp.gather_compute + cp.gather_stream;  // bytes
      // The reduce side per micro-step: a copy-in and copy-out on each when every micro-step
      // reduces; where only the last does, the step's unsharded gradient sum and its one
      // reduction (fsdp_copies.h), spread over the micro-steps the simulator runs alike.
      const double reduce = !in.sync_every_micro_step && GA > 1
                                ? unsynced_step_reduce_bytes(P, GA, Ns, param_bytes, reduce_bytes, int(unsynced_bytes)) / GA
                                : cp.reduce_compute + cp.reduce_stream;  // bytes
      const double fwd_copy = gather / copy_bw;                                 // s
      const double bwd_copy = ((regather ? gather : 0.0) + reduce) / copy_bw;  // s
      u.fwd_s += time_share * fwd_copy;
      u.bwd_s += time_share * bwd_copy;
      u.copy_s = fwd_copy + bwd_copy;
    }
  }
  const StateMemory state = state_memory(m.total_params(), no_shard ? 1 : Ns, master_bytes);
  const double shard_elems = double(m.total_params()) / (no_shard ? 1 : Ns);
  // Clipping and the AdamW update over the local shard as the runtime runs them
  // (optimizer_step.h): accesses of master_bytes per element at the copy bandwidth; where a
  // measured kernel table times this runtime and the step is clip_grad_norm_ then the fused
  // AdamW, the table's measured step of that dtype at the shard's mean tensor size (one tensor
  // per parameter under FSDP2, one flat parameter per unit under FSDP1) instead.
  in.optimizer_s = time_share * optimizer_accesses(opt.adamw_update, opt.grad_clip) * master_bytes * shard_elems / copy_bw;
  if (device_timed && opt.adamw_update == AdamwUpdate::fused && opt.grad_clip == GradClip::norm_and_scale) {
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

  SimResult sim = simulate_fast(in);

  Prediction p;
  // Static: parameters and optimizer states always; the gradients too unless the loop frees
  // them between steps, in which case the timeline places them (kMemShardedGrads).
  const bool grads_static = !opt.grads_freed_between_steps;
  const double static_bytes = state.parameters + state.optimizer_states + (grads_static ? state.gradients : 0.0);
  p.memory.push_back({"sharded_parameters", state.parameters});
  p.memory.push_back({"sharded_gradients", grads_static ? state.gradients : sim.mem_at_peak[kMemShardedGrads]});
  p.memory.push_back({"optimizer_states", state.optimizer_states});
  for (int c = 0; c < kMemCategories; ++c)
    if (c != kMemShardedGrads) p.memory.push_back({mem_category_name(c), sim.mem_at_peak[c]});
  p.mem_peak_bytes = static_bytes + sim.mem_peak_bytes;
  AllocatorInputs alloc;
  alloc.allocated_peak = p.mem_peak_bytes;
  alloc.fragmentation = eff.fragmentation;
  const double runtime = eff.runtime_overhead_gib * double(1ull << 30);
  alloc.outside_allocator = runtime;
  const bool over_by_allocated = opt.replay_within_bytes > 0 && p.mem_peak_bytes + runtime > opt.replay_within_bytes;
  if (caching_allocator && !over_by_allocated) {
    const double shard = 1.0 / double(no_shard ? 1 : Ns);
    TraceInputs ti;
    for (int64_t P : unit_params) {
      ti.param_shard_bytes.push_back(master_bytes * double(P) * shard);
      ti.optimizer_bytes.push_back(master_bytes * double(P) * shard);
      ti.static_grad_bytes.push_back(grads_static ? master_bytes * double(P) * shard : 0.0);
    }
    ti.record_stream = opt.record_stream_buffers;
    ti.optimizer_state_at_init = opt.adamw_state_at_init;
    // torchtitan's eager blocks tensor by tensor (block_tensor_sequence.h).
    for (int i = 0; i < U; ++i)
      if (block_seq_of[size_t(i)] >= 0) {
        ti.sequences.resize(size_t(U));
        ti.sequences[size_t(i)] = block_seq[size_t(block_seq_of[size_t(i)])].seq;
      }
    // The fp32 up-cast loss tensor by tensor (allocation_trace.h): its 4·tokens·vocab blocks
    // are the largest of the step, and where they land decides the segments' high-water mark.
    if (upcast_loss) {
      const SimUnit& h = in.units[size_t(U - 1)];
      ti.sequences.resize(size_t(U));
      ti.sequences[size_t(U - 1)] = fp32_upcast_loss_sequence(T * double(m.vocab), param_bytes, h.saved_bytes - loss.saved, logits_held,
                                                               opt.cross_entropy);
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
      alloc.replayed_reserved = replay_allocation_trace(trace, ac_cfg).peak_reserved;
      const double here = std::max(p.mem_peak_bytes, alloc.replayed_reserved);
      p.mem_reserved_range_bytes = {here, here};
      if (opt.reserved_range) {
        ac_cfg.expandable_segments = !opt.expandable_segments;
        const double other = std::max(p.mem_peak_bytes, replay_allocation_trace(trace, ac_cfg).peak_reserved);
        p.mem_reserved_range_bytes = {std::min(here, other), std::max(here, other)};
      }
    } catch (const std::length_error&) {
      assert(p.mem_peak_bytes > hw.gpu.hbm_bytes);
      alloc.replayed_reserved = 0;
      p.mem_reserved_range_bytes = {0, 0};
    }
  }
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
    auto ops = op_breakdown(cfg, opt, cc, UnitOps{embed_ops, block_ops, head_ops}, in, sim, time_share, unit_host_s);
    ops[size_t(OpCategory::other)] += p.host_bound_s;  // the host's time beyond the device's
    p.op_seconds.assign(ops.begin(), ops.end());
  }
  p.tokens_per_s_per_gpu = T * GA / p.step_time_s;
  p.flops_per_token = m.flops_per_token(s);
  p.mfu = p.tokens_per_s_per_gpu * p.flops_per_token / rated_peak;
  // HFU: the published convention (a checkpointed block adds its forward, 2N_block + 4·d·s
  // per token) plus the GEMMs op-level SAC recomputes.
  const double recompute_fraction = m.n_layers > 0 ? double(checkpointed_blocks) / m.n_layers : 0;
  p.hfu = p.tokens_per_s_per_gpu *
          (m.hardware_flops_per_token(s, recompute_fraction) + sac_recompute_flops / T) / rated_peak;
  p.runtime = opt.runtime;
  p.attention = opt.attention_cudnn                         ? "cudnn"
                : opt.attention_causal_blocks               ? "eager_causal_blocks"
                : opt.attention_materialized                ? "eager"
                : opt.attention_kernel != "flash2"          ? opt.attention_kernel
                                                            : "flash";
  p.kernel_table = cc.kernels ? hw.gpu.kernel_table : "";
  p.power_limit_w = power.limit_w;
  p.board_power_w = power.board_w;
  p.clock_scale = power.clock_scale;
  // The cross-validated band of this configuration's regime (error_band.h, configs/bands.toml),
  // or the preset's prior for hardware no published run measured.
  const BandChoice band = choose_band(shipped_bands(), band_regime(cfg, hw.name, opt.framework.empty() ? opt.runtime : opt.framework),
                                      eff.error_band_rel, eff.error_band_runs);
  p.error_band_rel = band.rel_1sigma;
  p.error_band_note = band.note;
  if (opt.reference_level > 0) {
    // The stack's level from its own measured run (reference_run.h): the step as a whole.
    const ReferenceBand& rb = shipped_bands().reference;
    if (!(rb.rel_1sigma > 0))
      throw ConfigError((config_dir() / "bands.toml").string(), "reference_run",
                        "no reference-run band: written by `shardcast validate --crossval ... --write-bands`");
    p.step_time_s /= opt.reference_level;
    p.host_bound_s /= opt.reference_level;
    p.tokens_per_s_per_gpu *= opt.reference_level;
    p.mfu *= opt.reference_level;
    p.hfu *= opt.reference_level;
    p.reference_level = opt.reference_level;
    p.reference_run = opt.reference_run;
    p.error_band_rel = rb.rel_1sigma;
    p.error_band_note = fmt::format(
        "±{:.0f}% (1σ of a run's level carried to the other runs of its source, GPU and runtime: {} pairs in {} "
        "groups, leave-one-source-out); x{:.3f}: reference run {}",
        100 * rb.rel_1sigma, rb.n_pairs, rb.n_groups, opt.reference_level, opt.reference_run);
  }
  p.timeline = std::move(sim.timeline);
  return p;
}

}  // namespace shardcast::planner
