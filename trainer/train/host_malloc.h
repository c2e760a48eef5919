// Host heap tuning for a training rank: keep freed memory in the process instead of handing
// it back to the kernel and faulting it in again on the next step.
//
// What it is: keep_freed_host_memory() sets glibc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD to
// kHostMallocKeepBytes, so tensors below that size come from the heap and the freed top of the
// heap is kept up to that size, not trimmed. glibc's defaults (a dynamic mmap threshold from
// 128 KiB, trim at twice it) make a rank map and unmap its multi-MiB gradient, gathered and
// Gloo buffers every step and take the page faults again; PyTorch's CPU tuning guide makes the
// same point for its own runs (pytorch.org/tutorials/recipes/recipes/tuning_guide.html,
// "Switch Memory allocator": jemalloc / tcmalloc keep freed memory for reuse). Measured on
// small-6l, 2 ranks: full_shard +5–6% tokens/s, peak RSS within +10 MiB (docs/trainer.md).
// What it is not: a tensor allocator (counts stay exact, memory.h) and not applied to
// shardcast's planner or tests. Called once by run_rank before any tensor exists; only from
// the main thread. Throws std::runtime_error when glibc refuses a setting; a no-op (returns
// false) on a C library without mallopt.
#pragma once

#include <cstddef>

namespace shardcast::trainer {

inline constexpr size_t kHostMallocKeepBytes = size_t(1) << 30;  // bytes

// true when the settings were applied (glibc), false when this C library has no mallopt.
bool keep_freed_host_memory();

}  // namespace shardcast::trainer
