// Heartbeats in the c10d store. See liveness.h.
#include "trainer/comm/liveness.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace shardcast::trainer::liveness {

namespace {

struct State {
  c10::intrusive_ptr<c10d::Store> store;
  int rank = 0, world = 1;
  double period = 0.5;  // s
  std::atomic<bool> stop{false};
  std::thread thread;
};
State* g_state = nullptr;  // never freed: the heartbeat lives until exit

std::string key(int r) { return fmt::format("shardcast/heartbeat/{}", r); }

void stop_at_exit() {
  if (!g_state) return;
  g_state->stop = true;
  if (g_state->thread.joinable()) g_state->thread.join();
}

// Each rank's counter, -1 where unknown. Throws if the store is unreachable.
std::vector<int64_t> read_counters() {
  std::vector<int64_t> c(size_t(g_state->world), -1);
  for (int r = 0; r < g_state->world; ++r) {
    if (!g_state->store->check({key(r)})) continue;
    const auto v = g_state->store->get(key(r));
    c[size_t(r)] = std::atoll(std::string(v.begin(), v.end()).c_str());
  }
  return c;
}

}  // namespace

void start(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size, double period_s) {
  if (g_state || world_size <= 1) return;
  g_state = new State;
  g_state->store = store;
  g_state->rank = rank;
  g_state->world = world_size;
  g_state->period = period_s;
  std::atexit(stop_at_exit);
  g_state->thread = std::thread([] {
    int64_t beat = 0;
    while (!g_state->stop) {
      try {
        const std::string v = std::to_string(++beat);
        g_state->store->set(key(g_state->rank), std::vector<uint8_t>(v.begin(), v.end()));
      } catch (const std::exception&) {
        return;  // store gone (rank 0 exited): nothing left to report to
      }
      for (int i = 0; i < 10 && !g_state->stop; ++i)
        std::this_thread::sleep_for(std::chrono::duration<double>(g_state->period / 10));
    }
  });
}

std::string annotate(const std::string& message) {
  if (!g_state) return message;
  const double wait = 3 * g_state->period;
  try {
    const auto a = read_counters();
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    const auto b = read_counters();
    std::string missing;
    for (int r = 0; r < g_state->world; ++r)
      if (r != g_state->rank && (b[size_t(r)] < 0 || a[size_t(r)] == b[size_t(r)]))
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    if (missing.empty()) return message;
    return fmt::format("{} [rank {} stopped: no heartbeat for {:.1f} s (killed, crashed or hung)]", message, missing,
                       wait);
  } catch (const std::exception&) {
    return fmt::format("{} [rank 0 stopped: the rendezvous store it hosts is unreachable]", message);
  }
}

}  // namespace shardcast::trainer::liveness
