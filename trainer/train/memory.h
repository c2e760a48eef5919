// Exact CPU tensor memory from a counting allocator (and CUDA allocator stats on GPU builds).
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

}  // namespace shardcast::trainer::memory
