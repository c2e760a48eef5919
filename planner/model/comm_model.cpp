#include "planner/model/comm_model.h"

#include <algorithm>

#include "shared/enum_names.h"

namespace shardcast::planner {

namespace {
constexpr EnumName<Collective> kCollectives[] = {{Collective::all_gather, "all_gather"},
                                                 {Collective::reduce_scatter, "reduce_scatter"},
                                                 {Collective::all_reduce, "all_reduce"}};
}  // namespace

const char* to_string(Collective c) { return enum_name(kCollectives, c); }

double bus_bandwidth(const CommGroup& g, const CommContext& c) {
  double intra = c.intra_node_bandwidth * c.eff.intra_node_bw_eff;
  const double ranks_per_node = double(g.ranks) / g.nodes;
  // Pairwise links without a switch: on a node of n <= direct_link_max_gpus GPUs (an HGX 4-GPU
  // board; a partial job uses fewer of them) a group of k of its GPUs uses the links to its k − 1
  // peers only, each 1/(n − 1) of a GPU's (H100: 6 of the 18 NVLink links per pair).
  const int n = c.node_gpus > 0 ? c.node_gpus : c.gpus_per_node;
  if (n > 1 && n <= c.direct_link_max_gpus && ranks_per_node >= 2 && ranks_per_node < n)
    intra *= (ranks_per_node - 1) / (n - 1);
  if (g.nodes <= 1) return intra;
  // A ring leaves each node once per channel, so a node's NICs carry about one copy of the
  // data whatever the group's ranks per node; groups that run side by side on the same nodes
  // (HSDP replica groups, one per local rank) split the NICs between them.
  const double nic_share =
      c.inter_node_bandwidth * c.eff.inter_node_bw_eff * std::min(1.0, ranks_per_node / c.gpus_per_node);
  return std::min(intra, nic_share);
}

double collective_time(Collective kind, double bytes, const CommGroup& g, const CommContext& c) {
  if (g.ranks <= 1 || bytes <= 0) return 0;
  const double n = g.ranks;
  const double rounds = kind == Collective::all_reduce ? 2.0 : 1.0;  // AR = RS + AG
  double inter_steps = rounds * (g.nodes - 1);
  double intra_steps = rounds * (n - 1) - inter_steps;
  if (kind == Collective::reduce_scatter && c.reduce_scatter_one_round) {  // one all-to-all round
    inter_steps = g.nodes > 1 ? 1 : 0;
    intra_steps = 1 - inter_steps;
  }
  const double latency = c.eff.collective_base_latency_s + intra_steps * c.intra_node_latency +
                         inter_steps * c.inter_node_latency;
  return latency + rounds * (n - 1) / n * bytes / bus_bandwidth(g, c);
}

}  // namespace shardcast::planner
