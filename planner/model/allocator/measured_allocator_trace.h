// A measured allocator trace: the CUDA caching allocator's own record of one GPU run, as the
// trainer writes it from torch's c10::cuda::CUDACachingAllocator::snapshot().device_traces,
// read back and replayed through the planner's model of that allocator.
//
// What it is: the reader of the trainer's file (format below), the measured curves read off
// its rows (reserved: running Σ segment_alloc − segment_free + segment_map − segment_unmap;
// allocated: running Σ alloc − free_completed of the block at each address), the rows turned
// into AllocEvents (allocation_trace.h), and their replay through CachingAllocator with fixed
// or expandable segments, so measured and modelled peaks can be printed side by side.
// What it is not: the writer (the trainer's, with LibTorch), a parser of torch's pickled
// snapshots, or the allocator model (caching_allocator.h). No LibTorch here.
//
// The file (one per device):
//   # shardcast allocator trace: torch=2.11.0 device=0 expandable_segments=0 entries=N complete=1 max_reserved_bytes=B max_allocated_bytes=B
//   action,addr,size,stream
//   segment_alloc,139872312000000,2097152,0
//   alloc,139872312000000,1024,0
//   ...
// Line 1: '#', the title, ':', then space-separated key=value pairs, every key above exactly
// once (expandable_segments and complete are 0 | 1; complete=0: the trace ring buffer
// overflowed and the run's beginning is lost; max_*_bytes: the run's peaks over its steps as its
// metrics report them, from the allocator's statistics: max reserved, and max active bytes —
// max allocated in shardcast-train, which calls no recordStream). Further lines
// starting with '#' are comments; blank lines are skipped. Then the header row, then `entries`
// rows in time order: action (alloc, free_requested, free_completed, segment_alloc,
// segment_free, segment_map, segment_unmap, oom, snapshot), addr (decimal unsigned 64-bit),
// size (decimal bytes), stream (small int, 0 = the first stream seen).
// Sizes as torch records them (TraceEntry): alloc and free_* carry the *requested* bytes
// (orig_size / requested_size), while the allocator's allocated_bytes statistic, and so
// max_allocated_bytes and CachingAllocator::peak_allocated(), count whole blocks (rounded to
// 512 B, plus a large-pool remainder ≤ 1 MiB left unsplit). segment_* carry segment or page
// bytes, which reserved counts as they are.
//
// Blocks: an alloc hands out the block at addr; free_requested is the user's free;
// free_completed is the block back in its pool (later than free_requested for a block another
// stream used, recordStream). An alloc at an address whose block is still live (not yet
// free_completed), a free_* of an address with no live block, or a free_completed whose size
// differs from its alloc's is an InputError naming the file and line. With complete=0, a free_*
// of an address that no kept row allocated (its alloc was lost in the overflow) is skipped and
// counted; a second free of an address the kept rows did allocate is still an error.
//
// Ownership: the structs own their rows (32 bytes a row). Pure functions, thread-safe
// (replay_measured uses replay_allocation_trace's per-thread allocator).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/model/allocator/allocation_trace.h"

namespace shardcast::planner {

enum class MeasuredAction : uint8_t {
  alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map, segment_unmap, oom, snapshot
};
// The action's name in the file ("free_completed", ...).
const char* measured_action_name(MeasuredAction a);

struct MeasuredTraceEntry {
  uint64_t addr = 0;     // device address (oom: torch records the device's free bytes here)
  int64_t size = 0;      // bytes (alloc / free_*: requested bytes; segment_*: segment or pages)
  int stream = 0;        // 0 = the first stream seen
  int line = 0;          // 1-based line in the file, for error messages
  MeasuredAction action = MeasuredAction::alloc;
};

struct MeasuredAllocatorTrace {
  std::string path;                    // file (or label) it was read from, for error messages
  std::string torch;                   // torch version that recorded it ("2.11.0")
  int device = 0;                      // CUDA device index
  bool expandable_segments = false;    // PYTORCH_CUDA_ALLOC_CONF of the run
  int64_t entries = 0;                 // rows the header announces (= rows.size())
  bool complete = true;                // false: the ring buffer overflowed, the beginning is lost
  int64_t max_reserved_bytes = 0;      // the run's max reserved (header)  // bytes
  int64_t max_allocated_bytes = 0;     // the run's max allocated (header)  // bytes
  std::vector<MeasuredTraceEntry> rows;
};

// The file at `path`. ConfigError when it cannot be opened; InputError "PATH:LINE: what, allowed"
// when it is malformed (header line, keys, header row, action, numbers, row count ≠ entries).
MeasuredAllocatorTrace read_measured_allocator_trace(const std::string& path);
// The same from the file's text; `label` names it in errors and becomes the trace's path.
MeasuredAllocatorTrace parse_measured_allocator_trace(const std::string& text, const std::string& label);

// Reserved after a segment event.
struct ReservedPoint {
  int64_t row = 0;        // index into rows
  int64_t reserved = 0;   // running Σ after the row  // bytes
};

// What the rows themselves say. With complete=0 both sums start at 0 at the first kept row
// (what was reserved or allocated before it is unknown): reserved may then dip below 0, and
// the run's reserved peak is at least peak_reserved − floor_reserved.
struct MeasuredCurves {
  std::vector<ReservedPoint> reserved_curve;  // one point per segment_* row
  int64_t peak_reserved = 0;            // max running Σ segment bytes (≥ 0)  // bytes
  int64_t floor_reserved = 0;           // min running Σ (≤ 0; < 0 only with complete=0)  // bytes
  int64_t peak_allocated = 0;           // max Σ requested bytes of live blocks  // bytes
  int64_t peak_allocated_rounded = 0;   // the same with each size rounded to 512 B  // bytes
  int64_t skipped_frees = 0;            // complete=0: free_completed rows of blocks allocated before the trace
  int64_t oom_rows = 0;                 // oom rows (the run hit a failed cudaMalloc)
};
MeasuredCurves measure_allocator_trace(const MeasuredAllocatorTrace& trace);

// The rows as the model's allocation sequence: alloc row i → an allocation (bytes = size, its
// stream, t = i), free_completed row j → the free of the block allocated at that address
// (ready = t = j: the block is back in its pool at once). free_requested, segment_*, oom and
// snapshot rows are not events (segments are the model's to decide). Tensor ids count the
// allocations. InputError naming the line for the block errors above.
std::vector<AllocEvent> to_alloc_events(const MeasuredAllocatorTrace& trace);

// The rows replayed through CachingAllocator (unbounded capacity) with fixed or expandable
// segments: peak_reserved / peak_allocated are the model's for the measured sequence, to set
// beside trace.max_reserved_bytes / max_allocated_bytes (and MeasuredCurves). Sizes past the
// model's limits (caching_allocator.h; no device's memory) are an InputError naming the file.
ReplayResult replay_measured(const MeasuredAllocatorTrace& trace, bool expandable_segments);

}  // namespace shardcast::planner
