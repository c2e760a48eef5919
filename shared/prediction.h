// Prediction: what the planner says about one configuration. JSON, "schema": 1.
//
// What it is: the memory breakdown per rank, the step-time decomposition, throughput, MFU/HFU,
// the error band and (optionally) the simulated timeline. What it is not: how it is computed
// (planner/). Plain value type, thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardcast {

struct MemoryComponent {
  std::string name;   // e.g. "parameters", "gradients", "optimizer_states", "activations"
  double bytes = 0;   // at the allocated peak  // bytes
};

// One pipeline stage's memory (pp > 1): the rank's peak, its allocator's reserved estimate and
// what nvidia-smi shows, read like Prediction's own.  // bytes
struct StageMemory {
  // "first" | "last": the first pipeline rank (the embedding, the most micro-batches in flight;
  // under ZBVZeroBubble also the head) or the last (the head and its loss; under ZBVZeroBubble
  // neither end).
  std::string stage;
  double peak_bytes = 0;           // allocated peak
  double reserved_bytes = 0;       // torch max_memory_reserved estimate
  double device_total_bytes = 0;   // reserved + outside the allocator
  // The reserved estimate with expandable segments off and on, as Prediction's ({0, 0}: not replayed).
  std::pair<double, double> reserved_range_bytes{0, 0};
};

struct TimelineEvent {
  std::string name;   // e.g. "fwd block 3", "all_gather block 4"
  std::string lane;   // "compute" | "comm" (| "comm_inter" for HSDP replica all-reduce)
  double start_s = 0;
  double duration_s = 0;
  int unit = -1;      // FSDP unit index, -1 = none
};

struct Prediction {
  int schema = 1;
  std::string runtime;                  // runtime profile predicted for (configs/runtimes/)
  // The attention it was timed for: the runtime term attention (flash | flash_triton | eager |
  // eager_causal_blocks), or "cudnn" where the runtime's SDPA runs cuDNN attention on this GPU.
  std::string attention;
  // The measured kernel table (gpu.kernel_table, configs-relative) that timed its kernels, for a
  // runtime of the table's torch release; "" = the preset's fitted fractions did.
  std::string kernel_table;
  // Memory per rank.
  std::vector<MemoryComponent> memory;  // components at the allocated peak  // bytes
  double mem_peak_bytes = 0;            // allocated peak read off the timeline  // bytes
  double mem_reserved_bytes = 0;        // allocator reserved estimate (torch max_memory_reserved)  // bytes
  // The reserved estimate with expandable segments off and on (the caching allocator model,
  // planner/model/allocator/allocation_trace.h): the range when a run's allocator setting is not known.
  // {0, 0} where no caching allocator is modelled (CPU).  // bytes
  std::pair<double, double> mem_reserved_range_bytes{0, 0};
  double mem_device_total_bytes = 0;    // reserved + outside the allocator (nvidia-smi)  // bytes
  double mem_capacity_bytes = 0;        // device memory  // bytes
  bool fits = true;
  std::string overflow_component;       // largest component when it does not fit
  // Time per optimizer step.
  double step_time_s = 0;
  double compute_s = 0;                 // compute-stream busy time
  double comm_s = 0;                    // comm-stream busy time
  double exposed_comm_s = 0;            // time the compute stream waited on communication
  double optimizer_s = 0;
  // How much longer the host's own time for the step is than the device's, in a plan a measured
  // kernel table times (its host time overlaps the device's work: docs/cost-model.md §2.2);
  // 0 = the device's work sets the step.  // s
  double host_bound_s = 0;
  // The step by op category (shared/op_category.h; planner/model/op_breakdown.h), indexed by
  // OpCategory; adds up to step_time_s. Empty = not computed.  // s
  std::vector<double> op_seconds;
  // The device mesh (shared/train_config.h mesh_label; "" = 1-D FSDP) and what its dimensions add to the
  // step: TP's and CP's collectives the compute stream waits for, the pipeline's bubble and its
  // sends between stages, and what the plan says of where each dimension sits.  // s
  std::string mesh;
  // Its degrees, named as run.toml's [parallelism] keys (JSON mesh.dp_replicate … mesh.pp and, with
  // pp, mesh.pp_virtual_stages: the stages per pp rank the plan ran).
  int dp_replicate = 1, dp_shard = 1, tp = 1, cp = 1, pp = 1, pp_virtual_stages = 1;
  // The settings the plan ran its dimensions with, named as run.toml's keys (JSON mesh.tp_async,
  // mesh.pp_schedule, mesh.pp_microbatch with pp; mesh.cp_rotate with cp): which schedule a
  // pipeline plan is for is part of the answer.
  bool tp_async = false;
  std::string pp_schedule, cp_rotate;  // "" = the dimension is off
  int pp_microbatch = 1;
  double tp_exposed_s = 0, cp_exposed_s = 0, pp_bubble_s = 0, pp_send_s = 0;
  std::vector<std::string> mesh_notes;
  // With pp > 1: the memory of the first stage ("first"), the last ("last") and the busiest rank
  // of neither end ("middle", with pp >= 3 or under ZBVZeroBubble's V); the memory above is the
  // largest one's (every rank must fit). Empty without pp.
  std::vector<StageMemory> pp_stages;
  // Throughput.
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;                       // model FLOPs / peak
  double hfu = 0;                       // hardware FLOPs (with recompute) / peak
  double flops_per_token = 0;           // FLOP
  // Board power (planner/model/power_limit.h): the limit the GPU ran at, the power its peaks are
  // rated at (0, 0 = not stated by the preset) and the compute-rate factor that follows.  // W, W, —
  double power_limit_w = 0;
  double board_power_w = 0;
  double clock_scale = 1;
  // Error band: relative 1σ error of tokens/s, cross-validated per regime (planner/evidence/error_band.h).
  double error_band_rel = 0;
  // A reference run (planner/evidence/reference_run.h): its measured over predicted tokens/s, which the
  // throughput and step time above carry (0 = none), and its directory.
  double reference_level = 0;
  std::string reference_run;
  std::string error_band_note;          // what the band comes from, e.g. "±13% (1σ leave-one-source-out: …)"
  std::vector<TimelineEvent> timeline;  // one step of one rank (may be empty)
};

// The communication the compute stream waits for in one step: FSDP's (exposed_comm_s) and the
// mesh's TP and CP collectives and pipeline sends, each of which the step time includes. What
// "exposed" means in search, scale and the budget question.  // s
inline double exposed_communication_s(const Prediction& p) {
  return p.exposed_comm_s + p.tp_exposed_s + p.cp_exposed_s + p.pp_send_s;
}

void to_json(nlohmann::json& j, const Prediction& p);
void from_json(const nlohmann::json& j, Prediction& p);
void to_json(nlohmann::json& j, const TimelineEvent& e);
void from_json(const nlohmann::json& j, TimelineEvent& e);
// Chrome trace format (Perfetto / chrome://tracing) of the timeline.
nlohmann::json to_chrome_trace(const std::vector<TimelineEvent>& events);

}  // namespace shardcast
