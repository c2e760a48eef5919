// The caching allocator model against cases computed by hand from the rules of
// c10/cuda/CUDACachingAllocator.cpp (docs/cost-model.md §5.4), and the replay of a simulated
// step: the allocator's allocated peak is the simulator's to within block rounding, and
// reserved is never below allocated.
#include "planner/model/allocator/caching_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "planner/model/allocator/allocation_trace.h"
#include "planner/model/ops.h"
#include "planner/model/simulator.h"
#include "tests/planner/allocator_step_input.h"

namespace shardcast::planner {
namespace {

constexpr int64_t MiB = 1 << 20;

TEST(CachingAllocator, RoundingAndSegmentSizes) {
  EXPECT_EQ(allocator_round_size(1), 512);
  EXPECT_EQ(allocator_round_size(513), 1024);
  EXPECT_EQ(allocator_segment_size(1024), 2 * MiB);            // small pool: 2 MiB segments
  EXPECT_EQ(allocator_segment_size(kSmallSize + 512), 20 * MiB);  // 1 MiB < size < 10 MiB
  EXPECT_EQ(allocator_segment_size(10 * MiB), 10 * MiB);       // ≥ 10 MiB: rounded to 2 MiB
  EXPECT_EQ(allocator_segment_size(10 * MiB + 512), 12 * MiB);
}

TEST(CachingAllocator, TenMebibytesMinusOrPlusOneByte) {
  {
    // 10 MiB − 1 B rounds to 10 MiB (512 B steps): its own 10 MiB segment, nothing to split.
    CachingAllocator a({});
    a.malloc(10 * MiB - 1, 0, 0);
    EXPECT_EQ(a.reserved(), 10 * MiB);
    EXPECT_EQ(a.allocated(), 10 * MiB);
  }
  {
    // 10 MiB + 1 B rounds to 10 MiB + 512 B: a 12 MiB segment, split (remainder > 1 MiB).
    CachingAllocator a({});
    a.malloc(10 * MiB + 1, 0, 0);
    EXPECT_EQ(a.reserved(), 12 * MiB);
    EXPECT_EQ(a.allocated(), 10 * MiB + 512);
    // The 2 MiB − 512 B remainder serves a 1.5 MiB request without a new segment.
    a.malloc(3 * MiB / 2, 0, 0);
    EXPECT_EQ(a.reserved(), 12 * MiB);
    EXPECT_EQ(a.segments(), 1);
  }
  {
    // 10 MiB − 512 B stays below 10 MiB: a 20 MiB segment; the 10 MiB + 512 B remainder takes
    // a second request of the same size whole (its 1 KiB rest is not split off: ≤ 1 MiB).
    CachingAllocator a({});
    a.malloc(10 * MiB - 512, 0, 0);
    EXPECT_EQ(a.reserved(), 20 * MiB);
    a.malloc(10 * MiB - 512, 0, 0);
    EXPECT_EQ(a.reserved(), 20 * MiB);
    EXPECT_EQ(a.allocated(), 20 * MiB);
  }
}

TEST(CachingAllocator, SplitOnlyWhenTheRemainderIsOverOneMebibyte) {
  CachingAllocator a({});
  const int h = a.malloc(100 * MiB, 0, 0);
  a.free(h);
  // Best fit: the cached 100 MiB block, split into 60 and 40 MiB.
  a.malloc(60 * MiB, 0, 1);
  EXPECT_EQ(a.reserved(), 100 * MiB);
  EXPECT_EQ(a.allocated(), 60 * MiB);
  a.malloc(40 * MiB, 0, 2);  // the remainder, exactly
  EXPECT_EQ(a.reserved(), 100 * MiB);
  a.malloc(41 * MiB, 0, 3);  // nothing cached: a new 42 MiB segment
  EXPECT_EQ(a.reserved(), 142 * MiB);
  // A remainder of 1 MiB or less is not split off: the whole block is handed out.
  CachingAllocator b({});
  b.free(b.malloc(100 * MiB, 0, 0));
  b.malloc(99 * MiB, 0, 1);
  EXPECT_EQ(b.allocated(), 100 * MiB);
  b.malloc(1 * MiB + 512, 0, 2);  // so this one needs a segment of its own (20 MiB)
  EXPECT_EQ(b.reserved(), 120 * MiB);
}

TEST(CachingAllocator, FreedBlockReusedBySameStreamOnly) {
  CachingAllocator a({});
  a.free(a.malloc(50 * MiB, 0, 0));
  a.malloc(50 * MiB, 1, 1);  // another stream: a new segment
  EXPECT_EQ(a.reserved(), 100 * MiB);
  a.malloc(50 * MiB, 0, 2);  // the first stream: its cached block
  EXPECT_EQ(a.reserved(), 100 * MiB);
  EXPECT_EQ(a.peak_reserved(), 100 * MiB);
}

TEST(CachingAllocator, RecordStreamBlockReturnsWhenItsUseEnds) {
  CachingAllocator a({});
  a.free_after(a.malloc(50 * MiB, 0, 0), 5.0);
  a.malloc(50 * MiB, 0, 4.0);  // still in use by the other stream: a new segment
  EXPECT_EQ(a.reserved(), 100 * MiB);
  a.malloc(50 * MiB, 0, 6.0);  // ready at 5: reused
  EXPECT_EQ(a.reserved(), 100 * MiB);
  EXPECT_EQ(a.allocated(), 100 * MiB);
}

TEST(CachingAllocator, FreedNeighboursMergeWithinASegmentNotAcross) {
  // Fixed segments: two 30 MiB segments freed stay two blocks; 50 MiB needs a third segment.
  CachingAllocator fixed({});
  const int f1 = fixed.malloc(30 * MiB, 0, 0), f2 = fixed.malloc(30 * MiB, 0, 0);
  fixed.free(f1);
  fixed.free(f2);
  fixed.malloc(50 * MiB, 0, 1);
  EXPECT_EQ(fixed.reserved(), 110 * MiB);
  // Expandable segments: one segment per stream mapped in 20 MiB pages (30 → 40 MiB, the
  // second 30 MiB joins the 10 MiB tail and maps 20 more); freed, the two merge into one
  // 60 MiB block that holds the 50 MiB request.
  CachingAllocator exp({true});
  const int e1 = exp.malloc(30 * MiB, 0, 0);
  EXPECT_EQ(exp.reserved(), 40 * MiB);
  const int e2 = exp.malloc(30 * MiB, 0, 0);
  EXPECT_EQ(exp.reserved(), 60 * MiB);
  exp.free(e1);
  exp.free(e2);
  exp.malloc(50 * MiB, 0, 1);
  EXPECT_EQ(exp.reserved(), 60 * MiB);
  EXPECT_EQ(exp.segments(), 1);
  // Another stream gets a segment of its own.
  exp.malloc(10 * MiB, 1, 1);
  EXPECT_EQ(exp.reserved(), 80 * MiB);
}

TEST(CachingAllocator, FailedCudaMallocReleasesTheCacheAndRetries) {
  CachingAllocatorConfig cfg;
  cfg.capacity_bytes = double(100 * MiB);
  CachingAllocator a(cfg);
  a.free(a.malloc(60 * MiB, 0, 0));
  a.malloc(70 * MiB, 0, 1);  // 60 + 70 > 100: the cached 60 MiB segment is released
  EXPECT_EQ(a.retries(), 1);
  EXPECT_FALSE(a.out_of_memory());
  EXPECT_EQ(a.reserved(), 70 * MiB);
  EXPECT_EQ(a.peak_reserved(), 70 * MiB);
  a.malloc(40 * MiB, 0, 2);  // 110 > 100 with nothing cached: out of memory
  EXPECT_TRUE(a.out_of_memory());
}

// A few units of FSDP with distinct sizes on every kind of tensor (allocator_step_input.h).
SimInput step_input(int U) { return test::allocator_step_input(U); }

TEST(AllocationTrace, ReplayedAllocatedPeakIsTheSimulatorsAndReservedIsAboveIt) {
  for (int U : {3, 8}) {
    for (bool record_stream : {false, true}) {
      for (bool expandable : {false, true}) {
        const SimInput in = step_input(U);
        const SimResult sim = simulate(in);
        TraceInputs ti;
        const double shard = 25.0 * MiB;  // 4·P/N per unit
        ti.param_shard_bytes.assign(size_t(U), shard);
        ti.optimizer_bytes.assign(size_t(U), shard);
        ti.static_grad_bytes.assign(size_t(U), 0.0);
        ti.record_stream = record_stream;
        CachingAllocatorConfig cfg;
        cfg.expandable_segments = expandable;
        const ReplayResult r = replay_allocation_trace(build_allocation_trace(sim, ti), cfg);
        // The simulator's allocated peak plus the static state (parameters and both moments):
        // the replay allocates the same tensors, each rounded up to 512 B, and a large block
        // whose remainder is ≤ 1 MiB is handed out whole — at most 1 MiB more per live tensor
        // (fewer than 8 per unit here).
        const double sim_alloc = sim.mem_peak_bytes + 3.0 * shard * U;
        EXPECT_GE(r.peak_allocated, sim_alloc - 1.0) << U << record_stream << expandable;
        EXPECT_LE(r.peak_allocated, sim_alloc + 8.0 * U * MiB) << U << record_stream << expandable;
        EXPECT_GE(r.peak_reserved, r.peak_allocated) << U << record_stream << expandable;
        EXPECT_FALSE(r.out_of_memory);
      }
    }
  }
}

TEST(AllocationTrace, LossTensorByTensorKeepsTheAllocatedPeak) {
  // The head's fp32 up-cast loss given tensor by tensor (n logits, bf16) against the same
  // unit as the simulator's lumps: the sequence's peaks are the lumps' (forward: saved +
  // forward transient = other + 10n; backward: saved + backward transient = other + 12n), so
  // the allocated peak agrees to the rounding bound of the test above; only the layout may
  // change what is reserved, never below what is allocated.
  const int U = 6;
  const double n = 100.0 * MiB, other = 30.0 * MiB;
  SimInput in = step_input(U);
  SimUnit& head = in.units.back();
  head.saved_bytes = other + 4.0 * n;
  head.fwd_transient_bytes = 6.0 * n;
  head.bwd_transient_bytes = 8.0 * n;
  const SimResult sim = simulate(in);
  for (bool expandable : {false, true}) {
    TraceInputs ti;
    ti.param_shard_bytes.assign(size_t(U), 25.0 * MiB);
    ti.optimizer_bytes.assign(size_t(U), 25.0 * MiB);
    ti.static_grad_bytes.assign(size_t(U), 0.0);
    CachingAllocatorConfig cfg;
    cfg.expandable_segments = expandable;
    const ReplayResult lumps = replay_allocation_trace(build_allocation_trace(sim, ti), cfg);
    ti.sequences.resize(size_t(U));
    ti.sequences.back() = fp32_upcast_loss_sequence(n, 2, other, false);
    const ReplayResult tensors = replay_allocation_trace(build_allocation_trace(sim, ti), cfg);
    EXPECT_NEAR(tensors.peak_allocated, lumps.peak_allocated, 8.0 * U * MiB) << expandable;
    EXPECT_GE(tensors.peak_reserved, tensors.peak_allocated) << expandable;
    EXPECT_FALSE(tensors.out_of_memory);
  }
  // The sequence's own peaks are the lumps'.
  const UnitTensorSequence q = fp32_upcast_loss_sequence(n, 2, other, false);
  double live = 0, fwd_peak = 0, bwd_peak = 0;
  std::vector<double> size(8, 0.0);
  for (const auto* steps : {&q.forward, &q.backward})
    for (const TensorStep& st : *steps) {
      if (st.bytes > 0) size[size_t(st.id)] = st.bytes;
      live += st.bytes > 0 ? st.bytes : -size[size_t(st.id)];
      (steps == &q.forward ? fwd_peak : bwd_peak) = std::max(steps == &q.forward ? fwd_peak : bwd_peak, live);
    }
  EXPECT_DOUBLE_EQ(fwd_peak, other + 10.0 * n);
  EXPECT_DOUBLE_EQ(bwd_peak, other + 12.0 * n);
  // Left for the backward's end: the final norm's tensors and the logits' gradient (A·n), which
  // the head's matmul backward reads.
  EXPECT_DOUBLE_EQ(live, other + 2.0 * n);
  // Peaks of a sequence, forward and backward, and what is live at its end.
  auto peaks = [&](const UnitTensorSequence& seq, double* fwd, double* bwd, double* end) {
    double now = 0;
    *fwd = *bwd = 0;
    std::vector<double> bytes(16, 0.0);
    for (const auto* steps : {&seq.forward, &seq.backward})
      for (const TensorStep& st : *steps) {
        if (st.bytes > 0) bytes[size_t(st.id)] = st.bytes;
        now += st.bytes > 0 ? st.bytes : -bytes[size_t(st.id)];
        double& peak = steps == &seq.forward ? *fwd : *bwd;
        peak = std::max(peak, now);
      }
    *end = now;
  };
  // fp32 logits held by the loop: the copy is the model's output, a block of its own outside the
  // sequence (the simulator's model_outputs), so the sequence is the loss beside it: the bf16
  // logits go before log_softmax runs (forward other + 4n), backward other + 12n as above.
  double f = 0, b = 0, e = 0;
  peaks(fp32_upcast_loss_sequence(n, 2, other, true), &f, &b, &e);
  EXPECT_DOUBLE_EQ(f, other + 4.0 * n);
  EXPECT_DOUBLE_EQ(b, other + 12.0 * n);
  EXPECT_DOUBLE_EQ(e, other + 2.0 * n);
  // transformers' shifted copy (fp32_upcast_shifted): forward the fp32 copy, the shifted copy
  // and log_softmax's output together, other + 12n = the lumps' saved (other + 4n) + forward
  // transient (max(A + 4, 8)·n = 8n); held, the copy is the output: other + 8n. Backward other
  // + 12n either way (the shift's gradient is made and freed before slice backward's).
  peaks(fp32_upcast_loss_sequence(n, 2, other, false, CrossEntropyImpl::fp32_upcast_shifted), &f, &b, &e);
  EXPECT_DOUBLE_EQ(f, other + 12.0 * n);
  EXPECT_DOUBLE_EQ(b, other + 12.0 * n);
  EXPECT_DOUBLE_EQ(e, other + 2.0 * n);
  const LossMemory shifted = loss_memory(CrossEntropyImpl::fp32_upcast_shifted, 1.0, n, 2);
  EXPECT_DOUBLE_EQ(f, other + shifted.saved + shifted.fwd_transient);
  EXPECT_DOUBLE_EQ(b, other + shifted.saved + shifted.bwd_transient);
  peaks(fp32_upcast_loss_sequence(n, 2, other, true, CrossEntropyImpl::fp32_upcast_shifted), &f, &b, &e);
  EXPECT_DOUBLE_EQ(f, other + 8.0 * n);
  EXPECT_DOUBLE_EQ(b, other + 12.0 * n);
  EXPECT_DOUBLE_EQ(e, other + 2.0 * n);
  // torch's loss_parallel handlers on a vocabulary shard (dtensor_extra): one fp32 shard tensor
  // more each way, as the head's lumps add it (mesh_stage.cpp): forward other + 14n, backward
  // other + 16n, the same left at the end.
  peaks(fp32_upcast_loss_sequence(n, 2, other, false, CrossEntropyImpl::fp32_upcast, true), &f, &b, &e);
  EXPECT_DOUBLE_EQ(f, other + 14.0 * n);
  EXPECT_DOUBLE_EQ(b, other + 16.0 * n);
  EXPECT_DOUBLE_EQ(e, other + 2.0 * n);
  // litgpt's chunked loss (fp32_upcast_chunked): forward as fp32_upcast; backward the chunks'
  // gradients take their log-probabilities' place and cat's gradient of the copy comes beside
  // them: other + 8n, 4n under the one-call loss's 12n, and the lumps' saved + backward
  // transient again (exact: the same byte counts summed in another order).
  const LossMemory chunked = loss_memory(CrossEntropyImpl::fp32_upcast_chunked, 1.0, n, 2);
  peaks(fp32_upcast_loss_sequence(n, 2, other, false, CrossEntropyImpl::fp32_upcast_chunked), &f, &b, &e);
  EXPECT_DOUBLE_EQ(f, other + 10.0 * n);
  EXPECT_DOUBLE_EQ(f, other + chunked.saved + chunked.fwd_transient);
  EXPECT_DOUBLE_EQ(b, other + 8.0 * n);
  EXPECT_DOUBLE_EQ(b, other + chunked.saved + chunked.bwd_transient);
  EXPECT_DOUBLE_EQ(e, other + 2.0 * n);
  peaks(fp32_upcast_loss_sequence(n, 2, other, true, CrossEntropyImpl::fp32_upcast_chunked), &f, &b, &e);
  EXPECT_DOUBLE_EQ(f, other + 4.0 * n);
  EXPECT_DOUBLE_EQ(b, other + 8.0 * n);
  EXPECT_DOUBLE_EQ(e, other + 2.0 * n);
}

TEST(AllocationTrace, RecordStreamWithoutRateLimiterReservesMore) {
  // The blocks another stream used come back a compute task later: never less reserved.
  const SimInput in = step_input(8);
  const SimResult sim = simulate(in);
  TraceInputs ti;
  ti.param_shard_bytes.assign(8, 25.0 * MiB);
  ti.optimizer_bytes.assign(8, 25.0 * MiB);
  ti.static_grad_bytes.assign(8, 0.0);
  const double limited = replay_allocation_trace(build_allocation_trace(sim, ti), {}).peak_reserved;
  ti.record_stream = true;
  const double lagged = replay_allocation_trace(build_allocation_trace(sim, ti), {}).peak_reserved;
  EXPECT_GT(lagged, limited);
}

// Every counter after every operation, for comparing two allocators driven alike.
struct Counters {
  int64_t allocated, reserved, peak_allocated, peak_reserved;
  int segments, retries;
  bool oom;
  bool operator==(const Counters& o) const {
    return allocated == o.allocated && reserved == o.reserved && peak_allocated == o.peak_allocated &&
           peak_reserved == o.peak_reserved && segments == o.segments && retries == o.retries && oom == o.oom;
  }
};
Counters counters(const CachingAllocator& a) {
  return {a.allocated(), a.reserved(), a.peak_allocated(), a.peak_reserved(), a.segments(), a.retries(),
          a.out_of_memory()};
}

// A random run of mallocs, frees and recordStream frees on 3 streams, small and large sizes,
// under a capacity that forces cache releases; the counters after each operation.
std::vector<Counters> random_run(CachingAllocator& a, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> small(1, kSmallSize), large(kSmallSize + 1, 64 * MiB);
  std::vector<int> live;
  std::vector<Counters> out;
  double now = 0;
  for (int i = 0; i < 3000; ++i) {
    now += 1.0;
    if (live.empty() || rng() % 5 < 3) {
      const int64_t bytes = rng() % 2 ? small(rng) : large(rng);
      live.push_back(a.malloc(bytes, int(rng() % 3), now));
    } else {
      const size_t k = rng() % live.size();
      if (rng() % 3 == 0) a.free_after(live[k], now + double(rng() % 20));
      else a.free(live[k]);
      live[k] = live.back();
      live.pop_back();
    }
    out.push_back(counters(a));
  }
  return out;
}

// reset() reuses an instance's storage (plan() replays through one per thread): a reused
// instance must behave exactly as a new one, whatever the previous replay left in it. Exact
// equality: the same integer arithmetic on the same sequence.
TEST(CachingAllocator, ResetInstanceReplaysExactlyAsANewOne) {
  for (bool expandable : {false, true}) {
    CachingAllocatorConfig cfg;
    cfg.expandable_segments = expandable;
    cfg.capacity_bytes = 3000.0 * MiB;
    CachingAllocator reused(cfg);
    for (unsigned seed : {1u, 2u, 3u}) {
      CachingAllocator fresh(cfg);
      const std::vector<Counters> want = random_run(fresh, seed);
      reused.reset(cfg);
      const std::vector<Counters> got = random_run(reused, seed);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(got[i] == want[i]) << expandable << " " << seed << " op " << i;
      EXPECT_GT(want.back().retries, 0) << "the capacity is meant to force releases";
    }
  }
}

// replay_allocation_trace keeps its allocator and build_allocation_trace its scratch per
// thread: replaying traces of different sizes in turn gives each one's result every time.
TEST(AllocationTrace, ReplayWithReusedStorageIsTheSameEveryTime) {
  std::vector<std::vector<AllocEvent>> traces;
  for (int U : {3, 8, 5}) {
    const SimResult sim = simulate(step_input(U));
    TraceInputs ti;
    ti.param_shard_bytes.assign(size_t(U), 25.0 * MiB);
    ti.optimizer_bytes.assign(size_t(U), 25.0 * MiB);
    ti.static_grad_bytes.assign(size_t(U), 0.0);
    ti.record_stream = U == 5;
    std::vector<AllocEvent> into(7);  // not empty: the overload clears it
    build_allocation_trace(sim, ti, &into);
    const std::vector<AllocEvent> value = build_allocation_trace(sim, ti);
    ASSERT_EQ(into.size(), value.size());
    for (size_t i = 0; i < into.size(); ++i) {
      EXPECT_EQ(into[i].t, value[i].t);
      EXPECT_EQ(into[i].tensor, value[i].tensor);
      EXPECT_EQ(into[i].bytes, value[i].bytes);
      EXPECT_EQ(into[i].stream, value[i].stream);
      EXPECT_EQ(into[i].pool, value[i].pool);
      EXPECT_EQ(into[i].ready, value[i].ready);
    }
    traces.push_back(value);
  }
  std::vector<ReplayResult> first;
  for (const auto& t : traces) first.push_back(replay_allocation_trace(t, {}));
  for (int round = 0; round < 2; ++round)
    for (size_t i = traces.size(); i-- > 0;) {
      const ReplayResult r = replay_allocation_trace(traces[i], {});
      EXPECT_EQ(r.peak_reserved, first[i].peak_reserved) << i;
      EXPECT_EQ(r.peak_allocated, first[i].peak_allocated) << i;
      EXPECT_EQ(r.segments, first[i].segments) << i;
    }
}

}  // namespace
}  // namespace shardcast::planner
