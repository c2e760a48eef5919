// TrainConfig: everything one training run needs; the contents of run.toml.
//
// What it is: one struct per TOML table ([model], [cluster], [parallelism], [training],
// [activation_checkpointing], [precision], [optimizer], [lr_schedule], [data], [checkpoint],
// [metrics], [comm], [prediction]) with defaults, plus whole-config validation. Reading and
// writing TOML lives in config_io.h. What it is not: the hardware numbers (HardwareSpec) or
// the planner's output (Prediction). Plain value type, thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shared/model_spec.h"

namespace shardcast {

// shard_optimizer: the optimizer's fp32 master and AdamW states partitioned over the data-parallel
// ranks, parameters and gradients whole on every rank (DeepSpeed ZeRO stage 1; torch's
// ZeroRedundancyOptimizer). Only the deepspeed runtime runs it (planner/model/zero_memory.h);
// FSDP has no such strategy, so every other runtime and shardcast-train refuse it by name.
enum class ShardingStrategy { full_shard, shard_grad_op, hybrid_shard, no_shard, shard_optimizer };
// selective_op: torchtitan's op-level selective checkpointing (selective_ac_option = "op"):
// inside every block, matmul and attention outputs are kept and cheap ops are recomputed.
// The planner models it; shardcast-train runs none, selective and full only.
enum class AcMode { none, selective, full, selective_op };
// precision.fp8: which float8 training recipe the Linear layers run, by torchao's names
// (torchao/float8/config.py Float8LinearRecipeName, pytorch/ao@36027d82d): tensorwise = one
// dynamic scale per tensor, cuBLAS GEMMs; rowwise = one scale per row, CUTLASS GEMM forward;
// rowwise_with_gw_hp = rowwise with the grad-weight GEMM in bf16. none = bf16 GEMMs.
// The Blackwell block-scaled formats (compute capability 10.0 and up; planner/model/fp8_formats.h):
// mxfp8 = torchao's MXFP8Linear (one e8m0 scale per 32 elements, all three GEMMs in MXFP8,
// torchtitan's MXFP8LinearConverter); nvfp4 = torchao's NVFP4 training Linear (fp4 with one fp8
// scale per 16 elements and a tensor-wise scale, Hadamard-rotated, all three GEMMs in NVFP4,
// torchtitan's NVFP4LinearConverter on the leading 85 % of the blocks).
// The cost of each recipe is planner/model/fp8_recipe.h; shardcast-train runs none only.
enum class Fp8Recipe { none, tensorwise, rowwise, rowwise_with_gw_hp, mxfp8, nvfp4 };

const char* to_string(ShardingStrategy s);
const char* to_string(AcMode m);
const char* to_string(Fp8Recipe r);
// Parse the TOML/CLI spelling; std::nullopt for an unknown name.
std::optional<ShardingStrategy> parse_sharding_strategy(const std::string& s);
std::optional<AcMode> parse_ac_mode(const std::string& s);
std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& s);
inline const char* kShardingStrategyNames = "full_shard | shard_grad_op | hybrid_shard | no_shard | shard_optimizer";
inline const char* kAcModeNames = "none | selective | full | selective_op";
inline const char* kFp8RecipeNames = "none | tensorwise | rowwise | rowwise_with_gw_hp | mxfp8 | nvfp4";
// parallelism.pp_schedule: the pipeline schedule, by torchtitan's names (the classes of
// torch.distributed.pipelining.schedules that torchtitan's --parallelism.pipeline_parallel_schedule
// takes). Costs in planner/model/mesh_terms.h.
enum class PpSchedule { one_f_one_b, interleaved_1f1b, gpipe, zbv_zero_bubble, interleaved_zero_bubble };
// parallelism.cp_rotate: how context parallel's ring attention exchanges K/V shards
// (torchtitan --parallelism.context_parallel_rotate_method).
enum class CpRotate { allgather, alltoall };
const char* to_string(PpSchedule s);
const char* to_string(CpRotate r);
std::optional<PpSchedule> parse_pp_schedule(const std::string& s);
std::optional<CpRotate> parse_cp_rotate(const std::string& s);
inline const char* kPpScheduleNames = "1F1B | Interleaved1F1B | GPipe | ZBVZeroBubble | InterleavedZeroBubble";
inline const char* kCpRotateNames = "allgather | alltoall";
std::vector<PpSchedule> all_pp_schedules();
std::vector<CpRotate> all_cp_rotates();
// Every value of each enum, in the order of the table to_string and parse read: the choices an
// editor offers (shardcast-gui's lists) and the values a test walks.
std::vector<ShardingStrategy> all_sharding_strategies();
std::vector<AcMode> all_ac_modes();
std::vector<Fp8Recipe> all_fp8_recipes();
// The dtype names precision.param_dtype and precision.reduce_dtype allow (fp32, bf16, fp16) and
// those precision.master_dtype allows (fp32, bf16); validate() reads the same lists.
const std::vector<std::string>& float_dtype_names();
const std::vector<std::string>& master_dtype_names();
// The values optimizer.state_dtype allows (master, bf16); validate() reads the same list.
const std::vector<std::string>& optimizer_state_dtype_names();

struct ClusterConfig {
  std::string hardware = "cpu";   // preset key in configs/hardware/
  int nodes = 1;
  int gpus_per_node = 1;          // ranks per node (GPUs, or processes on CPU)
  double inter_node_gbps = 0;     // NIC per node in Gb/s; 0 = the preset's, scaled to gpus_per_node (one rail per GPU)
  double power_limit_w = 0;       // GPU board power limit in W (nvidia-smi -pl); 0 = the preset's
  // GPUs of the one physical node a job of fewer GPUs runs on (a partial node: nodes = 1, its
  // gpus_per_node ranks); 0 = gpus_per_node. Read for the node's links only (a preset's
  // node.direct_link_max_gpus: which board the job's GPUs sit on).
  int node_gpus = 0;
  int world_size() const { return nodes * gpus_per_node; }
};

struct ParallelismConfig {
  ShardingStrategy sharding_strategy = ShardingStrategy::full_shard;
  int hsdp_shard_size = 0;        // hybrid_shard: dp ranks per shard group; 0 = a node's: gpus_per_node / (tp · cp)
  int max_inflight_all_gathers = 2;  // FSDP rate limit on unsharded units in flight
  // Gradient accumulation: true = every micro-step's backward reduce-scatters (hybrid_shard,
  // no_shard: and all-reduces) each unit's gradient into the fp32 gradient shard (FSDP2's
  // default); false = non-final micro-steps keep an unsharded fp32 gradient sum per unit and
  // communicate nothing (FSDP1 no_sync). Unset = the runtime's own behaviour: true for
  // shardcast-train (the default), the fixed value of a runtime that cannot choose
  // (configs/runtimes/*.toml term sync_every_micro_step; planner/model/runtime.h refuses a given
  // value the runtime cannot run).
  std::optional<bool> sync_every_micro_step;
  // shardcast-train's value when the key is unset.
  static constexpr bool kSyncEveryMicroStepDefault = true;
  // The device mesh, torchtitan's parallelism degrees: dp_replicate · dp_shard · tp · cp · pp =
  // world size. The 1-D strategies above are the case tp = cp = pp = 1; dp_replicate and dp_shard
  // left at their defaults are derived from sharding_strategy (shared/train_config.h resolve_mesh).
  int dp_replicate = 1;           // data-parallel replicas (HSDP's replicate dimension)
  int dp_shard = -1;              // ranks FSDP shards over; -1 = the rest of the world
  int tp = 1;                     // tensor parallel (with sequence parallel), inside a node
  int cp = 1;                     // context parallel: the sequence split over cp ranks
  int pp = 1;                     // pipeline stages
  bool tp_async = false;          // asynchronous TP: collectives overlapped with the GEMMs
  PpSchedule pp_schedule = PpSchedule::one_f_one_b;
  int pp_microbatch = 1;          // sequences per pipeline micro-batch
  int pp_virtual_stages = 0;      // stages per pp rank; 0 = the schedule's (1 or 2)
  CpRotate cp_rotate = CpRotate::allgather;
  // Shard-group size: the mesh's dp_shard (world size for full/grad_op, 1 for no_shard when
  // tp = cp = pp = 1).
  int shard_group_size(int world_size, int gpus_per_node) const;
};

struct TrainingConfig {
  int micro_batch = 1;            // sequences per rank per micro-step
  int seq_len = 2048;             // tokens per sequence
  int grad_accum = 1;             // micro-steps per optimizer step
  int steps = 100;                // optimizer steps
  uint64_t seed = 0;
  double max_grad_norm = 1.0;     // 0 disables clipping
};

struct ActivationCheckpointingConfig {
  AcMode mode = AcMode::none;
  double ratio = 1.0;             // selective: fraction of blocks checkpointed, in (0, 1]
  // Which blocks are checkpointed: block i is when floor((i+1)·ratio) > floor(i·ratio)
  // (an even spread; ratio 0.5 = every other block, as fms-fsdp's selective_checkpointing).
  bool block_checkpointed(int block) const;
  // Whole blocks recomputed / n_layers (0 for selective_op, whose recompute is op-level).
  double recompute_fraction(int n_layers) const;
};

struct PrecisionConfig {
  std::string param_dtype = "bf16";   // fp32 | bf16 | fp16
  std::string reduce_dtype = "fp32";  // fp32 | bf16 | fp16
  // Sharded parameters, their gradients and AdamW's two moments: fp32 (mixed precision with fp32
  // master weights) | bf16 (pure bf16: the model itself in bf16, e.g. litgpt's "bf16-true").
  std::string master_dtype = "fp32";
  bool compile = false;
  Fp8Recipe fp8 = Fp8Recipe::none;
  bool fp8_on() const { return fp8 != Fp8Recipe::none; }
};

struct OptimizerConfig {
  std::string name = "adamw";
  // AdamW's two moments (exp_avg, exp_avg_sq): master — in precision.master_dtype, as torch.optim
  // makes them (zeros_like the parameter) | bf16 — bf16 beside fp32 master weights (torchtitan's
  // optimizer.implementation = "fused_opt_states_bf16"; runtime term optimizer_state_dtypes).
  std::string state_dtype = "master";
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

struct LrScheduleConfig {
  int warmup_steps = 0;
  std::string decay = "cosine";   // cosine | linear | constant
  double min_lr_factor = 0.1;     // final lr = lr · min_lr_factor
};

struct DataConfig {
  std::string path;               // llm.c .bin token file ("" = the bundled corpus)
  std::string format = "llmc_bin";
  // Mean length of the documents packed into each sequence, in tokens; 0 = not stated: attention
  // is dense causal over the whole sequence. Read only by a runtime whose attention masks at
  // document boundaries (runtime term attention = "flex_document": planner/model/document_mask.h).
  double mean_doc_len = 0;        // tokens
};

struct CheckpointConfig {
  std::string dir;                // "" = no checkpoints
  int interval = 0;               // steps between saves; 0 = only at the end if dir is set
  int keep = 2;                   // complete checkpoints kept
  std::string resume_from;        // "" = none, "latest", or a checkpoint path
  // Initial weights (fine-tuning): a directory with model.safetensors + config.json in the
  // Hugging Face Llama layout (what `shardcast-train export` writes). "" = init from the seed.
  // Exclusive with resume_from (a resume restores its own weights).
  std::string initial_load_path;
  // resume_from = "latest" and the newest checkpoint fails its size or CRC-32 check: false =
  // stop with the error; true = say so and resume from the newest intact one.
  bool fallback = false;
  // torchtitan checkpoint.async_mode: "disabled" = the step waits for the files; "async" =
  // the shard is copied to host memory and written by a background thread while training
  // continues (one save in flight; the next save waits for it).
  std::string async_mode = "disabled";
};

struct MetricsConfig {
  std::string dir = "runs/latest";  // run directory: metrics.jsonl, validation.json, ...
  int log_freq = 1;                 // steps between printed lines
};

struct CommConfig {
  double timeout_seconds = 300;   // collective timeout
  std::string backend = "auto";   // auto | gloo | nccl
};

// Written by the planner (`shardcast emit`), read by the trainer to validate the run.
struct PredictionTable {
  bool present = false;
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  double mem_peak_bytes = 0;                     // allocated peak per rank  // bytes
  std::map<std::string, double> mem_components;  // bytes, by component name
  std::string hardware;                          // profile the prediction used
  std::string runtime;                           // runtime profile the prediction used
};

struct TrainConfig {
  std::string source_file;        // where it was read from ("" if built in code)
  std::string model_preset;       // "" if the [model] table gave every field
  // The software that executes this config: a preset key in configs/runtimes/
  // (shared/runtime_spec.h). Top-level key `runtime`. shardcast-train runs any run.toml; the
  // planner predicts for the runtime named here.
  std::string runtime = "shardcast-train";
  ModelSpec model;
  ClusterConfig cluster;
  ParallelismConfig parallelism;
  TrainingConfig training;
  ActivationCheckpointingConfig activation_checkpointing;
  PrecisionConfig precision;
  OptimizerConfig optimizer;
  LrScheduleConfig lr_schedule;
  DataConfig data;
  CheckpointConfig checkpoint;
  MetricsConfig metrics;
  CommConfig comm;
  PredictionTable prediction;

  int world_size() const { return cluster.world_size(); }
  // The model's name for people and scripts: the preset key when it came from one.
  const std::string& model_label() const { return model_preset.empty() ? model.name : model_preset; }
  // Data-parallel ranks: world size / (tp · cp · pp) (shared/train_config.h); the world size in 1-D.
  int dp_size() const;
  int64_t tokens_per_step() const {  // global tokens per optimizer step
    return int64_t(training.micro_batch) * training.seq_len * training.grad_accum * dp_size();
  }
};

// Every problem with the config as a list of "file: key: detail" strings (empty = valid).
std::vector<std::string> validate(const TrainConfig& cfg);
// Same, as a single exception; no-op when valid.
void validate_or_throw(const TrainConfig& cfg);
// Problems with a ModelSpec alone (n_heads % n_kv_heads, positive sizes, ...), keys
// prefixed with `prefix` (e.g. "model.").
std::vector<std::string> validate_model(const ModelSpec& m, const std::string& file,
                                        const std::string& prefix);


// The device mesh of a run (shared/train_config_mesh.cpp): five parallelism degrees resolved from
// [parallelism]. resolve_mesh() turns ParallelismConfig (dp_replicate, dp_shard, tp, cp, pp, and
// the 1-D sharding_strategy / hsdp_shard_size they extend) into the five degrees whose product
// is the world size, as torchtitan's ParallelDims does (torchtitan/distributed/parallel_dims.py:
// dp_shard = -1 takes the rest). validate_mesh() lists every problem with those keys against the
// model and the training shape. The 1-D strategies are the mesh tp = cp = pp = 1: full_shard and
// shard_grad_op are (1, dp), hybrid_shard (dp / g, g) with g = hsdp_shard_size (default: the
// ranks of a node outside tp and cp), no_shard (dp, 1). The cost of a mesh is
// planner/model/mesh_terms.h; the trainer's process groups are trainer/comm/.
struct Mesh {
  int dp_replicate = 1;  // replicas of a shard group
  int dp_shard = 1;      // ranks FSDP shards a parameter over
  int tp = 1, cp = 1, pp = 1;
  // Products in 64 bits: each degree may be up to 2^30 before validate_mesh refuses the mesh.
  int64_t dp() const { return int64_t(dp_replicate) * dp_shard; }  // data-parallel ranks
  int64_t world() const { return dp() * tp * cp * pp; }
  bool one_d() const { return tp == 1 && cp == 1 && pp == 1; }
};

// The degrees of cfg's mesh on `world` ranks with `gpus_per_node` per node. Never throws: a mesh
// that does not divide the world gives degrees whose product is not `world`, which validate_mesh
// reports by key.
Mesh resolve_mesh(const ParallelismConfig& p, int world, int gpus_per_node);

// A schedule that runs more than one stage per pp rank (Interleaved1F1B, ZBVZeroBubble,
// InterleavedZeroBubble; torch.distributed.pipelining's PipelineScheduleMulti).
bool pp_schedule_multi_stage(PpSchedule s);
// Stages per pp rank: pp_virtual_stages, or the schedule's default (1 single-stage, 2 multi-stage,
// as torchtitan's pipeline_parallel_layers_per_stage = None splits the model).
int pp_stages_per_rank(const ParallelismConfig& p);
// Blocks beside the embedding and the head on a pipeline rank holding both ends: round((L + 2) /
// pp) − 2 (torchtitan's split counts each end as a layer; planner/model/mesh_terms.h
// pp_rank_blocks). Below 1 where pp is too large for the model (validate_mesh refuses that); the
// model's n_layers without pp.
int pp_blocks_beside_ends(int n_layers, int pp);
// The pieces a sequence is split into: tp under sequence parallel, times 2·cp under load-balanced
// context parallel (cp > 1); training.seq_len must be a multiple (validate_mesh; search skips the
// rest). 64-bit: degrees up to 2^31 each.
int64_t sequence_pieces(int tp, int cp);
// Sequences per rank per micro-step divided into pipeline micro-batches of pp_microbatch.
int pp_microbatches(const ParallelismConfig& p, int micro_batch);
// Whether `n_micro` pipeline micro-batches run under schedule `s` on `pp` ranks: the interleaved
// schedules need a multiple of their rounds, max(1, n // pp) (torch.distributed.pipelining
// ScheduleInterleaved1F1B / ScheduleInterleavedZeroBubble raise otherwise); the others any n.
bool pp_rounds_divide(PpSchedule s, int pp, int n_micro);

// Every problem with the mesh keys of cfg as "file: key: detail" strings (empty = valid).
std::vector<std::string> validate_mesh(const TrainConfig& cfg, const std::string& file);

// "dp_shard 16 x tp 8": the degrees above 1 (and dp_shard always), for headlines and tables.
std::string mesh_label(const Mesh& m);
// torchtitan's [parallelism] names for the mesh keys of run.toml's [parallelism] (job_config.py
// Parallelism @e61f2cce4, as emit writes them): {torchtitan's name, ours}. run.toml refuses the
// former and names the latter.
const std::vector<std::pair<std::string, std::string>>& torchtitan_parallelism_names();
// torchtitan's [parallelism] name of one of ours ("tp" -> "tensor_parallel_degree"), from the
// table above; a key it lacks is a programming error (std::out_of_range).
const std::string& torchtitan_parallelism_name(const std::string& ours);

}  // namespace shardcast
