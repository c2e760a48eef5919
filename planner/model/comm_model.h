// Communication model: time of one NCCL-style ring collective on a two-level topology.
//
// What it is: t = base + (intra steps)·intra_latency + (inter steps)·inter_latency
//                 + factor·S / bus_bandwidth
// with S the collective's total size as nccl-tests defines it (the gathered size for
// all_gather / reduce_scatter, the buffer for all_reduce), factor (n−1)/n or 2(n−1)/n, and the
// bus bandwidth the slower of the intra-node link (×intra_node_bw_eff) and, when the group
// spans nodes, the node's NIC bandwidth (×inter_node_bw_eff) times the group's share of it:
// a ring crosses each node boundary once per channel, so one group with every GPU of the node
// gets all NICs, while the gpus_per_node HSDP replica groups (one rank per node each) share
// them. In a node whose GPUs are linked pair by pair with no switch (a preset's
// node.direct_link_max_gpus: HGX 4-GPU boards), a group of k of its n GPUs reaches its peers over
// (k − 1)/(n − 1) of each GPU's links. Latency grows with the ring length; small messages are latency-bound, so
// the achieved fraction of bandwidth rises with message size. What it is not: scheduling
// (simulator.h). Pure functions, thread-safe.
// One exception to the ring: a runtime whose reduce-scatter is an all-to-all round
// (CommContext::reduce_scatter_one_round) pays one step's latency for it.
#pragma once

#include "planner/model/efficiency.h"
#include "shared/hardware_spec.h"

namespace shardcast::planner {

enum class Collective { all_gather, reduce_scatter, all_reduce };
const char* to_string(Collective c);

struct CommGroup {
  int ranks = 1;  // ranks in the collective
  int nodes = 1;  // nodes they span
};

struct CommContext {
  double intra_node_bandwidth = 0;  // per GPU per direction  // bytes/s
  double inter_node_bandwidth = 0;  // all NICs of a node, per direction  // bytes/s
  double intra_node_latency = 0;    // s per ring step inside a node
  double inter_node_latency = 0;    // s per ring step across nodes
  int gpus_per_node = 1;            // GPUs sharing the node's NICs
  // A node of at most this many GPUs links each pair directly (HardwareSpec NodeSpec); 0 = switched.
  int direct_link_max_gpus = 0;
  int node_gpus = 0;  // GPUs of the physical node (a partial job's: more than gpus_per_node); 0 = gpus_per_node
  // A reduce-scatter is one all-to-all round (shardcast-train's Gloo layer, PlanOptions): its n − 1
  // pairwise exchanges are posted together, so it pays one step's latency (an inter-node step
  // when the group spans nodes) and a ring's bytes.
  bool reduce_scatter_one_round = false;
  EfficiencyParams eff;
};

// Bus bandwidth one rank achieves in a collective over `g`.  // bytes/s
double bus_bandwidth(const CommGroup& g, const CommContext& c);
// Time of one collective of total size `bytes` over group `g`.  // s
double collective_time(Collective kind, double bytes, const CommGroup& g, const CommContext& c);

}  // namespace shardcast::planner
