// exposed_intervals: compute idle while communication runs, read off a timeline.
#include <gtest/gtest.h>

#include "gui/timeline_view.h"

using namespace shardcast;
using namespace shardcast::gui;

TEST(ExposedIntervals, GapsOfComputeCoveredByComm) {
  // compute: [0,1) [2,3) [3,4); comm: [0.5,2.5) [4,5) → exposed [1,2) and [4,5).
  std::vector<TimelineEvent> ev = {{"fwd 0", "compute", 0, 1, 0},        {"fwd 1", "compute", 2, 1, 1},
                                   {"fwd 2", "compute", 3, 1, 2},        {"all_gather 1", "comm", 0.5, 2, 1},
                                   {"reduce_scatter 2", "comm_inter", 4, 1, 2}};
  const auto x = exposed_intervals(ev);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_DOUBLE_EQ(x[0].first, 1);
  EXPECT_DOUBLE_EQ(x[0].second, 2);
  EXPECT_DOUBLE_EQ(x[1].first, 4);
  EXPECT_DOUBLE_EQ(x[1].second, 5);
}

TEST(ExposedIntervals, CommBeforeFirstComputeIsExposed) {
  std::vector<TimelineEvent> ev = {{"all_gather 0", "comm", 0, 0.25, 0}, {"fwd 0", "compute", 0.25, 1, 0}};
  const auto x = exposed_intervals(ev);
  ASSERT_EQ(x.size(), 1u);
  EXPECT_DOUBLE_EQ(x[0].second - x[0].first, 0.25);
  EXPECT_TRUE(exposed_intervals({{"fwd 0", "compute", 0, 1, 0}, {"all_gather 1", "comm", 0, 1, 1}}).empty());
}

// The mesh lanes (planner/model/mesh_stage.cpp add_mesh_lanes) are not FSDP communication: tp/cp
// sit inside compute, and the pipeline's bubble after the last event is idle time the planner
// reports apart (pp_bubble_s), so none of them is highlighted; the comm lane still is.
TEST(ExposedIntervals, MeshLanesAreNotExposedCommunication) {
  std::vector<TimelineEvent> ev = {{"fwd 1", "compute", 0, 1, 1},
                                   {"tp fwd 1", "tp", 0.75, 0.25, 1},
                                   {"cp fwd 1", "cp", 0.5, 0.5, 1},
                                   {"all_gather 2", "comm", 1, 0.5, 2},
                                   {"fwd 2", "compute", 1.5, 1, 2},
                                   {"pipeline bubble and sends", "pp", 2.5, 2, -1}};
  const auto x = exposed_intervals(ev);
  ASSERT_EQ(x.size(), 1u);
  EXPECT_DOUBLE_EQ(x[0].first, 1);
  EXPECT_DOUBLE_EQ(x[0].second, 1.5);
  EXPECT_TRUE(is_mesh_lane("pp") && is_mesh_lane("tp") && is_mesh_lane("cp"));
  EXPECT_FALSE(is_mesh_lane("comm_inter"));
}
