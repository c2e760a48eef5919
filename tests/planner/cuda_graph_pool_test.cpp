// The CUDA graphs' private pool (allocation_trace.h TraceInputs::cuda_graphs): cases computed by
// hand from the rules of c10/cuda/CUDACachingAllocator.cpp for a private pool (fixed segments
// under expandable segments, the split rule of the setting), the two pools' replay against the
// one-pool replay of the same tensors (the allocated peak is the same tensors at the same times),
// and torch.cuda.graph's empty_cache before the capture.
#include <gtest/gtest.h>

#include <vector>

#include "planner/model/allocator/allocation_trace.h"
#include "planner/model/allocator/caching_allocator.h"
#include "planner/model/ops.h"
#include "planner/model/simulator.h"
#include "tests/planner/allocator_step_input.h"

namespace shardcast::planner {
namespace {

constexpr int64_t MiB = 1 << 20;

// alloc_block: a private pool cudaMallocs a segment per request even with expandable segments
// on. 100 MiB freed, then 150 MiB: the cached block is too small, a second segment of 150 MiB
// (250 MiB reserved); the device pool instead grows its one segment past the free 100 MiB at its
// end by whole 20 MiB pages (3 pages: 160 MiB reserved).
TEST(CudaGraphPool, PrivatePoolMallocsWholeSegmentsUnderExpandableSegments) {
  CachingAllocatorConfig device;
  device.expandable_segments = true;
  CachingAllocatorConfig graph = device;
  graph.private_pool = true;
  CachingAllocator d(device), g(graph);
  for (CachingAllocator* a : {&d, &g}) {
    a->free(a->malloc(100 * MiB, 0, 0));
    a->malloc(150 * MiB, 0, 1);
  }
  EXPECT_EQ(g.reserved(), 250 * MiB);
  EXPECT_EQ(g.segments(), 2);
  EXPECT_EQ(d.reserved(), 160 * MiB);
}

// should_split reads the setting, not the segment: in a private pool under expandable segments
// a 100 MiB block serving 99.5 MiB is split (remainder 0.5 MiB ≥ 512 B) and 99.5 MiB is
// allocated; without the setting the remainder (≤ 1 MiB) stays in the block, 100 MiB allocated.
TEST(CudaGraphPool, PrivatePoolKeepsTheSettingsSplitRule) {
  for (bool expandable : {true, false}) {
    CachingAllocatorConfig graph;
    graph.expandable_segments = expandable;
    graph.private_pool = true;
    CachingAllocator g(graph);
    g.free(g.malloc(100 * MiB, 0, 0));
    g.malloc(100 * MiB - MiB / 2, 0, 1);
    EXPECT_EQ(g.allocated(), expandable ? 100 * MiB - MiB / 2 : 100 * MiB) << expandable;
    EXPECT_EQ(g.reserved(), 100 * MiB) << expandable;
  }
}

AllocEvent alloc(double t, int tensor, int64_t bytes, int pool) {
  AllocEvent e;
  e.t = t;
  e.tensor = tensor;
  e.bytes = bytes;
  e.pool = pool;
  return e;
}
AllocEvent release(double t, int tensor, int pool) {
  AllocEvent e = alloc(t, tensor, 0, pool);
  e.ready = t;
  return e;
}

// Neither pool hands its free blocks to the other: the optimizer's 64 MiB freed in the device
// pool and a captured 64 MiB in the graph pool hold 128 MiB; the same tensors in one pool hold
// 64 MiB; torch.cuda.graph's empty_cache between them releases the device pool's cached segment
// first (64 MiB).
TEST(CudaGraphPool, PoolsDoNotShareFreeBlocksAndEmptyCacheReleasesTheDevicePool) {
  const std::vector<AllocEvent> two = {alloc(0, 0, 64 * MiB, kPoolDevice), release(1, 0, kPoolDevice),
                                       alloc(2, 1, 64 * MiB, kPoolGraph)};
  const ReplayResult split = replay_allocation_trace(two, {}, true);
  EXPECT_EQ(split.peak_reserved, 128.0 * MiB);
  EXPECT_EQ(split.graph_pool_reserved, 64.0 * MiB);
  EXPECT_EQ(split.peak_allocated, 64.0 * MiB);

  std::vector<AllocEvent> one = two;
  one[2].pool = kPoolDevice;
  EXPECT_EQ(replay_allocation_trace(one, {}).peak_reserved, 64.0 * MiB);

  std::vector<AllocEvent> emptied = two;
  AllocEvent empty = release(1.5, kEmptyCache, kPoolDevice);
  emptied.insert(emptied.begin() + 2, empty);
  EXPECT_EQ(replay_allocation_trace(emptied, {}, true).peak_reserved, 64.0 * MiB);
}

// The same tensors at the same times in two pools or in one: with expandable segments every
// block is split to its rounded size (remainder ≥ 512 B, the setting's rule in both pools), so
// the allocated bytes do not depend on which segment holds a block and the allocated peaks are
// equal exactly. The graph pool keeps the units' segments beside the device pool's static state
// (parameters, gradients, both moments), so the reserved peak is at least their sum at the end.
TEST(CudaGraphPool, SplitPoolsKeepTheAllocatedPeak) {
  const int U = 8;
  const SimResult sim = simulate(test::allocator_step_input(U, 0));  // gradients kept between steps
  for (bool record_stream : {false, true}) {
    TraceInputs ti;
    ti.param_shard_bytes.assign(size_t(U), 75.0 * MiB);
    ti.optimizer_bytes.assign(size_t(U), 75.0 * MiB);
    ti.static_grad_bytes.assign(size_t(U), 75.0 * MiB);  // kept between steps, as with CUDA graphs
    ti.record_stream = record_stream;
    CachingAllocatorConfig cfg;
    cfg.expandable_segments = true;
    const ReplayResult eager = replay_allocation_trace(build_allocation_trace(sim, ti), cfg);
    ti.cuda_graphs = true;
    const std::vector<AllocEvent> trace = build_allocation_trace(sim, ti);
    const ReplayResult graphed = replay_allocation_trace(trace, cfg, true);
    EXPECT_EQ(graphed.peak_allocated, eager.peak_allocated) << record_stream;
    EXPECT_GT(graphed.graph_pool_reserved, 0) << record_stream;
    EXPECT_GE(graphed.peak_reserved, 4.0 * 75 * MiB * U + graphed.graph_pool_reserved) << record_stream;
    int empties = 0, graph_allocs = 0;
    for (const AllocEvent& e : trace) {
      empties += e.bytes == 0 && e.tensor == kEmptyCache;
      graph_allocs += e.bytes > 0 && e.pool == kPoolGraph;
    }
    EXPECT_EQ(empties, 1);  // before the capture, once
    EXPECT_GT(graph_allocs, 0);
  }
}

}  // namespace
}  // namespace shardcast::planner
