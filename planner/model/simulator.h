// Step simulator: discrete events on one rank's compute stream and communication streams,
// in FSDP's order, for one optimizer step (all micro-steps and the optimizer).
//
// What it is: a list-scheduling simulator. Every task sits on a lane (compute, comm for the
// shard group's all_gather / reduce_scatter, comm_inter for HSDP's replica all_reduce) in
// program order, starts when the previous task of its lane and its dependencies are done, and
// runs for its duration — compute tasks progress at 1/(1 + overlap_compute_slowdown) while any
// communication runs. Every task allocates and frees memory at its start and end, so step
// time, exposed communication and the allocated peak (with its breakdown) are read off the
// simulated timeline. All ranks are symmetric, so one rank is simulated.
// What it is not: the cost of each task (ops.h, comm_model.h build them in plan.cpp).
// Pure function of its input, thread-safe.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "shared/prediction.h"

namespace shardcast::planner {

// Memory categories read off the timeline (names used in Prediction::memory).
enum MemCategory : int {
  kMemGatheredParams = 0,  // unsharded parameters of gathered units (param_dtype)
  kMemUnshardedGrads,      // a unit's unsharded gradient before reduce-scatter
  kMemReduceBuffers,       // reduce_dtype copies fed to reduce-scatter / all-reduce
  kMemActivations,         // tensors saved for backward
  kMemTransient,           // working memory (recompute, logits and loss, optimizer temps)
  kMemShardedGrads,        // sharded fp32 gradients when they are freed between steps
  kMemOutputs,             // the model's output the training loop keeps (SimInput::outputs_kept)
  kMemCategories
};

const char* mem_category_name(int c);

// How long the training loop keeps the model's output (its fp32 logits, its KV cache: what
// SimUnit::output_bytes counts) — the runtime term `outputs_kept`:
//   backward     — until the micro-step's backward has run (a `del`, or the micro-step's
//                  function returns);
//   next_forward — until the next micro-step's forward returns: the loop variable is rebound
//                  only then (`pred = model(x)` in the loop body), so the step's last output
//                  lives through the optimizer step into the next step's first forward;
//   step_end     — as next_forward within the step; the last micro-step's output lives through
//                  the optimizer step and is freed when the step's function returns.
enum class OutputsKept { backward, next_forward, step_end };
const char* to_string(OutputsKept k);
bool parse_outputs_kept(const std::string& s, OutputsKept& out);  // "backward" | "next_forward" | "step_end"

// One FSDP unit as the simulator sees it (durations already include recompute etc.).
struct SimUnit {
  std::string name;               // "embedding", "block 0", ..., "head"
  double fwd_s = 0;               // forward compute  // s
  double bwd_s = 0;               // backward compute incl. recompute  // s
  // Of fwd_s + bwd_s, before time_share: FSDP's copies on the compute stream (fsdp_copies.h);
  // read by the op breakdown only.  // s
  double copy_s = 0;
  double all_gather_s = 0;        // 0 = no all_gather needed  // s
  double reduce_s = 0;            // reduce_scatter (sharded) or all_reduce (no_shard)  // s
  double replica_all_reduce_s = 0;  // HSDP replica all_reduce  // s
  bool reshard_after_forward = true;  // false: kept gathered from forward into backward
  double gathered_bytes = 0;      // bytes
  double grad_bytes = 0;          // unsharded gradient  // bytes
  double reduce_buffer_bytes = 0; // bytes
  double saved_bytes = 0;         // activations kept for backward  // bytes
  double fwd_transient_bytes = 0; // bytes
  double bwd_transient_bytes = 0; // bytes
  // Sharded gradient allocated when the unit's gradient first reaches its shard (end of its
  // reduction, or of its backward without one) and kept to the end of the step: optimizers
  // that zero_grad(set_to_none=True) free them between steps. 0 = counted as static state.
  double shard_grad_bytes = 0;    // bytes
  // The unit's part of the model's output that the training loop keeps (the head: the fp32
  // logits the model returns, every layer's K and V when it returns its KV cache), allocated at
  // the start of the unit's forward and freed as SimInput::outputs_kept says.
  double output_bytes = 0;        // bytes
};

struct SimInput {
  std::vector<SimUnit> units;     // execution order of forward
  int grad_accum = 1;
  bool sync_every_micro_step = true;  // false: no reduction on non-final micro-steps
  bool all_reduce_grads = false;  // no_shard: reduce_s is an all_reduce on the final micro-step
  int max_inflight_all_gathers = 2;
  double optimizer_s = 0;         // s
  double optimizer_transient_bytes = 0;  // bytes
  // An all-gather of the updated parameters after the optimizer step, in series (DeepSpeed ZeRO
  // stage 1: each rank steps its partition, then all_gather_dp_groups refills the whole 16-bit
  // parameters; zero_memory.h). 0 = none (FSDP gathers at the next forward).  // s
  double post_step_all_gather_s = 0;
  double overlap_compute_slowdown = 0;
  double step_overhead_s = 0;     // s
  OutputsKept outputs_kept = OutputsKept::backward;  // lifetime of SimUnit::output_bytes
  // The model's forward computes the loss (transformers with labels): the loop lets its
  // previous output go when the head's forward ends, not as it starts.
  bool loss_in_model = false;
  bool record_timeline = false;
  // Fill SimResult::allocations and compute_ends (the allocation sequence the caching
  // allocator model replays: allocation_trace.h).
  bool record_allocations = false;
  // false: the times only, SimResult's memory read-outs left 0 (simulate_fast's extrapolating
  // run, whose memory is not read). Overrides record_allocations.
  bool record_memory = true;
};

// One memory delta of the timeline: `bytes` > 0 allocates, < 0 frees, at time `t` by a task
// of `lane` (0 compute, 1 all_gather / reduce comm, 2 replica comm) for unit `unit`
// (-1 optimizer).
struct SimAlloc {
  double t = 0;       // s
  int unit = -1;
  int cat = 0;        // MemCategory
  int lane = 0;
  bool reduce = false;  // made by a reduction task (its stream is the reduce stream)
  bool backward = false;  // made by a unit's backward compute task
  double bytes = 0;   // bytes
};

struct SimResult {
  double step_time_s = 0;
  double compute_s = 0;        // compute-lane busy time  // s
  double comm_s = 0;           // busy time of the comm lanes  // s
  double exposed_comm_s = 0;   // compute lane idle, waiting on communication  // s
  double optimizer_s = 0;
  double mem_peak_bytes = 0;   // transient (timeline) peak, excluding static state  // bytes
  std::array<double, kMemCategories> mem_at_peak{};  // bytes by category at that peak
  // Each category's own maximum over the step (at different instants): what an allocator that
  // never reused one kind's freed blocks for another kind would hold.  // bytes
  std::array<double, kMemCategories> mem_max_by_category{};
  std::vector<TimelineEvent> timeline;
  // With SimInput::record_allocations: every memory delta in time order (frees before
  // allocations at equal times), and the end time of every compute task.
  std::vector<SimAlloc> allocations;
  std::vector<double> compute_ends;  // s
};

// The reference: every micro-step simulated.
SimResult simulate(const SimInput& in);
// Fast path used by plan(): micro-steps after the second repeat the same pattern, so for
// grad_accum > 3 (and no timeline) it simulates 2 and 3 micro-steps and extrapolates the
// times linearly; the peak memory recurs every micro-step. Tested against simulate().
SimResult simulate_fast(const SimInput& in);

}  // namespace shardcast::planner
