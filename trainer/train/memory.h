// Exact CPU tensor memory from a counting allocator (CUDA allocator statistics on GPU builds).
//
// What it is: install_counting_allocator() wraps LibTorch's default CPU allocator with
// c10::SetCPUAllocator; every CPU tensor allocation after that is counted (bytes requested),
// giving live and peak bytes exactly. reset_peak() starts a new phase window (forward,
// backward, optimizer) whose peak is read with peak_bytes().
// What it is not: RSS (Gloo's own buffers and the heap outside tensors are not counted) and
// not per-thread: when several ranks run as threads of one process the counts are shared,
// so per-rank peaks need one process per rank (shardcast-train launch).
// Threading: counters are atomics; install once, early, from the main thread.
#pragma once

#include <cstdint>

namespace shardcast::trainer::memory {

void install_counting_allocator();   // idempotent
bool counting_installed();
int64_t live_bytes();                // bytes
int64_t peak_bytes();                // bytes, since the last reset_peak()
void reset_peak();                   // peak := live
// GPU builds (SHARDCAST_WITH_NCCL; not run in this project's CI): read live/peak from the
// CUDA caching allocator's statistics of `device` instead of the CPU counter. live/peak are
// its *active* bytes (torchtitan's max_active): a block freed while a NCCL stream still uses
// it stays active until that work completes, which "allocated" bytes do not count. Throws on
// CPU-only builds.
void use_cuda_device(int device);
bool cuda_stats_active();            // use_cuda_device was called
// CUDA only (callers check cuda_stats_active()): bytes reserved from the device, peak since
// the last reset_peak() (torchtitan's max_reserved), and cudaMalloc retries after freeing the
// cache since the process started (num_alloc_retries).
int64_t reserved_peak_bytes();       // bytes
int64_t alloc_retries();             // count

}  // namespace shardcast::trainer::memory
