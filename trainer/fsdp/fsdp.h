// FsdpModel: fully sharded data parallel Llama on c10d process groups and LibTorch autograd.
//
// What it is: one FlatUnit per FSDP unit ([embedding, block 0..L-1, final norm + head]); each
// holds this rank's flat padded fp32 master shard, its gradient shard and AdamW state. The
// forward gathers a unit's parameters (in param_dtype) through the autograd Function
// GatherFn, whose backward is the unit's post-backward: reduce-scatter (shard group) and, for
// hybrid_shard/no_shard, all-reduce (replicate group) of the unsharded gradient in
// reduce_dtype. Strategies:
//   full_shard     gather before forward, free after; re-gather in backward (pre-backward hook
//                  on the unit output), reduce-scatter after the unit's backward.
//   shard_grad_op  keep gathered parameters from forward to the unit's backward.
//   hybrid_shard   full_shard inside a shard group of hsdp_shard_size ranks, gradient shards
//                  all-reduced across shard groups.
//   no_shard       shard group of 1 (parameters replicated), gradients all-reduced.
// Freeing keeps the tensor objects autograd saved and resizes their storage to 0 bytes, then
// refills it in the pre-backward hook (writing through variable_data(), so autograd's
// version checks stay valid). Prefetch: before unit i's forward (backward) the gathers of
// units i+1.. (i−1..) are issued, at most max_inflight_all_gathers units in flight including
// the current one; decisions depend only on unit indices, so every rank issues collectives
// in the same order. Activation checkpointing wraps a block in CheckpointFn, which gathers,
// computes without saving activations, and in backward re-gathers and recomputes.
// Initial weights: from the seed (every rank builds one unit's full init at a time and keeps
// its chunk), or with FsdpOptions::initial_load_path from Hugging Face safetensors: global
// rank 0 reads each unit and broadcasts it over the world group, every rank keeps its slice
// (initial_load.h); either way no rank materializes more than one unit unsharded.
// Gradient accumulation (FsdpOptions::sync_every_micro_step): true (the default) = every
// backward reduces each unit's gradient (reduce-scatter; hybrid_shard/no_shard: all-reduce
// across replicas) and adds it into the fp32 gradient shard, so the shard accumulates the
// micro-steps and no unsharded gradient outlives its unit's post-backward (FSDP2's default:
// pytorch/pytorch@v2.5.0 torch/distributed/_composable/fsdp/fully_shard.py
// set_requires_gradient_sync, which torchtitan never turns off). false = with set_sync(false)
// the unsharded gradients are accumulated locally in fp32 (FlatUnit::acc, padded_numel per
// unit) and nothing is communicated; the next synced backward reduces the sum (FSDP1 no_sync).
// Reduction: the unit's unsharded gradient is cast to reduce_dtype (no copy when it already
// is: autograd's buffer is reduced in place), and for bf16/fp16 pre-divided by a power of two
// f ≈ √world and post-divided by world/f, as PyTorch FSDP1 does
// (pytorch/pytorch@v2.5.0 torch/distributed/algorithms/_comm_hooks/default_hooks.py,
// DefaultState._get_gradient_predivide_factor); fp32 sums, then divides by world (CPU
// numbers unchanged).
// GPU streams (side_stream.h): all-gathers run on NCCL's stream and the compute stream waits
// for each before use; each unit's reduce-scatter (and HSDP all-reduce, and the add into the
// gradient shard) is issued from a separate reduce-scatter stream after the unit's backward,
// and the compute stream waits for it only at the next unit's post-backward (at most one
// reduction in flight, FSDP2's scheme) or at wait_for_reductions(). On CPU the gathers are
// asynchronous c10d Works (prefetch above), and so are the reductions when
// FsdpOptions::max_inflight_reductions >= 1: each unit's reduce-scatter (no_shard: all-reduce)
// is issued in its post-backward and runs on Gloo's threads while backward continues, as
// PyTorch DDP overlaps its gradient buckets (pytorch/pytorch@v1.13.0
// torch/csrc/distributed/c10d/reducer.cpp); the oldest are waited, in issue order, beyond
// that many units in flight, and all of them before anything reads gradient shards.
// Tensor parallel (groups.tp of size tp > 1; model/tensor_parallel.h): every unit holds this tp
// rank's pieces of its parameters (model/llama.h unit_param_infos), FSDP-sharded over the shard
// group of the ranks with the same tp rank, as torchtitan's FSDP over the dp mesh of TP-sharded
// DTensors. Activations between units are sequence shards (B,T/tp,D); the embedding is
// vocab-parallel and forward() returns this rank's vocab columns of the logits (B,T,V/tp) for
// model/tensor_parallel.h vocab_parallel_loss. The replicated norm weights' gradients (partial:
// each rank saw its sequence shard) are all-reduced over tp in post-backward, before the
// data-parallel reduction; gradients are averaged over the dp_size() data-parallel ranks (ranks
// of a tp group share their batch); the clipping norm counts each replicated element once.
// What it is not: the training loop, data or metrics (train/), nor the reference path
// (model/llama.h ReferenceModel, which shares only the per-unit math).
// Threading: one FsdpModel per rank, used from that rank's thread; backward runs on the
// same thread (CPU autograd) or, on CUDA, on the autograd engine's device thread while the
// rank's thread waits in backward() (never both at once); collectives may complete on Gloo
// worker threads.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "shared/model_spec.h"
#include "shared/train_config.h"
#include "trainer/comm/collectives.h"
#include "trainer/comm/side_stream.h"
#include "trainer/fsdp/flat_unit.h"
#include "trainer/model/llama.h"

namespace shardcast::trainer {

struct FsdpOptions {
  ShardingStrategy sharding_strategy = ShardingStrategy::full_shard;
  int max_inflight_all_gathers = 2;         // >= 1; 1 = no prefetch
  // CPU (Gloo): units whose gradient reduction may be in flight after a post-backward, >= 0.
  // 0 = each unit's reduction completes inside its post-backward (the synchronous reference
  // path); k >= 1 = issued asynchronously, and after issuing one the oldest beyond k are
  // waited (and added into their gradient shards); all at wait_for_reductions(). Same values
  // either way (same operations on the same tensors; only when they are waited changes).
  // Ignored on CUDA, whose reductions always run on the reduce-scatter stream, one in flight.
  int max_inflight_reductions = 2;
  // Gradient accumulation: true = reduce every micro-step into the shard; false = keep an
  // unsharded fp32 sum (FlatUnit::acc) on non-final micro-steps (set_sync(false)).
  bool sync_every_micro_step = true;
  at::ScalarType param_dtype = at::kFloat;  // gather + compute
  at::ScalarType reduce_dtype = at::kFloat; // gradient reduction
  ActivationCheckpointingConfig activation_checkpointing;
  uint64_t seed = 0;                        // init
  // "" = init from the seed. Else a directory with model.safetensors + config.json (HF Llama,
  // as `shardcast-train export` writes): rank 0 reads it and broadcasts one unit at a time
  // (initial_load.h), so no rank holds more than one unit unsharded.
  std::string initial_load_path;
  // Where shards, gathered buffers and compute live: the groups' compute device. CPU on this
  // project's builds; a CUDA device with the NCCL path (SHARDCAST_WITH_NCCL), which this
  // project's CI does not run (tests/gpu/ runs it on a GPU machine).
  at::Device device = at::kCPU;
};

// Bytes of this rank's persistent training state.  // bytes
struct StateBytes {
  int64_t params = 0;      // fp32 master shards
  int64_t grads = 0;       // gradient shards while alive (FsdpModel: from a step's first reduction to zero_grad)
  int64_t optimizer = 0;   // AdamW exp_avg + exp_avg_sq
  int64_t total() const { return params + grads + optimizer; }
};

class FsdpModel {
 public:
  FsdpModel(const ModelSpec& m, const FsdpOptions& opts, ProcessGroups groups);
  FsdpModel(const FsdpModel&) = delete;
  FsdpModel& operator=(const FsdpModel&) = delete;
  ~FsdpModel();   // waits for a reduction still in flight (GPU) before its buffers go

  // (B,T) int64 -> logits (B,T,V) in param_dtype, with the FSDP autograd graph attached.
  // tp > 1: this rank's vocab columns (B,T,V/tp), starting at vocab_offset().
  at::Tensor forward(const at::Tensor& tokens);
  int tp_size() const { return groups_.tp->size(); }
  int64_t vocab_offset() const { return int64_t(spec_.vocab / tp_size()) * groups_.tp->rank(); }
  // false on non-final accumulation micro-steps: the next backward then keeps an unsharded
  // sum instead of reducing, unless opts.sync_every_micro_step (then every backward reduces).
  void set_sync(bool sync) { sync_ = sync; }
  // Unsharded fp32 accumulator bytes alive now (sync_every_micro_step = false between
  // micro-steps; 0 otherwise).  // bytes
  int64_t accumulator_bytes() const;

  // The compute stream waits for the last reduction in flight (GPU; no-op on CPU). Called by
  // everything that reads or writes gradient shards (clip, step, zero_grad, full_gradients).
  void wait_for_reductions();
  // Releases every gradient shard (FlatUnit::grad undefined, torch's
  // zero_grad(set_to_none=True)): between steps no gradient memory is held; a unit's shard is
  // allocated again when its first reduction of the next step lands (CPU) or is issued (GPU:
  // on the compute stream), and reads as zero until then. The train loop calls it after the
  // optimizer step (train/train_loop.cpp TrainLoop::step). Same values as zeroing in place.
  void zero_grad();
  // Global L2 norm of the gradient (all shards, padding is zero); clips to max_norm when
  // max_norm > 0. Returns the norm before clipping. Where the fused AdamW runs (CUDA, LibTorch
  // >= 2), the clipping scale is left pending and the next optimizer_step applies it in its own
  // pass (the kernel stores the clipped gradient back); anything else that reads the gradient
  // first (zero_grad, full_gradients, a second clip) applies it or drops it. Elsewhere it clips
  // in place here.
  double clip_grad_norm(double max_norm);
  void optimizer_step(const OptimizerConfig& o, double lr);   // AdamW on the local shards

  // Unsharded host (CPU) copies by HF name, gathered over the shard group and (tp > 1) the tp
  // group: the whole tensors, as the reference holds them (tests, export).  // fp32
  std::vector<std::pair<std::string, at::Tensor>> full_parameters();
  std::vector<std::pair<std::string, at::Tensor>> full_gradients();

  StateBytes state_bytes() const;
  int64_t gathered_bytes() const;      // unsharded parameter storage alive now  // bytes
  // Most units gathered or being gathered at the same time so far (sharded groups only):
  // bounded by max_inflight_all_gathers under full_shard/hybrid_shard.
  int peak_gathered_units() const { return peak_gathered_units_; }
  const std::vector<FlatUnit>& units() const { return units_; }
  const ProcessGroups& groups() const { return groups_; }
  const ModelSpec& spec() const { return spec_; }
  int optimizer_steps() const { return opt_step_; }
  void set_optimizer_steps(int n) { opt_step_ = n; }  // checkpoint resume (AdamW bias correction)

  // Used by the autograd Functions (fsdp.cpp); not for callers.
  at::Tensor wait_full(int unit);                          // issue if needed, wait, return full
  std::vector<at::Tensor> unit_weights(int unit, const at::Tensor& full) const;
  void pre_backward(int unit);
  void post_backward(int unit, at::Tensor grad_full);
  const Rope& rope() const { return rope_; }
  const SeqParallel* seq_parallel() const { return tp_size() > 1 ? &seq_parallel_ : nullptr; }

 private:
  void issue_gather(int unit);
  void post_forward(int unit);
  void reshard(int unit);              // free the unit's gathered storage
  void reshard_all();
  void finish_oldest_reduction();      // CPU overlap: wait, replicate all-reduce, add to grad
  std::vector<std::pair<std::string, at::Tensor>> gather_named(bool grads);
  void apply_pending_clip();  // multiplies the gradient by pending_clip_ and clears it
  // Allocates a released gradient shard (FlatUnit::grad undefined) as stale: at a unit's
  // first reduction of a step, or (zeros) for a reader when there was none.
  static void ensure_grad(FlatUnit& u);
  void zero_stale_grads();    // allocates released gradients, writes the zeros a stale one stands for
  void settle_grads();        // both: the gradient's values in its buffer, for a reader
  // grad += scale · reduced, or grad = scale · reduced when stale (the same values: 0 + s·x).
  static void add_reduced(FlatUnit& u, const at::Tensor& reduced, double scale);

  // The reduction issued by the last post-backward: its buffers (the unsharded gradient and
  // reduce_dtype copy, the reduced shard) stay referenced until the compute stream has
  // waited for `done`, so the caching allocator cannot reuse them while it runs.
  struct InflightReduction {
    std::vector<at::Tensor> keep;
    StreamMarker done;
  };

  // CPU overlap (max_inflight_reductions >= 1): a unit's reduction in flight, in issue order.
  // `work` is the shard group's reduce-scatter, or for no_shard the replicate all-reduce;
  // hybrid_shard issues its replicate all-reduce of `out` when the reduce-scatter is waited.
  // The tensors stay referenced until then (src: the unsharded gradient, red: its
  // reduce_dtype view/copy, out: the reduced shard in reduce_dtype).
  struct PendingReduction {
    int unit = 0;
    PendingWork work;
    bool replicate_after = false;
    at::Tensor src, red, out;
    double scale = 1.0;        // pre-divide / world, applied when added into FlatUnit::grad
  };

  // tp > 1: sum the replicated parameters' gradients in g (padded_numel) over the tp group.
  void reduce_replicated_over_tp(const FlatUnit& u, at::Tensor& g);

  ModelSpec spec_;
  FsdpOptions opts_;
  ProcessGroups groups_;
  SeqParallel seq_parallel_;  // tp > 1: the sequence-parallel collectives over groups_.tp
  std::vector<FlatUnit> units_;
  Rope rope_;
  int rope_len_ = 0;
  bool sync_ = true;
  int opt_step_ = 0;
  double pending_clip_ = 1.0;  // clip_grad_norm's scale not yet applied to the gradient (fused path)
  int peak_gathered_units_ = 0;
  SideStream reduce_scatter_stream_;
  std::unique_ptr<InflightReduction> inflight_;
  std::deque<PendingReduction> pending_;
};

at::ScalarType parse_dtype(const std::string& name);   // "fp32" | "bf16" | "fp16"

}  // namespace shardcast::trainer
