// Counting CPU allocator. See memory.h.
#include "trainer/train/memory.h"

#include <atomic>
#include <mutex>

#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include "shared/config_io.h"
#ifdef SHARDCAST_WITH_NCCL
#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace shardcast::trainer::memory {

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_installed{false};
#ifdef SHARDCAST_WITH_NCCL
int g_cuda_device = -1;  // >= 0: report the CUDA caching allocator's statistics
#endif

struct Block {
  c10::DataPtr inner;
  int64_t bytes;
};

void on_free(void* ctx) {
  auto* b = static_cast<Block*>(ctx);
  g_live.fetch_sub(b->bytes, std::memory_order_relaxed);
  delete b;  // frees through the wrapped allocator's deleter
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  // c10::Allocator as of LibTorch 2.3: allocate() is no longer const (pytorch/pytorch #120969,
  // merged 2024-03-05, first released in v2.3.0) and copy_data() is pure virtual (the
  // copy-on-write work, #113396, reverted 2023-11 and relanded by 2024-01; whether v2.2.0 has
  // it was not established, and 2.2 is no target). Read in c10/core/Allocator.h of the 2.x main
  // stored for the API review (docs/trainer.md, "API review against torch 2.11").
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::DataPtr allocate(size_t n) override {
#else
  c10::DataPtr allocate(size_t n) const override {
#endif
    c10::DataPtr inner = base_->allocate(n);
    void* data = inner.get();
    const int64_t bytes = static_cast<int64_t>(n);
    const int64_t live = g_live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
    auto* b = new Block{std::move(inner), bytes};
    return {data, b, &on_free, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  // Host memory: the base class's memcpy, as c10's DefaultCPUAllocator does.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif

 private:
  c10::Allocator* base_;
};

}  // namespace

void install_counting_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    static CountingAllocator alloc(c10::GetCPUAllocator());
    c10::SetCPUAllocator(&alloc, /*priority=*/100);
    g_installed = true;
  });
}

bool counting_installed() { return g_installed.load(); }

#ifdef SHARDCAST_WITH_NCCL
namespace cca = c10::cuda::CUDACachingAllocator;
constexpr size_t kAggregate = 0;  // StatType::AGGREGATE
void use_cuda_device(int device) { g_cuda_device = device; }
bool cuda_stats_active() { return g_cuda_device >= 0; }
int64_t live_bytes() {
  if (g_cuda_device >= 0) return cca::getDeviceStats(g_cuda_device).active_bytes[kAggregate].current;
  return g_live.load(std::memory_order_relaxed);
}
int64_t peak_bytes() {
  if (g_cuda_device >= 0) return cca::getDeviceStats(g_cuda_device).active_bytes[kAggregate].peak;
  return g_peak.load(std::memory_order_relaxed);
}
int64_t reserved_peak_bytes() {
  if (g_cuda_device < 0) throw std::logic_error("reserved_peak_bytes: CUDA statistics are not in use");
  return cca::getDeviceStats(g_cuda_device).reserved_bytes[kAggregate].peak;
}
int64_t alloc_retries() {
  if (g_cuda_device < 0) throw std::logic_error("alloc_retries: CUDA statistics are not in use");
  return cca::getDeviceStats(g_cuda_device).num_alloc_retries;
}
void reset_peak() {
  if (g_cuda_device >= 0) return cca::resetPeakStats(g_cuda_device);
  g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed);
}
// recordHistory with skip_actions, SnapshotInfo::device_traces and TraceEntry's fields as
// c10/cuda/CUDACachingAllocator.h and c10/core/CachingDeviceAllocator.h of torch 2.11 have them.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 11)
size_t g_trace_max_entries = 0;
void start_allocator_trace(size_t max_entries) {
  if (g_cuda_device < 0) throw std::logic_error("start_allocator_trace: CUDA statistics are not in use");
  g_trace_max_entries = max_entries;
  // The allocator records into the per-device allocators that exist when recordHistory is
  // called; they are made at CUDA's lazy initialization (CUDAHooks::init), which the first
  // CUDA tensor would trigger. Called earlier, the trace stays empty (seen on the H200 on
  // 2026-11-27: entries=0).
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
  cca::recordHistory(/*enabled=*/true, /*context_recorder=*/nullptr, max_entries, cca::RecordContext::NEVER,
                     /*clearHistory=*/true, /*skip_actions=*/{});
  {  // Fail at once, not after the run: one block (a 2 MiB small-pool segment, kept in the trace).
    at::Tensor probe = at::empty({1}, at::TensorOptions().device(c10::Device(c10::DeviceType::CUDA, g_cuda_device)));
  }
  const cca::SnapshotInfo first = cca::snapshot({0, 0}, /*include_traces=*/true);
  if (size_t(g_cuda_device) >= first.device_traces.size() || first.device_traces[size_t(g_cuda_device)].empty())
    throw std::runtime_error(fmt::format("start_allocator_trace: the caching allocator of cuda:{} records nothing",
                                         g_cuda_device));
}
void write_allocator_trace(const std::string& path, int64_t max_reserved, int64_t max_active) {
  if (g_cuda_device < 0) throw std::logic_error("write_allocator_trace: CUDA statistics are not in use");
  using A = cca::TraceEntry::Action;
  const cca::SnapshotInfo snap = cca::snapshot({0, 0}, /*include_traces=*/true);
  const auto& traces = snap.device_traces;
  const std::vector<cca::TraceEntry> none;
  const auto& t = size_t(g_cuda_device) < traces.size() ? traces[size_t(g_cuda_device)] : none;
  if (t.empty())
    throw std::runtime_error(fmt::format("--allocator-trace {}: the allocator recorded nothing on cuda:{} "
                                         "(start_allocator_trace before CUDA's initialization?)",
                                         path, g_cuda_device));
  // The ring keeps the newest entries: the trace is whole while it holds fewer than its size.
  const bool complete = t.size() < g_trace_max_entries;
  std::unordered_map<void*, int> stream_index;  // first seen = 0
  std::string rows;
  rows.reserve(t.size() * 40);
  size_t n = 0;
  for (const auto& e : t) {
    const char* name = nullptr;
    switch (e.action_) {
      case A::ALLOC: name = "alloc"; break;
      case A::FREE_REQUESTED: name = "free_requested"; break;
      case A::FREE_COMPLETED: name = "free_completed"; break;
      case A::SEGMENT_ALLOC: name = "segment_alloc"; break;
      case A::SEGMENT_FREE: name = "segment_free"; break;
      case A::SEGMENT_MAP: name = "segment_map"; break;
      case A::SEGMENT_UNMAP: name = "segment_unmap"; break;
      case A::SNAPSHOT: name = "snapshot"; break;
      case A::OOM: name = "oom"; break;
    }
    if (!name) continue;  // an action newer than this list
    const int stream = stream_index.emplace(e.stream_, int(stream_index.size())).first->second;
    fmt::format_to(std::back_inserter(rows), "{},{},{},{}\n", name, e.addr_, e.size_, stream);
    ++n;
  }
  // max_allocated_bytes: the run's active peak (memory.h); the same as the allocated peak in
  // this trainer, which calls no recordStream (a block is back in its pool when freed).
  const std::string head = fmt::format(
      "# shardcast allocator trace: torch={} device={} expandable_segments={} entries={} complete={} "
      "max_reserved_bytes={} max_allocated_bytes={}\n"
      "action,addr,size,stream\n",
      TORCH_VERSION, g_cuda_device, snap.config_metadata.expandable_segments ? 1 : 0, n, complete ? 1 : 0,
      max_reserved, max_active);
  write_file_atomic(path, head + rows);
}
#else
void start_allocator_trace(size_t) {
  throw std::logic_error("start_allocator_trace: written against the torch 2.11 allocator API; this LibTorch is " TORCH_VERSION);
}
void write_allocator_trace(const std::string&, int64_t, int64_t) {
  throw std::logic_error("write_allocator_trace: written against the torch 2.11 allocator API; this LibTorch is " TORCH_VERSION);
}
#endif
#else
void use_cuda_device(int) {
  throw std::logic_error("use_cuda_device: this build has no CUDA (LibTorch is CPU-only)");
}
bool cuda_stats_active() { return false; }
int64_t reserved_peak_bytes() { throw std::logic_error("reserved_peak_bytes: this build has no CUDA"); }
int64_t alloc_retries() { throw std::logic_error("alloc_retries: this build has no CUDA"); }
int64_t live_bytes() { return g_live.load(std::memory_order_relaxed); }
int64_t peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
void reset_peak() { g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed); }
void start_allocator_trace(size_t) { throw std::logic_error("start_allocator_trace: this build has no CUDA"); }
void write_allocator_trace(const std::string&, int64_t, int64_t) {
  throw std::logic_error("write_allocator_trace: this build has no CUDA");
}
#endif

}  // namespace shardcast::trainer::memory
