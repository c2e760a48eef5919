#include "planner/model/allocator/allocation_trace.h"

#include <algorithm>
#include <cassert>
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

// The last delta's or compute task's end, at least 1 ns.  // s
// (Not inlined: inside build_allocation_trace the running maximum is kept on the stack and
// reloaded every step of the loop, a store-forwarding wait per delta.)
[[gnu::noinline]] double step_span(const SimResult& sim) {
  double last = 1e-9;
  for (const SimAlloc& a : sim.allocations)
    if (a.t > last) last = a.t;
  if (!sim.compute_ends.empty() && sim.compute_ends.back() > last) last = sim.compute_ends.back();
  return last;
}

}  // namespace

UnitTensorSequence fp32_upcast_loss_sequence(double n, int A, double other_saved, bool logits_held,
                                             CrossEntropyImpl impl, bool dtensor_extra) {
  assert(is_fp32_upcast(impl));
  const bool shifted = impl == CrossEntropyImpl::fp32_upcast_shifted;
  enum { kOther, kLogits, kUpcast, kLogProbs, kGradLogProbs, kGradUpcast, kGradLogits, kShift, kGradShift, kExtra };
  // torch's loss_parallel handlers: one fp32 tensor more around the log-probabilities' making
  // and around the fused backward's gradients (header).
  const double extra = dtensor_extra ? 4.0 * n : 0.0;  // bytes
  UnitTensorSequence q;
  if (other_saved > 0) q.forward.push_back({kOther, other_saved});
  q.forward.push_back({kLogits, A * n});
  if (shifted) {
    // transformers: `logits = logits.float()` frees the 16-bit logits as the copy exists; the
    // shifted contiguous copy lives while the loss runs (a local of the model's forward).
    if (!logits_held) q.forward.push_back({kUpcast, 4.0 * n});
    q.forward.push_back({kLogits, 0});
    q.forward.push_back({kShift, 4.0 * n});
    q.forward.push_back({kLogProbs, 4.0 * n});
    q.forward.push_back({kShift, 0});
    if (!logits_held) q.forward.push_back({kUpcast, 0});
    // Backward: nll_loss's gradient, log_softmax's (the shift's), then slice backward's
    // full-size gradient of the copy once the first two are freed.
    q.backward.push_back({kGradLogProbs, 4.0 * n});
    q.backward.push_back({kGradShift, 4.0 * n});
    q.backward.push_back({kGradLogProbs, 0});
    q.backward.push_back({kLogProbs, 0});
    q.backward.push_back({kGradUpcast, 4.0 * n});
    q.backward.push_back({kGradShift, 0});
    q.backward.push_back({kGradLogits, A * n});
    q.backward.push_back({kGradUpcast, 0});
    return q;
  }
  if (logits_held) {
    // The fp32 copy is the model's output (the model_outputs block, made before this sequence).
    q.forward.push_back({kLogits, 0});
    if (extra > 0) q.forward.push_back({kExtra, extra});
    q.forward.push_back({kLogProbs, 4.0 * n});
    if (extra > 0) q.forward.push_back({kExtra, 0});
  } else {
    q.forward.push_back({kUpcast, 4.0 * n});
    if (extra > 0) q.forward.push_back({kExtra, extra});
    q.forward.push_back({kLogProbs, 4.0 * n});
    if (extra > 0) q.forward.push_back({kExtra, 0});
    q.forward.push_back({kUpcast, 0});
    q.forward.push_back({kLogits, 0});
  }
  // One call: the log-probabilities are freed after both gradients exist. Chunked: the chunks'
  // gradients (kGradLogProbs: split's buffer) replace their log-probabilities chunk by chunk,
  // so those are gone first; cat then writes the copy's gradient beside them.
  const bool chunked = impl == CrossEntropyImpl::fp32_upcast_chunked;
  if (chunked) q.backward.push_back({kLogProbs, 0});
  q.backward.push_back({kGradLogProbs, 4.0 * n});
  if (extra > 0) q.backward.push_back({kExtra, extra});
  q.backward.push_back({kGradUpcast, 4.0 * n});
  if (extra > 0) q.backward.push_back({kExtra, 0});
  q.backward.push_back({kGradLogProbs, 0});
  if (!chunked) q.backward.push_back({kLogProbs, 0});
  q.backward.push_back({kGradLogits, A * n});
  q.backward.push_back({kGradUpcast, 0});
  return q;
}

// alloc_of[j]: for a free in sim.allocations (bytes <= 0), the index of the allocation it frees
// (FIFO per unit and memory kind); -1 for allocations. Scratch reused on this thread.
static void pair_frees_with_allocations(const SimResult& sim, std::vector<int>* alloc_of_out) {
  const size_t n = sim.allocations.size();
  int n_units = 0;
  for (const SimAlloc& a : sim.allocations) n_units = std::max(n_units, a.unit + 1);
  thread_local std::vector<int> queue_head, queue_tail, queued_next;
  std::vector<int>& alloc_of = *alloc_of_out;
  alloc_of.assign(n, -1);
  // One FIFO per (unit, kind), threaded through queued_next (index of the next allocation
  // waiting in the same FIFO, -1 none).
  const size_t keys = size_t(n_units + 1) * kMemCategories;
  queue_head.assign(keys, -1);
  queue_tail.assign(keys, -1);
  queued_next.assign(n, -1);
  for (size_t j = 0; j < n; ++j) {
    const SimAlloc& a = sim.allocations[j];
    const size_t k = size_t(a.unit + 1) * kMemCategories + size_t(a.cat);
    if (a.bytes > 0) {
      if (queue_tail[k] >= 0) queued_next[size_t(queue_tail[k])] = int(j);
      else queue_head[k] = int(j);
      queue_tail[k] = int(j);
    } else {
      assert(queue_head[k] >= 0 && "free without allocation");
      alloc_of[j] = queue_head[k];
      queue_head[k] = queued_next[size_t(queue_head[k])];
      if (queue_head[k] < 0) queue_tail[k] = -1;
    }
  }
}

std::vector<AllocEvent> build_allocation_trace(const SimResult& sim, const TraceInputs& in) {
  std::vector<AllocEvent> out;
  build_allocation_trace(sim, in, &out);
  return out;
}

namespace {

// Appends events to a trace, numbering its tensors from 0. Events are written field by field in
// place (a temporary built on the stack and copied stalls on store forwarding: it was a fifth
// of the trace's time).
// `pool` and `compute_stream` are where the next allocations go: a CUDA-graphed loop's units
// run on kStreamGraph and, once captured, from kPoolGraph (TraceInputs::cuda_graphs); a free
// names its tensor's pool (`pool_of`, per tensor).
struct TraceWriter {
  std::vector<AllocEvent>& out;
  std::vector<char>& pool_of;
  int next_tensor = 0;
  int pool = kPoolDevice;
  int compute_stream = kStreamCompute;
  int alloc(double t, double bytes, int stream) {
    const int id = next_tensor++;
    AllocEvent& e = out.emplace_back();
    e.t = t;
    e.tensor = id;
    e.bytes = std::max<int64_t>(1, int64_t(bytes + 0.5));
    e.stream = stream == kStreamCompute ? compute_stream : stream;
    e.pool = pool;
    e.ready = 0;
    if (pool_of.size() <= size_t(id)) pool_of.resize(size_t(id) + 1);
    pool_of[size_t(id)] = char(pool);
    return id;
  }
  void release(double t, int id, int stream, double ready) {
    AllocEvent& e = out.emplace_back();
    e.t = t;
    e.tensor = id;
    e.bytes = 0;
    e.stream = stream;
    e.pool = pool_of[size_t(id)];
    e.ready = ready > t ? ready : t;
  }
  void empty_cache(double t) {
    AllocEvent& e = out.emplace_back();
    e.t = t;
    e.tensor = kEmptyCache;
    e.bytes = 0;
    e.stream = kStreamCompute;
    e.pool = kPoolDevice;
    e.ready = t;
  }
};

// The units given tensor by tensor (TraceInputs::sequences): their tensors replace the unit's
// activation and transient blocks, the forward's at its saved-bytes allocation, the backward's
// at its first delta; what is still live is freed with the saved bytes.
class SequencedUnits {
 public:
  explicit SequencedUnits(const std::vector<UnitTensorSequence>& sequences)
      : seq_(sequences), live_(sequences.size()), backward_done_(sequences.size(), 0) {
    for (size_t u = 0; u < seq_.size(); ++u) {
      int ids = 0;
      for (const auto* steps : {&seq_[u].forward, &seq_[u].backward})
        for (const TensorStep& st : *steps) ids = std::max(ids, st.id + 1);
      live_[u].assign(size_t(ids), -1);
    }
  }
  bool has(int unit) const { return unit >= 0 && size_t(unit) < seq_.size() && !seq_[size_t(unit)].empty(); }
  // A delta of a sequenced unit's activation or transient block, at time t.
  void replace(const SimAlloc& a, double t, TraceWriter& w) {
    const UnitTensorSequence& q = seq_[size_t(a.unit)];
    if (!a.backward) {
      if (a.cat == kMemActivations && a.bytes > 0) {
        run_steps(t, a.unit, q.forward, w);
        backward_done_[size_t(a.unit)] = 0;
      }
      return;
    }
    if (!backward_done_[size_t(a.unit)]) {
      run_steps(t, a.unit, q.backward, w);
      backward_done_[size_t(a.unit)] = 1;
    }
    if (a.cat == kMemActivations && a.bytes < 0) release_live(t, a.unit, w);
  }

 private:
  void run_steps(double t, int unit, const std::vector<TensorStep>& steps, TraceWriter& w) {
    std::vector<int>& ids = live_[size_t(unit)];
    for (const TensorStep& st : steps) {
      int& id = ids[size_t(st.id)];
      if (st.bytes > 0) {
        assert(id < 0 && "sequence allocates a live tensor");
        id = w.alloc(t, st.bytes, kStreamCompute);
      } else {
        assert(id >= 0 && "sequence frees a tensor that is not live");
        w.release(t, id, kStreamCompute, t);
        id = -1;
      }
    }
  }
  void release_live(double t, int unit, TraceWriter& w) {
    for (int& id : live_[size_t(unit)])
      if (id >= 0) {
        w.release(t, id, kStreamCompute, t);
        id = -1;
      }
  }
  const std::vector<UnitTensorSequence>& seq_;
  std::vector<std::vector<int>> live_;  // per unit: local id → trace tensor, -1 = none
  std::vector<char> backward_done_;     // per unit: the current micro-step's backward sequence ran
};

// The optimizer step's shard of temporaries is a stand-in for what the backward peak misses
// (fsdp_units.cpp; docs/cost-model.md §5): with CUDA graphs it goes where the backward's tensors
// go, the graph's stream and pool (the caller sets them on the writer), in pieces as foreach
// temporaries come (TraceInputs::stand_in_pieces_per_unit per unit's share), since that pool's
// whole segments do not join.
class GraphedStandIn {
 public:
  explicit GraphedStandIn(const TraceInputs& in) : in_(in) {
    for (double b : in.param_shard_bytes) total_ += b;
  }
  bool applies(const SimAlloc& a) const { return in_.cuda_graphs && a.unit < 0 && a.cat == kMemTransient && total_ > 0; }
  void delta(const SimAlloc& a, double t, TraceWriter& w) {
    if (a.bytes > 0) {
      const int k = std::max(1, in_.stand_in_pieces_per_unit);
      for (double b : in_.param_shard_bytes)
        for (int piece = 0; b > 0 && piece < k; ++piece) live_.push_back(w.alloc(t, a.bytes * b / total_ / k, kStreamCompute));
    } else {
      for (int id : live_) w.release(t, id, kStreamCompute, t);
      live_.clear();
    }
  }

 private:
  const TraceInputs& in_;
  double total_ = 0;       // Σ param_shard_bytes  // bytes
  std::vector<int> live_;  // its pieces' tensors
};

}  // namespace

void build_allocation_trace(const SimResult& sim, const TraceInputs& in, std::vector<AllocEvent>* trace) {
  assert(in.steps >= 1);
  std::vector<AllocEvent>& out = *trace;
  out.clear();
  out.reserve(sim.allocations.size() * size_t(in.steps) + 8 * in.param_shard_bytes.size());
  thread_local std::vector<char> pool_of;  // scratch reused across calls on this thread
  pool_of.clear();
  TraceWriter w{out, pool_of};

  // Static state before the first step (model construction, fully_shard).
  for (double b : in.param_shard_bytes)
    if (b > 0) w.alloc(0, b, kStreamCompute);
  for (double b : in.static_grad_bytes)
    if (b > 0) w.alloc(0, b, kStreamCompute);
  bool optimizer_state = false;
  auto allocate_optimizer_state = [&](double t) {
    for (double b : in.optimizer_bytes)
      if (b > 0) {
        w.alloc(t, b, kStreamCompute);
        w.alloc(t, b, kStreamCompute);
      }
    optimizer_state = true;
  };
  if (in.optimizer_state_at_init) allocate_optimizer_state(0);

  // The step's span: every step replays the same deltas shifted by it.
  const double span = step_span(sim);

  // After the end of the compute task that follows t (record_stream: the CPU is a task ahead).
  auto lagged = [&](double t) {
    if (!in.record_stream) return t;
    auto it = std::upper_bound(sim.compute_ends.begin(), sim.compute_ends.end(), t);
    return it == sim.compute_ends.end() ? span : *it;
  };

  // Pair every free with its allocation once (FIFO per unit and kind); every step repeats it.
  const size_t n = sim.allocations.size();
  thread_local std::vector<int> alloc_of, tensor;  // scratch reused across calls on this thread
  pair_frees_with_allocations(sim, &alloc_of);
  SequencedUnits sequenced(in.sequences);

  std::vector<int> sharded_grads;  // freed at the next step's zero_grad
  GraphedStandIn stand_in(in);
  for (int step = 0; step < in.steps; ++step) {
    const double t0 = span * step;
    for (int id : sharded_grads) w.release(t0, id, kStreamReduce, t0);
    sharded_grads.clear();
    // torch.cuda.graph's __enter__ before the capture: synchronize, empty_cache().
    if (in.cuda_graphs && step == 1) w.empty_cache(t0);
    const int unit_pool = in.cuda_graphs && step >= 1 ? kPoolGraph : kPoolDevice;
    const int unit_stream = in.cuda_graphs ? kStreamGraph : kStreamCompute;
    tensor.assign(n, -1);
    for (size_t j = 0; j < n; ++j) {
      const SimAlloc& a = sim.allocations[j];
      const double t = t0 + a.t;
      w.pool = a.unit >= 0 ? unit_pool : kPoolDevice;
      w.compute_stream = a.unit >= 0 ? unit_stream : kStreamCompute;
      if (sequenced.has(a.unit) && (a.cat == kMemActivations || a.cat == kMemTransient)) {
        sequenced.replace(a, t, w);
        continue;
      }
      if (a.unit < 0 && !optimizer_state && a.bytes > 0) {
        // AdamW's lazy state: exp_avg and exp_avg_sq of every unit's shard, before the step's
        // foreach temporaries.
        allocate_optimizer_state(t);
      }
      if (stand_in.applies(a)) {
        w.pool = unit_pool;
        w.compute_stream = unit_stream;
        stand_in.delta(a, t, w);
        continue;
      }
      if (a.bytes > 0) {
        tensor[j] = w.alloc(t, a.bytes, stream_of(a));
        if (a.cat == kMemShardedGrads) sharded_grads.push_back(tensor[j]);
      } else if (alloc_of[j] >= 0) {
        const SimAlloc& made = sim.allocations[size_t(alloc_of[j])];
        const int s = stream_of(made);
        // Used by a stream other than the one that allocated it: freed with recordStream.
        const bool cross = stream_of(a) != s;
        w.release(t, tensor[size_t(alloc_of[j])], s, cross ? t0 + lagged(a.t) : t);
      }
    }
  }
}

namespace {

ReplayResult result_of(const CachingAllocator& a) {
  ReplayResult r;
  r.peak_reserved = double(a.peak_reserved());
  r.peak_allocated = double(a.peak_allocated());
  r.segments = a.segments();
  r.retries = a.retries();
  r.out_of_memory = a.out_of_memory();
  return r;
}

// A trace with a CUDA graphs' pool: one allocator per pool, the peaks of their sums.
ReplayResult replay_two_pools(const std::vector<AllocEvent>& trace, const CachingAllocatorConfig& cfg) {
  CachingAllocatorConfig graph_cfg = cfg;
  graph_cfg.private_pool = true;
  graph_cfg.capacity_bytes = 1e300;  // never releases: the device's limit is checked on the sum below
  thread_local CachingAllocator pools[2] = {CachingAllocator(cfg), CachingAllocator(graph_cfg)};
  thread_local std::vector<int> handle;
  pools[kPoolDevice].reset(cfg);
  pools[kPoolGraph].reset(graph_cfg);
  handle.assign(trace.size(), -1);
  int64_t peak_reserved = 0, peak_allocated = 0;
  const double capacity = cfg.capacity_bytes;
  for (const AllocEvent& e : trace) {
    CachingAllocator& a = pools[e.pool];
    if (e.bytes > 0) {
      // One device under both pools: the device pool may reserve what the graph pool leaves, and
      // releases its own cache when that is short. The graph pool's requests come during the
      // capture, when PyTorch releases no cache (malloc: release_cached_blocks only while
      // captures_underway is empty): past the device they are out of memory.
      if (e.pool == kPoolDevice) a.set_capacity(capacity - double(pools[kPoolGraph].reserved()));
      handle[size_t(e.tensor)] = a.malloc(e.bytes, e.stream, e.t);
      peak_reserved = std::max(peak_reserved, pools[0].reserved() + pools[1].reserved());
      peak_allocated = std::max(peak_allocated, pools[0].allocated() + pools[1].allocated());
    } else if (e.tensor == kEmptyCache) {
      a.empty_cache();
    } else if (e.ready > e.t) {
      a.free_after(handle[size_t(e.tensor)], e.ready);
    } else {
      a.free(handle[size_t(e.tensor)]);
    }
  }
  ReplayResult r;
  r.peak_reserved = double(peak_reserved);
  r.peak_allocated = double(peak_allocated);
  r.graph_pool_reserved = double(pools[kPoolGraph].reserved());
  r.segments = pools[0].segments() + pools[1].segments();
  r.retries = pools[0].retries() + pools[1].retries();
  r.out_of_memory = pools[0].out_of_memory() || double(peak_reserved) > capacity;
  return r;
}

}  // namespace

ReplayResult replay_allocation_trace(const std::vector<AllocEvent>& trace, const CachingAllocatorConfig& cfg,
                                     bool cuda_graphs) {
  if (cuda_graphs) return replay_two_pools(trace, cfg);
  // One allocator and handle table per thread, reset per replay (their storage is kept).
  thread_local CachingAllocator a(cfg);
  thread_local std::vector<int> handle;
  a.reset(cfg);
  handle.assign(trace.size(), -1);  // tensor ids are below the event count
  for (const AllocEvent& e : trace) {
    assert(e.pool == kPoolDevice && e.tensor >= 0 && "a CUDA graphs' trace: replay with cuda_graphs");
    if (e.bytes > 0) {
      assert(size_t(e.tensor) < handle.size());
      handle[size_t(e.tensor)] = a.malloc(e.bytes, e.stream, e.t);
    } else if (e.ready > e.t) {
      a.free_after(handle[size_t(e.tensor)], e.ready);
    } else {
      a.free(handle[size_t(e.tensor)]);
    }
  }
  return result_of(a);
}

}  // namespace shardcast::planner
