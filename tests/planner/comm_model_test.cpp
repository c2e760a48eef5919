// Communication model: hand-computed ring times on one and several nodes.
#include "planner/model/comm_model.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace shardcast::planner {
namespace {

CommContext ctx() {
  CommContext c;
  c.intra_node_bandwidth = 300e9;  // bytes/s
  c.inter_node_bandwidth = 50e9;   // bytes/s per node (400 Gb/s)
  c.intra_node_latency = 3e-6;
  c.inter_node_latency = 10e-6;
  c.gpus_per_node = 8;
  c.eff.intra_node_bw_eff = 0.8;
  c.eff.inter_node_bw_eff = 0.9;
  c.eff.collective_base_latency_s = 20e-6;
  return c;
}

TEST(CommModel, OneRankCostsNothing) {
  EXPECT_EQ(collective_time(Collective::all_gather, 1e9, {1, 1}, ctx()), 0.0);
}

TEST(CommModel, AllGatherInsideANode) {
  // 8 ranks, 1 GB: 20 µs + 7·3 µs + 7/8 · 1e9 / (0.8·300e9).
  const double t = collective_time(Collective::all_gather, 1e9, {8, 1}, ctx());
  EXPECT_NEAR(t, 20e-6 + 7 * 3e-6 + 0.875 * 1e9 / 240e9, 1e-12);
  EXPECT_DOUBLE_EQ(t, collective_time(Collective::reduce_scatter, 1e9, {8, 1}, ctx()));
}

// shardcast-train's Gloo reduce-scatter is one all-to-all round (runtime term gloo_reduce_scatter):
// one step's latency, a ring's bytes; all-gather and all-reduce stay rings.
TEST(CommModel, AllToAllReduceScatterPaysOneStep) {
  CommContext c = ctx();
  c.reduce_scatter_one_round = true;
  EXPECT_NEAR(collective_time(Collective::reduce_scatter, 1e9, {8, 1}, c), 20e-6 + 3e-6 + 0.875 * 1e9 / 240e9, 1e-12);
  EXPECT_DOUBLE_EQ(collective_time(Collective::all_gather, 1e9, {8, 1}, c),
                   collective_time(Collective::all_gather, 1e9, {8, 1}, ctx()));
  EXPECT_DOUBLE_EQ(collective_time(Collective::all_reduce, 1e9, {8, 1}, c),
                   collective_time(Collective::all_reduce, 1e9, {8, 1}, ctx()));
  // Two ranks: one ring step either way.
  EXPECT_DOUBLE_EQ(collective_time(Collective::reduce_scatter, 1e6, {2, 1}, c),
                   collective_time(Collective::reduce_scatter, 1e6, {2, 1}, ctx()));
  // Across nodes the one round is an inter-node step.
  const double across = collective_time(Collective::reduce_scatter, 1e3, {16, 2}, c);
  EXPECT_NEAR(across - collective_time(Collective::reduce_scatter, 0.5e3, {16, 2}, c),
              collective_time(Collective::all_gather, 1e3, {16, 2}, ctx()) -
                  collective_time(Collective::all_gather, 0.5e3, {16, 2}, ctx()),
              1e-15);
  EXPECT_GT(across, 20e-6 + 10e-6);
  EXPECT_LT(across, 20e-6 + 10e-6 + 1e-6);
}

TEST(CommModel, AllReduceIsTwoRounds) {
  const double t = collective_time(Collective::all_reduce, 1e9, {8, 1}, ctx());
  EXPECT_NEAR(t, 20e-6 + 14 * 3e-6 + 2 * 0.875 * 1e9 / 240e9, 1e-12);
}

TEST(CommModel, AcrossNodesTheNicBinds) {
  // 16 ranks on 2 nodes: one ring channel per NIC crosses each node boundary, so the node's
  // NICs (0.9·50 GB/s) carry one copy: steps 14 intra + 1 inter.
  const double t = collective_time(Collective::all_gather, 1e9, {16, 2}, ctx());
  EXPECT_NEAR(t, 20e-6 + 14 * 3e-6 + 1 * 10e-6 + 15.0 / 16 * 1e9 / 45e9, 1e-12);
  EXPECT_DOUBLE_EQ(bus_bandwidth({16, 2}, ctx()), 45e9);
}

// A 4-GPU node linked pair by pair (HGX 4-GPU, direct_link_max_gpus = 4): a pair uses the links
// to its one peer, a third of a GPU's, also when the job uses only 2 of the board's GPUs; three
// GPUs two thirds; the whole node and groups with one rank per node all of them. An 8-GPU node of
// the same preset is switched. Exact: the bandwidth
// is the product.
TEST(CommModel, DirectLinksGiveAGroupItsPeersLinksOnly) {
  CommContext c = ctx();
  c.gpus_per_node = 4;
  c.direct_link_max_gpus = 4;
  EXPECT_DOUBLE_EQ(bus_bandwidth({2, 1}, c), 240e9 / 3);
  EXPECT_DOUBLE_EQ(bus_bandwidth({3, 1}, c), 240e9 * 2 / 3);
  EXPECT_DOUBLE_EQ(bus_bandwidth({4, 1}, c), 240e9);
  EXPECT_DOUBLE_EQ(bus_bandwidth({4, 2}, c), std::min(240e9 / 3, 45e9 * 2 / 4));
  EXPECT_DOUBLE_EQ(bus_bandwidth({8, 8}, c), std::min(240e9, 45e9 / 4));
  const double t = collective_time(Collective::all_gather, 1e9, {2, 1}, c);
  EXPECT_NEAR(t, 20e-6 + 1 * 3e-6 + 0.5 * 1e9 / (240e9 / 3), 1e-12);
  c.gpus_per_node = 2;  // a job on 2 GPUs of such a board: still one third
  c.node_gpus = 4;
  EXPECT_DOUBLE_EQ(bus_bandwidth({2, 1}, c), 240e9 / 3);
  c.node_gpus = 8;  // 2 GPUs of an 8-GPU node: switched
  EXPECT_DOUBLE_EQ(bus_bandwidth({2, 1}, c), 240e9);
  c.gpus_per_node = 8;  // a node larger than the preset's direct-link boards: switched
  c.node_gpus = 0;
  EXPECT_DOUBLE_EQ(bus_bandwidth({2, 1}, c), 240e9);
}

TEST(CommModel, ReplicaGroupsShareTheNics) {
  // HSDP: 8 replica groups (one rank per node each) run side by side: each gets 1/8 of the NICs.
  EXPECT_DOUBLE_EQ(bus_bandwidth({4, 4}, ctx()), 45e9 / 8);
}

TEST(CommModel, MoreBandwidthNeverSlower) {
  CommContext c = ctx();
  double prev = 1e30;
  for (double bw : {12.5e9, 25e9, 50e9, 100e9, 400e9, 1e12}) {
    c.inter_node_bandwidth = bw;
    const double t = collective_time(Collective::reduce_scatter, 4e9, {128, 16}, c);
    EXPECT_LE(t, prev);
    prev = t;
  }
}

TEST(CommModel, LatencyGrowsWithRanks) {
  const CommContext c = ctx();
  const double small = 1e3;  // bytes: latency-bound
  EXPECT_LT(collective_time(Collective::all_gather, small, {64, 8}, c),
            collective_time(Collective::all_gather, small, {1024, 128}, c));
}

}  // namespace
}  // namespace shardcast::planner
