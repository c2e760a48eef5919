// Goodput: the fraction of wall time that becomes kept training progress when GPUs fail, and
// the checkpoint interval that maximizes it.
//
// What it is: the reliability profile (configs/reliability/*.toml: per-GPU interruption rate,
// restart time, storage write bandwidth, each with its source), the per-rank checkpoint size
// of a plan (sharded fp32 parameters + AdamW moments, as memory_model.h counts them), the time
// to save it, and Daly's (2006) expected-wall-time model of a job that checkpoints every τ
// seconds of work, fails as a Poisson process of rate N·λ and restarts in R seconds:
//   wall / work = M · e^{R/M} · (e^{(τ+C)/M} − 1) / τ,   M = 1/(N·λ), C = checkpoint save time.
// Goodput is its inverse; the recommended interval is its exact maximum over whole optimizer
// steps. Young's (1974) √(2CM) and Daly's higher-order estimate are given beside it
// (docs/cost-model.md §11 Goodput). What it is not: a failure simulator, a model of planned
// maintenance, of async checkpointing, or of a failure's detection latency.
// Pure functions (load_reliability reads a file), thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "shared/prediction.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// One reliability profile. Units in the names; every number has its source in the file.
struct ReliabilitySpec {
  std::string name;                         // preset name ("" = built in code)
  std::string file;                         // where it was read from (for errors)
  std::string source;                       // the public sources of the numbers
  double failures_per_gpu_hour = 0;         // unexpected job interruptions per GPU  // 1/h
  double restart_s = 0;                     // interruption -> training again (detect, reschedule, load)  // s
  // Storage write bandwidth. Aggregate: what the whole file system sustains for all writers
  // together (a property of the storage, not of the job). Node: what one node can push to it
  // (its storage NICs). A save takes the longer of the two limits.
  double storage_write_gbytes_per_s = 0;    // aggregate, all nodes together  // GB/s (1e9 B/s)
  double node_write_gbytes_per_s = 0;       // per node  // GB/s
};

// A preset in configs/reliability/NAME.toml or a .toml path. ConfigError for an unknown name,
// an unknown key, a missing key or a value out of range (rates and times >= 0, bandwidths > 0).
ReliabilitySpec load_reliability(const std::string& name_or_file);
// Throws ConfigError naming `file`/`key` for a value out of range (used after flag overrides
// too, with the flag as `file`).
void check_reliability(const ReliabilitySpec& r, const std::string& file);

// What one checkpoint of a plan writes: each rank of one replica (shard group) writes its
// shard of the fp32 parameters and AdamW's two moments (12 bytes per parameter ÷ shard group
// size). Replicas hold the same shard and torch.distributed.checkpoint writes it once
// (_dedup_save_plans.py); newer releases spread those writes over the replicas, here one
// shard group writes it all (the slower case). Gradients are not saved.
struct CheckpointSize {
  double per_rank_bytes = 0;     // one writing rank's shard  // bytes
  double total_bytes = 0;        // one copy of the whole state  // bytes
  int writers_per_node = 0;      // ranks of one shard group on one node
};
CheckpointSize checkpoint_size(const TrainConfig& cfg);

// Blocking save time: max(per node bytes / node bandwidth, total / aggregate bandwidth).  // s
double checkpoint_save_s(const CheckpointSize& size, const ReliabilitySpec& r);

// Daly's model (see above): useful work / wall time when checkpointing every `interval_s` of
// work with save time `save_s`, restart `restart_s` and job MTBF `mtbf_s` (inf = no failures:
// then interval/(interval + save)).
double goodput_at_interval(double interval_s, double save_s, double restart_s, double mtbf_s);
// Young 1974: √(2·C·M).  // s
double young_interval_s(double save_s, double mtbf_s);
// Daly 2006: √(2CM)·[1 + ⅓·√(C/2M) + ⅑·(C/2M)] − C for C < 2M, else M.  // s
double daly_interval_s(double save_s, double mtbf_s);
// The exact maximum of goodput_at_interval over interval_s > 0 (bisection on the derivative).
double optimal_interval_s(double save_s, double mtbf_s);

struct Goodput {
  double mtbf_s = 0;                   // job's mean time between interruptions 1/(N·λ); inf when λ = 0  // s
  double interruptions_per_day = 0;    // N·λ·24
  CheckpointSize checkpoint;
  double save_s = 0;                   // C  // s
  double restart_s = 0;                // R  // s
  double young_interval_s = 0;         // √(2CM), for reference  // s (inf when λ = 0)
  double daly_interval_s = 0;          // Daly's estimate, for reference  // s
  // Recommended checkpoint.interval in optimizer steps (whole steps nearest the exact optimum;
  // 0 = no periodic checkpoint pays off: no failures).
  int64_t interval_steps = 0;
  double interval_s = 0;               // interval_steps · step time  // s
  double goodput = 1;                  // useful / wall at interval_steps, in (0, 1]
  double effective_tokens_per_s_per_gpu = 0;  // tokens_per_s_per_gpu · goodput
};

// Goodput of a plan (cfg at its world size, p = plan(cfg)) under reliability r.
// Asserts p.step_time_s > 0.
Goodput goodput(const TrainConfig& cfg, const Prediction& p, const ReliabilitySpec& r);

// The checkpoint.interval (steps) to write into run.toml: goodput(cfg, p, r).interval_steps.
int64_t recommended_checkpoint_interval_steps(const TrainConfig& cfg, const Prediction& p,
                                              const ReliabilitySpec& r);

}  // namespace shardcast::planner
