// RecordFunction callbacks that time a step's ops by category. See op_recorder.h.
#include "trainer/profile/op_recorder.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/record_function.h>
#include <fmt/format.h>

#include "trainer/profile/op_classify.h"

#ifdef SHARDCAST_WITH_NCCL
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

namespace shardcast::trainer {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One counted op: [t0, t1] ns on the CPU clock, or CUDA events 2·ev, 2·ev + 1 when ev >= 0.
struct Counted {
  std::string name;
  int category = 0;
  int64_t t0 = 0, t1 = 0;
  int ev = -1;
};

#ifdef SHARDCAST_WITH_NCCL
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("op profile: {}: {}", what, cudaGetErrorString(e)));
}
#endif

}  // namespace

struct OpRecorder::State {
  bool cuda = false;
  std::mutex mu;  // the CUDA backward runs on the autograd engine's thread
  // Forward: autograd sequence number -> category of the op that created that node (-1 none).
  std::unordered_map<int64_t, int> seq_category;
  std::vector<Counted> done;
  int64_t t0 = 0;
#ifdef SHARDCAST_WITH_NCCL
  std::vector<cudaEvent_t> events;  // pairs, reused across steps
  int next_pair = 0;
  int take_pair() {  // under mu
    if (2 * next_pair + 1 >= int(events.size())) {
      for (int k = 0; k < 2; ++k) {
        cudaEvent_t e;
        cuda_check(cudaEventCreate(&e), "cudaEventCreate");
        events.push_back(e);
      }
    }
    return next_pair++;
  }
  void record(int ev, int end) {
    cuda_check(cudaEventRecord(events[size_t(2 * ev + end)], at::cuda::getCurrentCUDAStream().stream()),
               "cudaEventRecord");
  }
#endif
};

namespace {

using State = OpRecorder::State;

thread_local State* tls_active = nullptr;  // the recorder of this thread (begin_step .. end_step)
thread_local int tls_depth = 0;            // counted ops open on this thread (0 or 1)
thread_local int tls_category = -1;        // the open counted op's category
std::atomic<State*> g_process{nullptr};    // CUDA: the recorder of threads without one

// The callback is added by the first recorder and removed with the last, possibly while other
// rank threads run ops: record_function.h calls that "not thread safe", but its implementation
// (aten/src/ATen/record_function.cpp, 1.13 and 2.x: GlobalCallbackManager) changes the list
// under a mutex and bumps a version each thread re-reads its snapshot by, and a RecordFunction
// already started keeps its callbacks (plain functions, never freed) until it ends.
std::mutex g_callback_mu;
int g_recorders = 0;
at::CallbackHandle g_callback = 0;

struct Ctx final : at::ObserverContext {
  State* s = nullptr;
  int category = 0;
  int64_t t0 = 0;
  int ev = -1;
};

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  State* s = tls_active ? tls_active : g_process.load(std::memory_order_acquire);
  if (!s) return nullptr;
  const bool backward = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
  if (tls_depth > 0) {  // nested in a counted op: not timed, but its node belongs to that op
    if (!backward && fn.seqNr() >= 0) {
      std::lock_guard<std::mutex> l(s->mu);
      s->seq_category[fn.seqNr()] = tls_category;
    }
    return nullptr;
  }
  const OpClassification k = classify_op(fn.name());
  int category = k.cls == OpClass::counted ? int(k.category) : -1;
  {
    std::lock_guard<std::mutex> l(s->mu);
    if (backward && k.cls != OpClass::transparent) {
      // A node takes its forward op's category (MulBackward0 of an RMSNorm is `norm`).
      auto it = s->seq_category.find(fn.seqNr());
      if (it != s->seq_category.end() && it->second >= 0) category = it->second;
    } else if (!backward && fn.seqNr() >= 0) {
      // The last op recorded with sequence number n before node n exists is its creator (or
      // nested in it): the creator takes n and the counter moves on.
      s->seq_category[fn.seqNr()] = category;
    }
  }
  if (category < 0) return nullptr;
  auto c = std::make_unique<Ctx>();
  c->s = s;
  c->category = category;
#ifdef SHARDCAST_WITH_NCCL
  if (s->cuda) {
    std::lock_guard<std::mutex> l(s->mu);
    c->ev = s->take_pair();
    s->record(c->ev, 0);
  }
#endif
  ++tls_depth;
  tls_category = category;
  c->t0 = now_ns();
  return c;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (!ctx) return;
  const int64_t t1 = now_ns();
  auto* c = static_cast<Ctx*>(ctx);
  --tls_depth;
  tls_category = -1;
  std::lock_guard<std::mutex> l(c->s->mu);
#ifdef SHARDCAST_WITH_NCCL
  if (c->ev >= 0) c->s->record(c->ev, 1);
#endif
  c->s->done.push_back(Counted{fn.name(), c->category, c->t0, t1, c->ev});
}

}  // namespace

OpRecorder::OpRecorder(at::Device device) : s_(std::make_unique<State>()) {
#ifdef SHARDCAST_WITH_NCCL
  s_->cuda = device.is_cuda();
#else
  if (device.is_cuda())
    throw std::invalid_argument("op profile: CUDA timing needs a build with the CUDA/NCCL path (SHARDCAST_WITH_NCCL)");
#endif
  std::lock_guard<std::mutex> l(g_callback_mu);
  if (g_recorders++ == 0) g_callback = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end));
}

OpRecorder::~OpRecorder() {
  if (tls_active == s_.get()) tls_active = nullptr;
  State* mine = s_.get();
  g_process.compare_exchange_strong(mine, nullptr);
  {
    std::lock_guard<std::mutex> l(g_callback_mu);
    if (--g_recorders == 0) at::removeCallback(g_callback);
  }
#ifdef SHARDCAST_WITH_NCCL
  for (cudaEvent_t e : s_->events) cudaEventDestroy(e);
#endif
}

void OpRecorder::begin_step() {
  {
    std::lock_guard<std::mutex> l(s_->mu);
    s_->seq_category.clear();
    s_->done.clear();
#ifdef SHARDCAST_WITH_NCCL
    s_->next_pair = 0;
    if (s_->cuda) cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // no earlier work in this step's events
#endif
  }
  if (s_->cuda) g_process.store(s_.get(), std::memory_order_release);
  tls_active = s_.get();
  s_->t0 = now_ns();
}

StepOpTimes OpRecorder::end_step() {
#ifdef SHARDCAST_WITH_NCCL
  if (s_->cuda) cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
#endif
  StepOpTimes st;
  st.step_s = double(now_ns() - s_->t0) * 1e-9;
  tls_active = nullptr;
  State* mine = s_.get();
  g_process.compare_exchange_strong(mine, nullptr);
  std::lock_guard<std::mutex> l(s_->mu);
  for (const Counted& c : s_->done) {
    double sec = double(c.t1 - c.t0) * 1e-9;
#ifdef SHARDCAST_WITH_NCCL
    if (c.ev >= 0) {
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, s_->events[size_t(2 * c.ev)], s_->events[size_t(2 * c.ev + 1)]),
                 "cudaEventElapsedTime");
      sec = double(ms) * 1e-3;
    }
#endif
    st.seconds[size_t(c.category)] += sec;
    st.count[size_t(c.category)] += 1;
    OpNameTime& o = st.ops[{OpCategory(c.category), c.name}];
    o.category = OpCategory(c.category);
    o.seconds += sec;
    o.count += 1;
  }
  s_->done.clear();
  s_->seq_category.clear();
  return st;
}

}  // namespace shardcast::trainer
