// A simulated FSDP step for the allocator replay's tests (caching_allocator_test.cpp,
// cuda_graph_pool_test.cpp): a few units with distinct sizes on every kind of tensor.
// What it is not: a plan of any model. Header-only, for tests.
#pragma once

#include <string>

#include "planner/model/simulator.h"

namespace shardcast::planner::test {

// U units; each unit's sharded gradient is `shard_grad_bytes` (0: the gradients are kept between
// steps, outside the step's allocations, as the CUDA-graphed loop keeps them).  // bytes
inline SimInput allocator_step_input(int U, double shard_grad_bytes = 75.0 * (1 << 20)) {
  constexpr double MiB = 1 << 20;
  SimInput in;
  for (int i = 0; i < U; ++i) {
    SimUnit u;
    u.name = "u" + std::to_string(i);
    u.fwd_s = 1.0;
    u.bwd_s = 2.0;
    u.all_gather_s = 0.7;
    u.reduce_s = 0.9;
    u.reshard_after_forward = i != U - 1;
    u.gathered_bytes = 300.0 * MiB + 4096 * i;
    u.grad_bytes = 300.0 * MiB;
    u.reduce_buffer_bytes = 600.0 * MiB;
    u.saved_bytes = 700.0 * MiB + 1000 * i;
    u.fwd_transient_bytes = 90.0 * MiB;
    u.bwd_transient_bytes = 1100.0 * MiB;
    u.shard_grad_bytes = shard_grad_bytes;
    in.units.push_back(u);
  }
  in.optimizer_s = 0.5;
  in.optimizer_transient_bytes = 8.0 * U * 75 * MiB / 4;
  in.record_allocations = true;
  return in;
}

}  // namespace shardcast::planner::test
