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
  const double intra = c.intra_node_bandwidth * c.eff.intra_node_bw_eff;
  if (g.nodes <= 1) return intra;
  // A ring leaves each node once per channel, so a node's NICs carry about one copy of the
  // data whatever the group's ranks per node; groups that run side by side on the same nodes
  // (HSDP replica groups, one per local rank) split the NICs between them.
  const double ranks_per_node = double(g.ranks) / g.nodes;
  const double nic_share =
      c.inter_node_bandwidth * c.eff.inter_node_bw_eff * std::min(1.0, ranks_per_node / c.gpus_per_node);
  return std::min(intra, nic_share);
}

double collective_time(Collective kind, double bytes, const CommGroup& g, const CommContext& c) {
  if (g.ranks <= 1 || bytes <= 0) return 0;
  const double n = g.ranks;
  const double rounds = kind == Collective::all_reduce ? 2.0 : 1.0;  // AR = RS + AG
  const double inter_steps = rounds * (g.nodes - 1);
  const double intra_steps = rounds * (n - 1) - inter_steps;
  const double latency = c.eff.collective_base_latency_s + intra_steps * c.intra_node_latency +
                         inter_steps * c.inter_node_latency;
  return latency + rounds * (n - 1) / n * bytes / bus_bandwidth(g, c);
}

}  // namespace shardcast::planner
