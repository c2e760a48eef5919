// Counting CPU allocator. See memory.h.
#include "trainer/train/memory.h"

#include <atomic>
#include <mutex>

#include <c10/core/CPUAllocator.h>

namespace shardcast::trainer::memory {

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

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
  c10::DataPtr allocate(size_t n) const override {
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
int64_t live_bytes() { return g_live.load(std::memory_order_relaxed); }
int64_t peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
void reset_peak() { g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace shardcast::trainer::memory
