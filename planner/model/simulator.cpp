#include "planner/model/simulator.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "shared/enum_names.h"

namespace shardcast::planner {

const char* mem_category_name(int c) {
  switch (c) {
    case kMemGatheredParams: return "gathered_parameters";
    case kMemUnshardedGrads: return "unsharded_gradients";
    case kMemReduceBuffers: return "reduce_buffers";
    case kMemActivations: return "activations";
    case kMemTransient: return "transient";
    case kMemShardedGrads: return "sharded_gradients";
    case kMemOutputs: return "model_outputs";
  }
  return "?";
}

namespace {
constexpr EnumName<OutputsKept> kOutputsKept[] = {
    {OutputsKept::backward, "backward"}, {OutputsKept::next_forward, "next_forward"}, {OutputsKept::step_end, "step_end"}};
}  // namespace

const char* to_string(OutputsKept k) { return enum_name(kOutputsKept, k); }

bool parse_outputs_kept(const std::string& s, OutputsKept& out) {
  const auto v = enum_parse(kOutputsKept, s);
  if (v) out = *v;
  return v.has_value();
}

namespace {

enum Lane : int { kCompute = 0, kComm = 1, kCommInter = 2, kLanes = 3 };
const char* kLaneNames[kLanes] = {"compute", "comm", "comm_inter"};

enum TaskKind : int { kFwd, kBwd, kAllGather, kReduce, kReplicaAllReduce, kOptimizer };

// A delta of the task's unit, or of `unit` when it is not kTaskUnit (the loop's kept outputs
// are allocated and freed by tasks of other units).
constexpr int kTaskUnit = -2;
struct MemDelta {  // 16 bytes: Task holds eleven, copied as tasks are built
  double bytes;
  int cat;
  int unit;
};

struct Task {
  TaskKind kind;
  int unit;
  int lane;
  double work;
  std::array<int, 2> deps{-1, -1};
  std::array<MemDelta, 5> at_start{};
  int n_start = 0;
  std::array<MemDelta, 6> at_end{};
  int n_end = 0;
  double start = 0, end = 0;
  bool done = false;
  void alloc(int cat, double b, int of_unit = kTaskUnit) {
    assert(size_t(n_start) < at_start.size());
    if (b != 0) at_start[size_t(n_start++)] = {b, cat, of_unit};
  }
  void release(int cat, double b, int of_unit = kTaskUnit) {
    assert(size_t(n_end) < at_end.size());
    if (b != 0) at_end[size_t(n_end++)] = {-b, cat, of_unit};
  }
  void release_at_start(int cat, double b, int of_unit = kTaskUnit) {
    assert(size_t(n_start) < at_start.size());
    if (b != 0) at_start[size_t(n_start++)] = {-b, cat, of_unit};
  }
  void alloc_at_end(int cat, double b) {
    assert(size_t(n_end) < at_end.size());
    if (b != 0) at_end[size_t(n_end++)] = {b, cat, kTaskUnit};
  }
};

class Builder {
 public:
  explicit Builder(const SimInput& in) : in_(in) {}

  // The step's tasks: each micro-step's forward and backward (with its reductions where it
  // synchronises), then the optimizer.
  std::vector<Task> build() {
    const int U = int(in_.units.size());
    tasks_.reserve(size_t(in_.grad_accum) * U * 6 + 4);
    find_kept_output();
    for (int k = 0; k < in_.grad_accum; ++k) {
      const bool last = k == in_.grad_accum - 1;
      const bool sync = last || in_.sync_every_micro_step;
      const bool first_grads = k == 0 || in_.sync_every_micro_step;
      const std::vector<int> fwd = forward();
      backward(fwd, sync, first_grads);
      if (sync) synced_ = true;
    }
    optimizer_step();
    return std::move(tasks_);
  }

 private:
  // The loop's kept output: one block, of the unit that has output_bytes (the head), or none.
  void find_kept_output() {
    const int U = int(in_.units.size());
    until_next_forward_ = in_.outputs_kept != OutputsKept::backward;
    for (int i = 0; i < U; ++i)
      if (in_.units[i].output_bytes > 0) {
        assert(out_unit_ < 0 && "the model's output is one unit's block");
        out_unit_ = i;
      }
    out_bytes_ = out_unit_ >= 0 ? in_.units[size_t(out_unit_)].output_bytes : 0.0;
    carry_ = in_.outputs_kept == OutputsKept::next_forward && out_unit_ >= 0;
  }

  // One micro-step's forward: all_gathers rate-limited to max_inflight units resident. Returns
  // each unit's forward task.
  std::vector<int> forward() {
    const int U = int(in_.units.size());
    std::vector<int> fwd(U, -1), ag_f(U, -1);
    for (int i = 0; i < U; ++i) {
      const SimUnit& u = in_.units[i];
      if (u.all_gather_s > 0) {
        int dep = -1;
        const int j = i - in_.max_inflight_all_gathers;
        if (j >= 0 && in_.units[j].reshard_after_forward) dep = fwd_index(j);
        Task& t = add(kAllGather, i, kComm, u.all_gather_s, dep);
        t.alloc(kMemGatheredParams, u.gathered_bytes);
        ag_f[i] = last_;
      }
      Task& f = add(kFwd, i, kCompute, u.fwd_s, ag_f[i]);
      if (carry_) {
        // The previous step's output, live when the step starts (the first compute task).
        f.alloc(kMemOutputs, out_bytes_, out_unit_);
        carry_ = false;
        prev_live_ = true;
      }
      f.alloc(kMemOutputs, u.output_bytes);
      f.alloc(kMemActivations, u.saved_bytes);
      f.alloc(kMemTransient, u.fwd_transient_bytes);
      f.release(kMemTransient, u.fwd_transient_bytes);
      // The last forward of a micro-step returns the model's output: the loop variable that
      // held the previous micro-step's (or step's) output lets it go — after the loss when the
      // model computes it (loss_in_model), else as the head's forward starts (its logits and
      // the new output are made while the old one is live, which the head's lumps, allocated
      // at its start with the loss's, already count: the loss's tensors come after the release).
      if (i == U - 1 && until_next_forward_) {
        if (prev_live_) {
          if (in_.loss_in_model) f.release(kMemOutputs, out_bytes_, out_unit_);
          else f.release_at_start(kMemOutputs, out_bytes_, out_unit_);
        }
        prev_live_ = out_unit_ >= 0;
      }
      // Units without an all_gather (no_shard) hold their working copy from here.
      if (u.all_gather_s <= 0) f.alloc(kMemGatheredParams, u.gathered_bytes);
      if (u.reshard_after_forward && u.all_gather_s > 0) f.release(kMemGatheredParams, u.gathered_bytes);
      fwd[i] = last_;
      fwd_idx_.push_back(last_);
    }
    return fwd;
  }

  // One micro-step's backward, FSDP BACKWARD_PRE order on the comm lane: all_gather(i−1) is
  // issued before unit i computes, reduce(i) after it (when the micro-step synchronises).
  void backward(const std::vector<int>& fwd, bool sync, bool first_grads) {
    const int U = int(in_.units.size());
    std::vector<int> bwd(U, -1), ag_b(U, -1);
    auto needs_ag_b = [&](int i) { return in_.units[i].all_gather_s > 0 && in_.units[i].reshard_after_forward; };
    auto issue_ag_b = [&](int i, int dep) {
      Task& t = add(kAllGather, i, kComm, in_.units[i].all_gather_s, dep);
      t.alloc(kMemGatheredParams, in_.units[i].gathered_bytes);
      ag_b[i] = last_;
    };
    int prev_bwd = fwd[U - 1];
    if (needs_ag_b(U - 1)) issue_ag_b(U - 1, fwd[U - 1]);
    for (int i = U - 1; i >= 0; --i) {
      const SimUnit& u = in_.units[i];
      if (i > 0 && needs_ag_b(i - 1)) issue_ag_b(i - 1, prev_bwd);
      Task& b = add(kBwd, i, kCompute, u.bwd_s, ag_b[i]);
      b.alloc(kMemTransient, u.bwd_transient_bytes);
      if (first_grads) b.alloc(kMemUnshardedGrads, u.grad_bytes);
      b.release(kMemTransient, u.bwd_transient_bytes);
      b.release(kMemActivations, u.saved_bytes);
      b.release(kMemGatheredParams, u.gathered_bytes);
      if (i == 0 && !until_next_forward_) b.release(kMemOutputs, out_bytes_, out_unit_);
      bwd[i] = last_;
      prev_bwd = last_;
      if (sync) reduce(i, bwd[i]);
    }
  }

  // Unit i's gradient reduction after its backward task: the sharded gradient appears at the
  // first synchronised reduction of the step.
  void reduce(int i, int bwd_task) {
    const SimUnit& u = in_.units[i];
    const bool first_sync = !synced_;
    if (u.reduce_s > 0) {
      Task& r = add(kReduce, i, kComm, u.reduce_s, bwd_task);
      r.alloc(kMemReduceBuffers, u.reduce_buffer_bytes);
      r.release(kMemReduceBuffers, u.reduce_buffer_bytes);
      r.release(kMemUnshardedGrads, u.grad_bytes);
      if (first_sync) r.alloc_at_end(kMemShardedGrads, u.shard_grad_bytes);
      if (u.replica_all_reduce_s > 0) add(kReplicaAllReduce, i, kCommInter, u.replica_all_reduce_s, last_);
    } else {
      // Nothing to reduce (one rank): the gradient goes straight to the shard.
      tasks_[bwd_task].release(kMemUnshardedGrads, u.grad_bytes);
      if (first_sync) tasks_[bwd_task].alloc_at_end(kMemShardedGrads, u.shard_grad_bytes);
    }
  }

  // The optimizer after every reduction of the last micro-step.
  void optimizer_step() {
    int dep_comm = last_on_lane(kComm), dep_inter = last_on_lane(kCommInter);
    Task& o = add(kOptimizer, -1, kCompute, in_.optimizer_s, dep_comm, dep_inter);
    o.alloc(kMemTransient, in_.optimizer_transient_bytes);
    o.release(kMemTransient, in_.optimizer_transient_bytes);
    // The updated parameters gathered after the step (stage_1_and_2.py step: all_gather_dp_groups).
    if (in_.post_step_all_gather_s > 0) add(kAllGather, -1, kComm, in_.post_step_all_gather_s, last_);
    // The last micro-step's output lives through the optimizer step: freed as the step's
    // function returns (step_end), or — next_forward — carried into the next step, where the
    // first forward task allocates it again (the two are one block in the real loop).
    if (until_next_forward_) o.release(kMemOutputs, out_bytes_, out_unit_);
  }

  Task& add(TaskKind kind, int unit, int lane, double work, int dep0 = -1, int dep1 = -1) {
    Task t;
    t.kind = kind;
    t.unit = unit;
    t.lane = lane;
    t.work = work;
    t.deps = {dep0, dep1};
    tasks_.push_back(t);
    last_ = int(tasks_.size()) - 1;
    return tasks_.back();
  }
  int fwd_index(int unit) const {
    // fwd_idx_ holds this micro-step's forward tasks in unit order (appended as built).
    const int U = int(in_.units.size());
    const size_t base = fwd_idx_.size() - size_t(fwd_idx_.size() % U);
    return fwd_idx_[base + unit];
  }
  int last_on_lane(int lane) const {
    for (int i = int(tasks_.size()) - 1; i >= 0; --i)
      if (tasks_[i].lane == lane) return i;
    return -1;
  }

  const SimInput& in_;
  std::vector<Task> tasks_;
  std::vector<int> fwd_idx_;
  int last_ = -1;
  bool synced_ = false;  // a synchronised micro-step has been built
  // The kept output (find_kept_output): its unit (-1 = none) and bytes; it is freed at the
  // next micro-step's (or step's) forward rather than in backward; carried in from the last step;
  // an earlier micro-step's (or step's) output is live.
  int out_unit_ = -1;
  double out_bytes_ = 0;
  bool until_next_forward_ = false, carry_ = false, prev_live_ = false;
};

std::string task_name(const Task& t, const SimInput& in) {
  const std::string unit = t.unit >= 0 ? in.units[t.unit].name : std::string();
  switch (t.kind) {
    case kFwd: return "fwd " + unit;
    case kBwd: return "bwd " + unit;
    case kAllGather: return t.unit >= 0 ? "all_gather " + unit : "all_gather updated parameters";
    case kReduce: return std::string(in.all_reduce_grads ? "all_reduce " : "reduce_scatter ") + unit;
    case kReplicaAllReduce: return "all_reduce (replicas) " + unit;
    case kOptimizer: return "optimizer";
  }
  return "?";
}

// A memory event of the timeline: a task's delta (MemDelta) at time t.
struct MemEvent {
  double t;
  int cat;
  double bytes;
  int task;
  int unit;  // MemDelta::unit
};

// The step's memory off its events (in time order as the run added them): the peak, each
// category's own maximum and, with record_allocations, the allocation sequence.
void read_memory_events(const SimInput& in, const std::vector<Task>& tasks, std::vector<MemEvent>& mem,
                        SimResult* out) {
  SimResult& r = *out;
  // Memory: frees before allocations at equal times (a free is what lets the next start).
  // The events were added as simulated time advanced, so they are already in time order: only
  // each run of equal times is sorted, by bytes (stable: the order a full stable sort by
  // (t, bytes) gives, without sorting the whole step).
  // (A run holds one task end's and the next starts' deltas, a few as a rule: insertion sort,
  // stable and without the buffer std::stable_sort allocates; a long run takes stable_sort.)
  for (size_t i = 0; i < mem.size();) {
    size_t j = i + 1;
    while (j < mem.size() && mem[j].t == mem[i].t) ++j;
    assert(j == mem.size() || mem[j].t > mem[i].t);
    if (j - i > 32) {
      std::stable_sort(mem.begin() + std::ptrdiff_t(i), mem.begin() + std::ptrdiff_t(j),
                       [](const MemEvent& a, const MemEvent& b) { return a.bytes < b.bytes; });
    } else {
      for (size_t k = i + 1; k < j; ++k) {
        const MemEvent e = mem[k];
        size_t m = k;
        for (; m > i && e.bytes < mem[m - 1].bytes; --m) mem[m] = mem[m - 1];
        mem[m] = e;
      }
    }
    i = j;
  }
  std::array<double, kMemCategories> cur{};
  double total = 0;
  for (const MemEvent& e : mem) {
    cur[e.cat] += e.bytes;
    total += e.bytes;
    r.mem_max_by_category[e.cat] = std::max(r.mem_max_by_category[e.cat], cur[e.cat]);
    if (total > r.mem_peak_bytes) {
      r.mem_peak_bytes = total;
      r.mem_at_peak = cur;
    }
  }
  if (in.record_allocations && in.record_memory) {
    r.allocations.reserve(mem.size());
    for (const MemEvent& e : mem) {
      const Task& task = tasks[size_t(e.task)];
      SimAlloc& a = r.allocations.emplace_back();  // in place, as add_mem
      a.t = e.t;
      a.unit = e.unit == kTaskUnit ? task.unit : e.unit;
      a.cat = e.cat;
      a.lane = task.lane;
      a.reduce = task.kind == kReduce;
      a.backward = task.kind == kBwd;
      a.bytes = e.bytes;
    }
    std::sort(r.compute_ends.begin(), r.compute_ends.end());
  }
}

// Runs the tasks on their lanes, each lane's in program order, a task starting once its lane is
// free and its dependencies are done; compute runs slower while communication is in flight
// (overlap_compute_slowdown). Records each task's start and end and, with record_memory, the
// memory events in `mem`. Returns the time the last task ends.  // s
double run_lanes(const SimInput& in, std::vector<Task>& tasks, std::vector<MemEvent>& mem) {
  // Per-lane queues in program order.
  std::array<std::vector<int>, kLanes> queue;
  for (int i = 0; i < int(tasks.size()); ++i) queue[tasks[i].lane].push_back(i);
  std::array<size_t, kLanes> head{};
  std::array<int, kLanes> running{-1, -1, -1};
  std::array<double, kLanes> remaining{};

  // Memory events (time, category, delta), applied in time order after the run.
  const bool record_memory = in.record_memory;
  if (record_memory) mem.reserve(tasks.size() * 3);
  // Written field by field in place: a braced temporary copied into the vector stalls on
  // store forwarding (it was half of simulate()'s time).
  auto add_mem = [&mem, record_memory](double t, const MemDelta& d, int task) {
    if (!record_memory) return;
    MemEvent& e = mem.emplace_back();
    e.t = t;
    e.cat = d.cat;
    e.bytes = d.bytes;
    e.task = task;
    e.unit = d.unit;
  };

  const double slow = 1.0 / (1.0 + in.overlap_compute_slowdown);
  double t = 0;
  for (;;) {
    bool any = false;
    for (int l = 0; l < kLanes; ++l) {
      if (running[l] < 0 && head[l] < queue[l].size()) {
        Task& task = tasks[queue[l][head[l]]];
        bool ready = true;
        for (int d : task.deps)
          if (d >= 0 && !tasks[d].done) ready = false;
        if (ready) {
          running[l] = queue[l][head[l]];
          remaining[l] = task.work;
          task.start = t;
          for (int m = 0; m < task.n_start; ++m) add_mem(t, task.at_start[size_t(m)], queue[l][head[l]]);
        }
      }
      any = any || running[l] >= 0;
    }
    if (!any) {
      for (int l = 0; l < kLanes; ++l) assert(head[l] == queue[l].size() && "simulator deadlock");
      break;
    }
    const bool comm_busy = running[kComm] >= 0 || running[kCommInter] >= 0;
    double rate[kLanes] = {comm_busy ? slow : 1.0, 1.0, 1.0};
    double dt = std::numeric_limits<double>::infinity();
    for (int l = 0; l < kLanes; ++l)
      if (running[l] >= 0) dt = std::min(dt, remaining[l] / rate[l]);
    t += dt;
    for (int l = 0; l < kLanes; ++l) {
      if (running[l] < 0) continue;
      remaining[l] -= dt * rate[l];
      if (remaining[l] <= 1e-15 * (1.0 + t)) {
        Task& task = tasks[running[l]];
        task.end = t;
        task.done = true;
        for (int m = 0; m < task.n_end; ++m) add_mem(t, task.at_end[size_t(m)], running[l]);
        running[l] = -1;
        ++head[l];
      }
    }
  }
  return t;
}

// Busy time per lane, the optimizer's time, the exposed communication and the step time off the
// run tasks (end: the last task's end), and the timeline when asked.
void read_timeline(const SimInput& in, const std::vector<Task>& tasks, double end, SimResult* r) {
  double compute_busy = 0, comm_busy = 0;
  for (const Task& task : tasks) {
    const double dur = task.end - task.start;
    if (task.lane == kCompute) compute_busy += dur;
    else comm_busy += dur;
    if (task.kind == kOptimizer) r->optimizer_s = dur;
    if (in.record_allocations && in.record_memory && task.lane == kCompute) r->compute_ends.push_back(task.end);
    if (in.record_timeline) {
      TimelineEvent e;
      e.name = task_name(task, in);
      e.lane = kLaneNames[task.lane];
      e.start_s = task.start;
      e.duration_s = dur;
      e.unit = task.unit;
      r->timeline.push_back(std::move(e));
    }
  }
  r->compute_s = compute_busy;
  r->comm_s = comm_busy;
  r->exposed_comm_s = std::max(0.0, end - compute_busy);
  r->step_time_s = end + in.step_overhead_s;
}

}  // namespace

SimResult simulate(const SimInput& in) {
  assert(!in.units.empty() && in.grad_accum >= 1 && in.max_inflight_all_gathers >= 1);
  std::vector<Task> tasks = Builder(in).build();
  std::vector<MemEvent> mem;
  const double end = run_lanes(in, tasks, mem);
  SimResult r;
  read_timeline(in, tasks, end, &r);
  read_memory_events(in, tasks, mem, &r);
  return r;
}

SimResult simulate_fast(const SimInput& in) {
  if (in.grad_accum <= 3 || in.record_timeline) return simulate(in);
  SimInput two = in, three = in;
  two.grad_accum = 2;
  two.record_memory = false;  // memory is read off the three-micro-step run
  three.grad_accum = 3;
  const SimResult a = simulate(two);
  SimResult r = simulate(three);
  const double extra = double(in.grad_accum - 3);
  r.step_time_s += extra * (r.step_time_s - a.step_time_s);
  r.compute_s += extra * (r.compute_s - a.compute_s);
  r.comm_s += extra * (r.comm_s - a.comm_s);
  r.exposed_comm_s += extra * (r.exposed_comm_s - a.exposed_comm_s);
  return r;
}

}  // namespace shardcast::planner
