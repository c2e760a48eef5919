// node_placement.h: how a job of `gpus` GPUs sits on nodes of `node` GPUs — whole nodes, or part
// of one. A job smaller than a node runs its gpus as the ranks of one node (nodes = 1,
// gpus_per_node = gpus) on a physical node of `node` GPUs (cluster.node_gpus = node), whose links
// a preset's node.direct_link_max_gpus describes (comm_model.h, docs/cost-model.md §3).
// What it is not: a check of the mesh (validate_mesh) or of the hardware. The one rule shared by
// the CLI flags (config_flags.cpp), validate's published rows (validate.cpp) and search
// (search.cpp). Pure function, thread-safe.
#pragma once

#include "shared/train_config.h"

namespace shardcast::planner {

// Sets c.nodes, c.gpus_per_node and c.node_gpus for `gpus` GPUs on nodes of `node` GPUs.
// `partial`: fewer GPUs than a node take part of one; false: gpus_per_node stays `node`. Returns
// false, leaving c unchanged, when gpus is not a whole number of nodes of that gpus_per_node
// (`*gpus_per_node` tells the caller which, for its message).
inline bool place_on_nodes(int gpus, int node, bool partial, ClusterConfig& c, int* gpus_per_node = nullptr) {
  const int gpn = partial && gpus < node ? gpus : node;
  if (gpus_per_node) *gpus_per_node = gpn;
  if (gpn <= 0 || gpus % gpn != 0) return false;
  c.gpus_per_node = gpn;
  c.nodes = gpus / gpn;
  c.node_gpus = gpn < node ? node : 0;
  return true;
}

}  // namespace shardcast::planner
