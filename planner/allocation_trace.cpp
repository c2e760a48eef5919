#include "planner/allocation_trace.h"

#include <algorithm>
#include <cassert>
#include <deque>
#include <map>
#include <utility>

namespace shardcast::planner {

namespace {

// The stream a delta's tensor lives on (header: allocated on the all-gather stream, the
// reduce-scatter stream or the compute stream).
int stream_of(const SimAlloc& a) {
  if (a.lane == 2) return kStreamReplica;
  if (a.cat == kMemGatheredParams) return a.lane == 1 ? kStreamAllGather : kStreamCompute;
  if (a.reduce) return kStreamReduce;
  return kStreamCompute;
}

}  // namespace

std::vector<AllocEvent> build_allocation_trace(const SimResult& sim, const TraceInputs& in) {
  assert(in.steps >= 1);
  std::vector<AllocEvent> out;
  out.reserve(sim.allocations.size() * size_t(in.steps) + 8 * in.param_shard_bytes.size());
  int next_tensor = 0;
  auto alloc = [&](double t, double bytes, int stream) {
    const int id = next_tensor++;
    out.push_back({t, id, std::max<int64_t>(1, int64_t(bytes + 0.5)), stream, 0});
    return id;
  };
  auto release = [&](double t, int id, int stream, double ready) { out.push_back({t, id, 0, stream, std::max(t, ready)}); };

  // Static state before the first step (model construction, fully_shard).
  for (double b : in.param_shard_bytes)
    if (b > 0) alloc(0, b, kStreamCompute);
  for (double b : in.static_grad_bytes)
    if (b > 0) alloc(0, b, kStreamCompute);

  // The step's span: every step replays the same deltas shifted by it.
  double span = 0;
  for (const SimAlloc& a : sim.allocations) span = std::max(span, a.t);
  if (!sim.compute_ends.empty()) span = std::max(span, sim.compute_ends.back());
  span = std::max(span, 1e-9);

  // After the end of the compute task that follows t (record_stream: the CPU is a task ahead).
  auto lagged = [&](double t) {
    if (!in.record_stream) return t;
    auto it = std::upper_bound(sim.compute_ends.begin(), sim.compute_ends.end(), t);
    return it == sim.compute_ends.end() ? span : *it;
  };

  std::vector<int> sharded_grads;  // freed at the next step's zero_grad
  bool optimizer_state = false;
  for (int step = 0; step < in.steps; ++step) {
    const double t0 = span * step;
    for (int id : sharded_grads) release(t0, id, kStreamReduce, t0);
    sharded_grads.clear();
    // (unit, category) -> live tensors in allocation order, with their stream.
    std::map<std::pair<int, int>, std::deque<std::pair<int, int>>> live;
    for (const SimAlloc& a : sim.allocations) {
      const double t = t0 + a.t;
      if (a.unit < 0 && !optimizer_state && a.bytes > 0) {
        // AdamW's lazy state: exp_avg and exp_avg_sq of every unit's shard, before the step's
        // foreach temporaries.
        for (double b : in.optimizer_bytes)
          if (b > 0) {
            alloc(t, b, kStreamCompute);
            alloc(t, b, kStreamCompute);
          }
        optimizer_state = true;
      }
      const std::pair<int, int> k{a.unit, a.cat};
      if (a.bytes > 0) {
        const int s = stream_of(a);
        const int id = alloc(t, a.bytes, s);
        if (a.cat == kMemShardedGrads) sharded_grads.push_back(id);
        else live[k].push_back({id, s});
      } else {
        auto& q = live[k];
        assert(!q.empty() && "free without allocation");
        if (q.empty()) continue;
        const auto [id, s] = q.front();
        q.pop_front();
        // Used by a stream other than the one that allocated it: freed with recordStream.
        const int user = stream_of(a);
        const bool cross = user != s || (a.cat == kMemUnshardedGrads && a.reduce);
        release(t, id, s, cross ? t0 + lagged(a.t) : t);
      }
    }
  }
  return out;
}

ReplayResult replay_allocation_trace(const std::vector<AllocEvent>& trace, const CachingAllocatorConfig& cfg) {
  CachingAllocator a(cfg);
  std::vector<int> handle;
  for (const AllocEvent& e : trace) {
    if (e.bytes > 0) {
      if (int(handle.size()) <= e.tensor) handle.resize(size_t(e.tensor) + 1, -1);
      handle[size_t(e.tensor)] = a.malloc(e.bytes, e.stream, e.t);
    } else if (e.ready > e.t) {
      a.free_after(handle[size_t(e.tensor)], e.ready);
    } else {
      a.free(handle[size_t(e.tensor)]);
    }
  }
  ReplayResult r;
  r.peak_reserved = double(a.peak_reserved());
  r.peak_allocated = double(a.peak_allocated());
  r.segments = a.segments();
  r.retries = a.retries();
  r.out_of_memory = a.out_of_memory();
  return r;
}

}  // namespace shardcast::planner
