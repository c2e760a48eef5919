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
#include <string>

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

// The caching allocator's own record of what it did (c10::cuda::CUDACachingAllocator
// recordHistory, trace entries without stack contexts): every block handed out and returned,
// every segment cudaMalloc'd, mapped or freed, on every stream. CUDA builds against the torch
// 2.11 allocator API only (what ran on the lent GPU machines); elsewhere both throw
// std::logic_error. Start it after use_cuda_device and before the first CUDA tensor, so the
// sequence is whole. At most `max_entries` entries are kept (a ring: the oldest go first).
void start_allocator_trace(size_t max_entries);
// Write the trace recorded so far to `path` in the format planner/model/allocator/measured_allocator_trace.h
// reads (one CSV row per entry after one `# key=value` header line), whole or not at all
// (write_file_atomic). max_reserved / max_active: the run's peaks over its steps, as its
// metrics report them  // bytes
void write_allocator_trace(const std::string& path, int64_t max_reserved, int64_t max_active);

}  // namespace shardcast::trainer::memory
