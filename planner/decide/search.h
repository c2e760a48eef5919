// search(): every configuration of a model on a fixed GPU count, predicted, filtered and ranked.
//
// What it is: the enumeration of sharding strategy × HSDP shard-group size × micro-batch ×
// gradient accumulation × activation checkpointing (none, selective ratios, full) ×
// reduce dtype × compile × fp8 (the last two only where allowed), one plan() per candidate
// (planner/model/plan.h), then the filter (fits with a retry-free memory margin, meets the global
// batch), the ranking by tokens/s/GPU, the Pareto front of memory against throughput
// (planner/decide/pareto.h) and one sentence on why the winner wins.
// What it is not: the cost model (plan.h), capacity planning over GPU counts (scale.h) or
// I/O (cmd_search.cpp, emit.h).
// Threading: search() runs plan() on `threads` worker threads it starts and joins; the progress
// callback is only ever called from the calling thread. search() itself is reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shared/hardware_spec.h"
#include "shared/model_spec.h"
#include "shared/prediction.h"
#include "shared/runtime_spec.h"
#include "shared/train_config.h"

namespace shardcast::planner {

struct SearchSpace {
  // What is trained, on what.
  ModelSpec model;
  std::string model_preset;        // written to run.toml's [model] (may be "")
  std::string hardware;            // hardware preset key (cluster.hardware)
  int gpus = 8;                    // world size
  int gpus_per_node = 0;           // 0 = the preset's (capped at gpus)
  double inter_node_gbps = 0;      // NIC per node in Gb/s; 0 = the preset's
  double power_limit_w = 0;        // GPU board power limit in W; 0 = the preset's
  int seq_len = 0;                 // tokens per sequence; 0 = the model's max_seq_len
  // Global batch per optimizer step, in tokens (micro_batch · seq_len · grad_accum · gpus).
  // 0 = any: grad_accum ranges over `grad_accums`. Otherwise grad_accum is derived from the
  // micro-batch and a candidate is kept only within ±batch_tolerance of the target.
  int64_t global_batch_tokens = 0;
  double batch_tolerance = 0.10;   // relative
  // Memory budget: reserved + runtime overhead ≤ max_mem_frac · device memory. The margin
  // below 1.0 keeps the allocator free of cudaMalloc retries (fms-fsdp#63).
  double max_mem_frac = 0.90;
  bool allow_fp8 = false;          // also try each fp8 recipe the runtime runs (only if the GPU has fp8)
  // With allow_fp8: only the runtime's recipes that are also in this list (empty = all of them;
  // `emit --from-search` passes the recipes the torchtitan generation it writes can express).
  std::vector<Fp8Recipe> fp8_recipes;
  bool allow_compile = false;      // also try torch.compile
  // Also try torchtitan's op-level selective checkpointing (AcMode::selective_op). Off by
  // default: shardcast-train runs none, selective and full only.
  bool allow_selective_op = false;
  // The axes. Empty strategies = all four (and shard_optimizer under a ZeRO runtime); hybrid_shard is tried with every power-of-two
  // shard-group size from 2 up to gpus/2 that divides gpus (hsdp_shard_sizes overrides).
  std::vector<ShardingStrategy> strategies;
  std::vector<int> hsdp_shard_sizes;
  // The device mesh (shared/train_config.h), tried where the runtime runs it (its runtime term mesh) with
  // full_shard over the data-parallel ranks and, where hybrid_shard is tried, HSDP over them
  // (dp_replicate × dp_shard, each shard group holding at least a node's dp ranks): every tp within a node that divides n_kv_heads and
  // ffn_dim, cp only for sequences of cp_min_seq_len tokens or more (it exists for long
  // sequences), pp with each of pp_schedules where pp · stages per rank <= n_layers. A list
  // {1} leaves that dimension out.
  std::vector<int> tps = {1, 2, 4, 8};
  std::vector<int> cps = {1, 2, 4, 8};
  std::vector<int> pps = {1, 2, 4, 8};
  int cp_min_seq_len = 32768;  // tokens
  std::vector<PpSchedule> pp_schedules = {PpSchedule::one_f_one_b, PpSchedule::interleaved_1f1b};
  std::vector<int> micro_batches = {1, 2, 3, 4, 6, 8, 12, 16};
  std::vector<int> grad_accums = {1, 2, 4, 8};          // only when global_batch_tokens == 0
  std::vector<double> selective_ratios = {0.25, 0.5, 0.75};  // fraction of blocks checkpointed
  std::vector<std::string> reduce_dtypes = {"fp32", "bf16"};
  int threads = 0;                 // worker threads; 0 = std::thread::hardware_concurrency()
  // Skip plan() where the memory verdict is already known: memory grows with the micro-batch
  // and shrinks with more checkpointing, so once (micro-batch m, AC level a) is over budget,
  // every larger m at level a and every m' >= m at a lighter level is too. search_test checks
  // that pruning changes no result.
  bool prune = true;
  // Everything the search does not vary (optimizer, steps, data, ...) is copied from here.
  TrainConfig base;
  // A reference run's level for every candidate (PlanOptions::reference_level; 0 = none).
  double reference_level = 0;
  std::string reference_run;
};

struct Candidate {
  TrainConfig config;
  Prediction prediction;
};

struct SearchResult {
  std::vector<Candidate> ranked;   // feasible, best tokens/s/GPU first
  std::vector<Candidate> pareto;   // feasible, not dominated in (memory, tokens/s/GPU); by memory
  int64_t n_candidates = 0;        // configurations enumerated (each gets a verdict)
  int64_t n_evaluated = 0;         // predicted with plan()
  int64_t n_pruned = 0;            // over budget by monotonicity, without plan() (see prune)
  int64_t n_feasible = 0;          // fit the memory budget and meet the global batch
  int64_t n_over_memory = 0;       // over the memory budget (predicted or pruned)
  int64_t n_batch_mismatch = 0;    // not enumerated further: global batch out of tolerance
  double seconds = 0;              // wall time of the search  // s
  std::string why_winner;          // one line; "" when nothing is feasible
};

// The memory a candidate needs against the budget: reserved + runtime overhead.  // bytes
double memory_needed_bytes(const Prediction& p);
// The budget: max_mem_frac · device memory.  // bytes
double memory_budget_bytes(const SearchSpace& space, const HardwareSpec& hw);

// Throws UsageError when the cluster spans several nodes but the hardware preset has no
// inter-node network (inter_node_gbps = 0, e.g. the single-machine `cpu` profile) and no
// --inter-node-gbps override: such a plan has no finite step time.
void require_inter_node_network(const TrainConfig& cfg, const HardwareSpec& hw);

// The one batch rule of search and scale: the grad_accum (>= 1) whose global batch mb · seq · dp
// · grad_accum is nearest space.global_batch_tokens (> 0), when that batch is within
// ±space.batch_tolerance of it (and grad_accum <= 2^20); nullopt otherwise.
std::optional<int> grad_accum_for_batch(const SearchSpace& space, int mb, int seq, int64_t dp);

// The TrainConfig every candidate starts from (cluster and model filled from `space`).
// Throws UsageError for a GPU count that is not a whole number of nodes.
TrainConfig search_base_config(const SearchSpace& space, const HardwareSpec& hw);

// Every candidate configuration of the space, before prediction. They come in blocks (one per
// sharding × reduce dtype × compile × fp8 × grad-accum choice), each an AC-major lattice:
// AC levels from most to least checkpointed, micro-batches ascending within a level.
// `n_batch_mismatch` (optional) counts combinations dropped because of the global batch.
struct CandidateBlock {
  size_t begin = 0;  // index of (AC level 0, micro-batch 0)
  int n_ac = 0;      // AC levels (rows)
  int n_mb = 0;      // micro-batches (columns)
};
// One layout of the ranks: a 1-D strategy (with its HSDP group) or a mesh with full_shard.
struct MeshChoice {
  int tp = 1, cp = 1, pp = 1;
  PpSchedule pp_schedule = PpSchedule::one_f_one_b;
};
struct Layout {
  ShardingStrategy strategy = ShardingStrategy::full_shard;
  int hsdp_shard_size = 0;
  MeshChoice mesh;
};
// The mesh layouts the space and the runtime's terms allow (SearchSpace::tps, cps, pps), appended.
void add_mesh_layouts(const SearchSpace& space, const RuntimeTerms& terms, int W, int gpn, int seq,
                      std::vector<Layout>* layouts);
// What one candidate sets on the space's base config (search_base_config); a TrainConfig is made
// only for a candidate that is predicted or reported (Enumeration::config).
struct CandidateSettings {
  Layout layout;
  int micro_batch = 1, grad_accum = 1;
  AcMode ac_mode = AcMode::none;
  double ac_ratio = 1.0;
  int reduce_dtype = 0;  // index into Enumeration::reduce_dtypes
  bool compile = false;
  Fp8Recipe fp8 = Fp8Recipe::none;
};
struct Enumeration {
  TrainConfig base;
  std::vector<std::string> reduce_dtypes;
  std::vector<CandidateSettings> candidates;
  std::vector<CandidateBlock> blocks;
  int64_t n_batch_mismatch = 0;
  size_t size() const { return candidates.size(); }
  // Candidate i as a config: the base with its settings.
  TrainConfig config(size_t i) const;
  // Every candidate's config, in order (for small spaces: each is a whole TrainConfig).
  std::vector<TrainConfig> configs() const;
};
Enumeration enumerate_candidates(const SearchSpace& space, const HardwareSpec& hw);

// Predict, filter, rank. progress(fraction in [0, 1]) is called from the calling thread.
// Throws UsageError for an empty or inconsistent space, ConfigError from plan().
SearchResult search(const SearchSpace& space, const HardwareSpec& hw,
                    const std::function<void(double)>& progress = {});

// "full_shard mb 2x4 ac selective(0.5) bf16-reduce compile" — compact label of a candidate.
std::string describe_config(const TrainConfig& cfg);
// The mesh's degrees in describe_config's words ("tp 8 cp 2 pp 4 Interleaved1F1B"; HSDP beside
// them leads with its replicas, "dp_replicate 32 tp 2", dp_shard being the rest; a dimension's
// settings that differ from run.toml's defaults follow its degree by their keys' names, "tp 8
// tp_async", "pp 4 Interleaved1F1B pp_virtual_stages 3 pp_microbatch 2"; "" for a 1-D plan): the
// search, scale and budget tables' one spelling.
std::string mesh_words(const TrainConfig& c);
// The sharding column: the strategy, with a 1-D hybrid_shard's shard group in GPUs
// ("hybrid_shard/16"); beside a mesh the strategy alone (mesh_words names dp_replicate).
std::string strategy_label(const TrainConfig& c);

}  // namespace shardcast::planner
