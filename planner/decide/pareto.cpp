#include "planner/decide/pareto.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace shardcast::planner {

std::vector<size_t> pareto_front(const std::vector<double>& memory,
                                 const std::vector<double>& throughput) {
  assert(memory.size() == throughput.size());
  std::vector<size_t> order(memory.size());
  std::iota(order.begin(), order.end(), size_t(0));
  // Memory ascending; at equal memory the fastest first, then the lowest index.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (memory[a] != memory[b]) return memory[a] < memory[b];
    if (throughput[a] != throughput[b]) return throughput[a] > throughput[b];
    return a < b;
  });
  std::vector<size_t> front;
  for (size_t i : order) {
    // Kept only if strictly faster than everything that needs no more memory.
    if (front.empty() || throughput[i] > throughput[front.back()]) front.push_back(i);
  }
  return front;
}

}  // namespace shardcast::planner
