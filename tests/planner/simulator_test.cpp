// Step simulator against closed forms: a chain with no overlap is a sum, compute-bound and
// communication-bound steps are the bound lane plus the ends, memory is read off the timeline.
#include "planner/model/simulator.h"

#include <gtest/gtest.h>

namespace shardcast::planner {
namespace {

// U units, each with the given compute and communication times, full_shard semantics
// (resharded after forward except the last unit, which backward starts with).
SimInput make(int U, double F, double B, double A, double R) {
  SimInput in;
  for (int i = 0; i < U; ++i) {
    SimUnit u;
    u.name = "u" + std::to_string(i);
    u.fwd_s = F;
    u.bwd_s = B;
    u.all_gather_s = A;
    u.reduce_s = R;
    u.reshard_after_forward = i != U - 1;
    u.gathered_bytes = 100;
    u.grad_bytes = 10;
    u.saved_bytes = 1000;
    in.units.push_back(u);
  }
  in.optimizer_s = 0.5;
  return in;
}

// Exact for these closed forms: the simulator only adds and compares the given durations.
constexpr double kTol = 1e-12;

TEST(Simulator, OneUnitIsASum) {
  // One unit: all_gather → forward → backward → reduce_scatter → optimizer, nothing overlaps.
  const SimResult r = simulate(make(1, 2.0, 4.0, 1.0, 3.0));
  EXPECT_NEAR(r.step_time_s, 1 + 2 + 4 + 3 + 0.5, kTol);
  EXPECT_NEAR(r.exposed_comm_s, 1 + 3, kTol);
  EXPECT_NEAR(r.compute_s, 2 + 4 + 0.5, kTol);
}

TEST(Simulator, ComputeBoundHidesAllButTheEnds) {
  // Communication much shorter than compute: only the first all_gather and the last
  // reduce_scatter are exposed.
  const int U = 6;
  const SimResult r = simulate(make(U, 2.0, 4.0, 0.1, 0.2));
  EXPECT_NEAR(r.step_time_s, 0.1 + U * (2.0 + 4.0) + 0.2 + 0.5, kTol);
  EXPECT_NEAR(r.exposed_comm_s, 0.1 + 0.2, kTol);
}

TEST(Simulator, CommunicationBoundIsTheCommLane) {
  // Compute negligible: the comm lane never idles: U forward gathers, U−1 backward gathers
  // (the last unit stays gathered), U reduce-scatters, then the optimizer.
  const int U = 5;
  const SimResult r = simulate(make(U, 0.0, 0.0, 1.0, 2.0));
  EXPECT_NEAR(r.step_time_s, U * 1.0 + (U - 1) * 1.0 + U * 2.0 + 0.5, kTol);
  EXPECT_NEAR(r.comm_s, U * 1.0 + (U - 1) * 1.0 + U * 2.0, kTol);
}

TEST(Simulator, PerfectOverlapIsTheMaxPerUnit) {
  // Forward only matters here: with gathers equal to compute, the forward pass is
  // A + U·max(F, A) (each gather runs under the previous unit's compute).
  const int U = 4;
  SimInput in = make(U, 1.0, 0.0, 1.0, 0.0);
  in.optimizer_s = 0;
  const SimResult r = simulate(in);
  // Backward: U−1 gathers back to back on the comm lane with zero compute.
  EXPECT_NEAR(r.step_time_s, 1.0 + U * 1.0 + (U - 1) * 1.0, kTol);
}

TEST(Simulator, GradAccumRepeatsMicroSteps) {
  SimInput in = make(3, 2.0, 4.0, 0.1, 0.2);
  in.grad_accum = 4;
  const SimResult r = simulate(in);
  // Compute-bound: each micro-step exposes its first gather and its last reduce-scatter (the
  // next micro-step's first gather is queued behind it on the comm lane).
  EXPECT_NEAR(r.compute_s, 4 * 3 * (2.0 + 4.0) + 0.5, kTol);
  EXPECT_NEAR(r.step_time_s, r.compute_s + 4 * (0.1 + 0.2), kTol);
}

TEST(Simulator, SlowdownStretchesOverlappedCompute) {
  SimInput in = make(4, 2.0, 4.0, 1.0, 1.0);
  const double base = simulate(in).step_time_s;
  in.overlap_compute_slowdown = 0.2;
  EXPECT_GT(simulate(in).step_time_s, base);
}

TEST(Simulator, PeakMemoryAtTheTurnOfForwardAndBackward) {
  // All activations are alive when backward starts; gathered: the last unit (kept) plus the
  // prefetched gather of the one before it.
  const int U = 5;
  const SimResult r = simulate(make(U, 2.0, 4.0, 0.1, 0.2));
  EXPECT_DOUBLE_EQ(r.mem_at_peak[kMemActivations], U * 1000.0);
  EXPECT_GE(r.mem_at_peak[kMemGatheredParams], 200.0);
}

TEST(Simulator, TimelineHasEveryTask) {
  SimInput in = make(3, 1.0, 2.0, 0.5, 0.5);
  in.record_timeline = true;
  const SimResult r = simulate(in);
  // 3 fwd + 3 bwd + 3 forward gathers + 2 backward gathers + 3 reduce-scatters + optimizer.
  EXPECT_EQ(r.timeline.size(), 15u);
  for (const auto& e : r.timeline) EXPECT_GE(e.duration_s, 0.0);
}

}  // namespace
}  // namespace shardcast::planner

namespace shardcast::planner {
namespace {

TEST(Simulator, FastPathMatchesTheReference) {
  // simulate_fast extrapolates micro-steps 4..GA from 2 and 3; the reference simulates them.
  for (int ga : {4, 7, 16}) {
    for (bool sync : {true, false}) {
      for (double slowdown : {0.0, 0.3}) {
        SimInput in = make(7, 1.0, 2.0, 0.6, 1.1);
        in.grad_accum = ga;
        in.sync_every_micro_step = sync;
        in.overlap_compute_slowdown = slowdown;
        const SimResult ref = simulate(in), fast = simulate_fast(in);
        // Same arithmetic in a different order: agreement to rounding.
        EXPECT_NEAR(fast.step_time_s, ref.step_time_s, 1e-9 * ref.step_time_s) << ga << sync << slowdown;
        EXPECT_NEAR(fast.compute_s, ref.compute_s, 1e-9 * ref.compute_s);
        EXPECT_NEAR(fast.exposed_comm_s, ref.exposed_comm_s, 1e-9 * ref.step_time_s);
        EXPECT_DOUBLE_EQ(fast.mem_peak_bytes, ref.mem_peak_bytes);
      }
    }
  }
  // With an output the loop keeps, in every lifetime: the peak recurs every micro-step after
  // the first, so the three-micro-step run holds it too.
  for (int ga : {4, 7}) {
    for (OutputsKept kept : {OutputsKept::backward, OutputsKept::next_forward, OutputsKept::step_end}) {
      for (bool in_model : {false, true}) {
        SimInput in = make(7, 1.0, 2.0, 0.6, 1.1);
        in.grad_accum = ga;
        in.units.back().output_bytes = 3.0;
        in.outputs_kept = kept;
        in.loss_in_model = in_model;
        const SimResult ref = simulate(in), fast = simulate_fast(in);
        EXPECT_DOUBLE_EQ(fast.mem_peak_bytes, ref.mem_peak_bytes) << ga << to_string(kept) << in_model;
        EXPECT_NEAR(fast.step_time_s, ref.step_time_s, 1e-9 * ref.step_time_s);
      }
    }
  }
}

}  // namespace
}  // namespace shardcast::planner
