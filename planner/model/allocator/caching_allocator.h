// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): what it
// reserves (torch.cuda.memory_reserved) for a sequence of allocations and frees.
//
// What it is: the allocator's block bookkeeping, rule for rule, at pytorch/pytorch@eb42ad6
// (docs/cost-model.md §5.4 cites each rule): requests rounded up to 512 B (round_size);
// requests ≤ 1 MiB served from the small pool in 2 MiB segments, larger ones from the large
// pool, new segments of 20 MiB for requests < 10 MiB and of the request rounded up to 2 MiB
// otherwise (get_allocation_size); best fit among the cached free blocks of the same pool and
// the same stream (get_free_block: a block freed on one stream is never handed to another);
// a found block split when the remainder is ≥ 512 B (small pool, or expandable segments) or
// > 1 MiB (large pool: should_split); free neighbours within one segment merged on free,
// never across segments; a block freed while another stream still uses it (recordStream)
// returns to its pool only when that use is over (process_events); on a failed cudaMalloc
// every cached segment with no block in use is released and the request retried
// (release_cached_blocks). With expandable segments (PYTORCH_CUDA_ALLOC_CONF=
// expandable_segments:True) each stream has one segment per pool that grows by pages of
// 2 MiB (small) or 20 MiB (large) at its end.
// What it is not: memory contents, addresses a real run gets, garbage collection
// (garbage_collection_threshold), max_split_size_mb / roundup_power2_divisions (off by
// default), a CUDA graph's private pool (allocation_trace.h replays one as a second instance),
// or what lies outside the allocator (NCCL, the CUDA context).
// Sizes in bytes, times in seconds of the simulated step. Not thread-safe: one instance per
// replay at a time; cheap to construct, and reset() reuses one.
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace shardcast::planner {

// Constants of CUDACachingAllocator.cpp (same names there).
inline constexpr int64_t kMinBlockSize = 512;               // every size rounded to 512 B
inline constexpr int64_t kSmallSize = 1048576;              // largest small request: 1 MiB
inline constexpr int64_t kSmallBuffer = 2097152;            // small segments: 2 MiB
inline constexpr int64_t kLargeBuffer = 20971520;           // segment for requests < 10 MiB: 20 MiB
inline constexpr int64_t kMinLargeAlloc = 10485760;         // 10 MiB
inline constexpr int64_t kRoundLarge = 2097152;             // larger requests rounded up to 2 MiB

// round_size(): bytes a request of `bytes` occupies in a block.
int64_t allocator_round_size(int64_t bytes);
// get_allocation_size(): size of the segment cudaMalloc'd for a rounded request.
int64_t allocator_segment_size(int64_t rounded);

struct CachingAllocatorConfig {
  bool expandable_segments = false;
  // A CUDA graph's private pool: its segments are cudaMalloc'd whole even with expandable
  // segments on, whose split rule it keeps (alloc_block: "our checkpointing logic for private
  // pools doesn't support the expandable_segments_ structure yet"; should_split reads the
  // setting, not the segment).
  bool private_pool = false;
  // Device memory the allocator may reserve (capacity minus what lies outside it); beyond it
  // cudaMalloc fails: cached segments are released and the request retried.  // bytes
  double capacity_bytes = 1e300;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(const CachingAllocatorConfig& cfg);
  // Back to the state of a new instance for `cfg`, keeping the storage already grown (a
  // replay per plan() reuses one instance rather than reallocating its vectors).
  void reset(const CachingAllocatorConfig& cfg);

  // Allocate `bytes` (> 0) for use on `stream` at time `now`; returns a handle for free().
  // Blocks freed with free_after(…, ready) where ready ≤ now are returned to their pools first.
  int malloc(int64_t bytes, int stream, double now);
  // The block goes back to its stream's pool now (no other stream used it).
  void free(int handle);
  // recordStream: the block goes back to its pool once `ready` has passed (another stream's
  // use of it ends then).
  void free_after(int handle, double ready);

  int64_t allocated() const { return allocated_; }        // Σ sizes of blocks in use  // bytes
  int64_t reserved() const { return reserved_; }          // Σ segment sizes (mapped)  // bytes
  int64_t peak_allocated() const { return peak_allocated_; }
  int64_t peak_reserved() const { return peak_reserved_; }
  int segments() const { return n_segments_; }
  int retries() const { return retries_; }   // cudaMalloc failures answered by a release
  bool out_of_memory() const { return oom_; } // a request failed after the release
  // torch.cuda.empty_cache(): pending recordStream frees complete (torch.cuda.graph
  // synchronizes first), then every cached segment with no block in use is released.
  void empty_cache() { release_cached(); }
  // The device memory this allocator may reserve from now on (another pool holds the rest).  // bytes
  void set_capacity(double bytes) { cfg_.capacity_bytes = bytes; }

 private:
  struct Block {
    int64_t size = 0;
    int64_t addr = 0;     // virtual address: unique across segments
    int segment = -1;
    int stream = 0;
    bool small = false;
    bool allocated = false;
    bool pending = false;  // freed, waiting for another stream's use to end
    bool alive = true;
    int prev = -1, next = -1;  // neighbours within the segment
  };
  struct Segment {
    int stream = 0;
    bool small = false;
    bool expandable = false;
    int64_t mapped = 0;    // bytes
    int last = -1;         // block at the segment's end (expandable)
    bool alive = true;
  };
  // Pool key: BlockComparatorSize orders by stream, size, address; one pool per stream here
  // (a block is only ever handed to its own stream). A pool holds tens of free blocks, so it
  // is a sorted vector (binary search, short moves) rather than a node set.
  // 16 bytes (pools shift keys on every insert): the address and the block index share
  // `tag`, address above the block, so ordering by tag orders by address (addresses are
  // unique). Addresses are multiples of 512 below 2^50 and block indices below 2^23
  // (new_segment, expand_segment and new_block check both).
  static constexpr int kBlockBits = 23;
  static constexpr int64_t kAddrLimit = int64_t(1) << 50;
  struct Key {
    int64_t size;
    uint64_t tag;
    int block() const { return int(tag & ((uint64_t(1) << kBlockBits) - 1)); }
    bool operator<(const Key& o) const { return size != o.size ? size < o.size : tag < o.tag; }
    bool operator==(const Key& o) const { return size == o.size && tag == o.tag; }
  };
  Key key(int b) const {
    const Block& blk = blocks_[size_t(b)];
    assert(blk.addr % kMinBlockSize == 0 && blk.addr >= 0 && blk.addr < kAddrLimit);
    return Key{blk.size, (uint64_t(blk.addr) / uint64_t(kMinBlockSize)) << kBlockBits | uint64_t(b)};
  }
  std::vector<Key>& pool(int stream, bool small) {
    const size_t i = size_t(stream) * 2 + (small ? 1 : 0);
    if (pools_.size() <= i) pools_.resize(i + 1);
    return pools_[i];
  }
  static void pool_insert(std::vector<Key>& p, const Key& k);
  static void pool_erase(std::vector<Key>& p, const Key& k);
  // Replace p[i] by k, keeping p sorted (erase then insert, in one shift).
  static void pool_replace_at(std::vector<Key>& p, size_t i, const Key& k);

  void process_events(double now);
  // The best-fitting cached block (-1 none), left in its pool at index *slot.
  int find_free(int64_t size, int stream, bool small, size_t* slot);
  int new_segment(int64_t size, int stream, bool small);
  int expand_segment(int64_t size, int stream, bool small);
  void release_cached();
  void insert_free(int b);
  void bump(int64_t d_alloc, int64_t d_res);
  // A block slot: a dead one reused (dead_) or a new one appended; its fields are reset.
  int new_block();
  void kill_block(int b);

  CachingAllocatorConfig cfg_;
  std::vector<Block> blocks_;
  std::vector<int> dead_;                     // indices of !alive blocks, reused by new_block()
  std::vector<Segment> segments_;
  std::vector<std::vector<Key>> pools_;  // [stream · 2 + small]
  // (ready, block), earliest first.
  // A binary heap (std::push_heap / pop_heap with std::greater, as std::priority_queue) kept
  // as a vector so that reset() keeps its storage.
  std::vector<std::pair<double, int>> pending_;
  std::vector<int> expandable_of_[2];         // [small] -> segment per stream (-1 none)
  int64_t next_addr_ = 0;
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  int n_segments_ = 0, retries_ = 0;
  bool oom_ = false;
};

}  // namespace shardcast::planner
