// The device mesh of a run: five parallelism degrees resolved from run.toml's [parallelism].
//
// What it is: resolve_mesh() turns ParallelismConfig (dp_replicate, dp_shard, tp, cp, pp, and the
// 1-D sharding_strategy / hsdp_shard_size they extend) into the five degrees whose product is the
// world size, as torchtitan's ParallelDims does (torchtitan/distributed/parallel_dims.py: dp_shard
// = -1 takes the rest). validate_mesh() lists every problem with those keys against the model and
// the training shape. The 1-D strategies are the mesh tp = cp = pp = 1: full_shard and
// shard_grad_op are (1, dp), hybrid_shard (dp / g, g) with g = hsdp_shard_size (default: the
// ranks of a node outside tp and cp), no_shard (dp, 1).
// What it is not: the cost of a mesh (planner/model/mesh_terms.h) or the process groups the trainer
// builds from it (trainer/comm/). Plain functions of values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "shared/train_config.h"

namespace shardcast {

struct Mesh {
  int dp_replicate = 1;  // replicas of a shard group
  int dp_shard = 1;      // ranks FSDP shards a parameter over
  int tp = 1, cp = 1, pp = 1;
  int dp() const { return dp_replicate * dp_shard; }  // data-parallel ranks
  int world() const { return dp() * tp * cp * pp; }
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
// Sequences per rank per micro-step divided into pipeline micro-batches of pp_microbatch.
int pp_microbatches(const ParallelismConfig& p, int micro_batch);

// Every problem with the mesh keys of cfg as "file: key: detail" strings (empty = valid).
std::vector<std::string> validate_mesh(const TrainConfig& cfg, const std::string& file);

// "dp_shard 16 x tp 8": the degrees above 1 (and dp_shard always), for headlines and tables.
std::string mesh_label(const Mesh& m);

}  // namespace shardcast
