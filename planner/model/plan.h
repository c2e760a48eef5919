// plan(): predict one training configuration — memory per rank, step time, tokens/s/GPU,
// MFU, HFU, exposed communication, the error band and (optionally) the timeline.
//
// What it is: the glue of the cost model. It builds each FSDP unit's compute cost (ops.h),
// collective times (comm_model.h) and memory terms (memory_model.h) for the strategy, runs the
// step simulator (simulator.h) and reads the Prediction off its timeline. Efficiency
// parameters come from hw.efficiency (the preset's [efficiency] table; docs/cost-model.md).
// What it is not: search, validation or I/O. Fast (one 80-layer, 1024-GPU prediction is well
// under a millisecond; bench_planner measures it). Pure function, thread-safe.
#pragma once

#include "planner/model/plan_options.h"
#include "shared/hardware_spec.h"
#include "shared/prediction.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// Predict one configuration. Uses cfg.model, cluster, parallelism, training,
// activation_checkpointing and precision. hw is the preset of cfg.cluster.hardware; the
// cluster's inter_node_gbps (when > 0) overrides hw's NIC bandwidth here
// (effective_inter_node_bandwidth).
// Throws ConfigError for a missing efficiency key or a dtype the hardware lacks.
Prediction plan(const TrainConfig& cfg, const HardwareSpec& hw, const PlanOptions& opt = {});

// NIC bandwidth per node of the cluster: its inter_node_gbps when given, else the preset's
// per-node figure scaled from the preset's GPUs per node to the cluster's (one rail per GPU).  // bytes/s
double effective_inter_node_bandwidth(const TrainConfig& cfg, const HardwareSpec& hw);

}  // namespace shardcast::planner
