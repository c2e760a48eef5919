#include "planner/model/allocator/caching_allocator.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace shardcast::planner {

namespace {
// ExpandableSegment page: 2 MiB for the small pool, 20 MiB for the large pool
// (CUDACachingAllocator.cpp, Note [Expandable Segments]).
int64_t page_of(bool small) { return small ? kSmallBuffer : kLargeBuffer; }
int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
}  // namespace

int64_t allocator_round_size(int64_t bytes) {
  return bytes < kMinBlockSize ? kMinBlockSize : round_up(bytes, kMinBlockSize);
}

int64_t allocator_segment_size(int64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded, kRoundLarge);
}

CachingAllocator::CachingAllocator(const CachingAllocatorConfig& cfg) : cfg_(cfg) { blocks_.reserve(256); }

void CachingAllocator::reset(const CachingAllocatorConfig& cfg) {
  cfg_ = cfg;
  blocks_.clear();
  dead_.clear();
  segments_.clear();
  for (std::vector<Key>& p : pools_) p.clear();
  pending_.clear();
  expandable_of_[0].clear();
  expandable_of_[1].clear();
  next_addr_ = 0;
  allocated_ = reserved_ = peak_allocated_ = peak_reserved_ = 0;
  n_segments_ = retries_ = 0;
  oom_ = false;
}

int CachingAllocator::new_block() {
  if (dead_.empty()) {
    if (blocks_.size() >= (size_t(1) << kBlockBits))
      throw std::length_error("caching allocator model: more than 2^23 blocks in one replay");
    blocks_.emplace_back();
    return int(blocks_.size()) - 1;
  }
  const int b = dead_.back();
  dead_.pop_back();
  blocks_[size_t(b)] = Block{};
  return b;
}

void CachingAllocator::kill_block(int b) {
  blocks_[size_t(b)].alive = false;
  dead_.push_back(b);
}

void CachingAllocator::pool_insert(std::vector<Key>& p, const Key& k) {
  p.insert(std::lower_bound(p.begin(), p.end(), k), k);
}

void CachingAllocator::pool_erase(std::vector<Key>& p, const Key& k) {
  auto it = std::lower_bound(p.begin(), p.end(), k);
  assert(it != p.end() && *it == k);
  p.erase(it);
}

void CachingAllocator::pool_replace_at(std::vector<Key>& p, size_t i, const Key& k) {
  // The same pool as erase(p[i]) then pool_insert(k), with one shift of the keys in between.
  assert(i < p.size());
  const auto from = p.begin() + std::ptrdiff_t(i);
  if (k < *from) {
    const auto to = std::lower_bound(p.begin(), from, k);
    std::move_backward(to, from, from + 1);
    *to = k;
  } else {
    const auto to = std::lower_bound(from + 1, p.end(), k);
    std::move(from + 1, to, from);
    *(to - 1) = k;
  }
}

void CachingAllocator::bump(int64_t d_alloc, int64_t d_res) {
  allocated_ += d_alloc;
  reserved_ += d_res;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

void CachingAllocator::insert_free(int b) {
  // free_block(): merge with free neighbours of the same segment (try_merge_blocks).
  Block& blk = blocks_[b];
  blk.allocated = false;
  blk.pending = false;
  std::vector<Key>& p = pool(blk.stream, blk.small);
  // The first merged neighbour's key becomes the merged block's (pool_replace_at below); a
  // second one's is erased.
  int first_block = -1;  // the first merged neighbour
  Key first{0, 0};
  for (int side = 0; side < 2; ++side) {
    const int o = side == 0 ? blk.prev : blk.next;
    if (o < 0 || blocks_[o].allocated || blocks_[o].pending) continue;
    Block& other = blocks_[o];
    if (first_block < 0) {
      first_block = o;
      first = key(o);
    }
    else pool_erase(p, key(o));
    if (side == 0) {
      blk.addr = other.addr;
      blk.prev = other.prev;
      if (blk.prev >= 0) blocks_[blk.prev].next = b;
    } else {
      blk.next = other.next;
      if (blk.next >= 0) blocks_[blk.next].prev = b;
      if (segments_[blk.segment].last == o) segments_[blk.segment].last = b;
    }
    blk.size += other.size;
    kill_block(o);
  }
  if (first_block < 0) {
    pool_insert(p, key(b));
  } else {
    const auto at = std::lower_bound(p.begin(), p.end(), first);
    assert(at != p.end() && *at == first);
    pool_replace_at(p, size_t(at - p.begin()), key(b));
  }
}

void CachingAllocator::process_events(double now) {
  while (!pending_.empty() && pending_.front().first <= now) {
    const int b = pending_.front().second;
    std::pop_heap(pending_.begin(), pending_.end(), std::greater<>());
    pending_.pop_back();
    insert_free(b);
  }
}

int CachingAllocator::find_free(int64_t size, int stream, bool small, size_t* slot) {
  // get_free_block(): the smallest cached block of this stream with size ≥ the request.
  std::vector<Key>& p = pool(stream, small);
  auto it = std::lower_bound(p.begin(), p.end(), Key{size, 0});
  if (it == p.end()) return -1;
  *slot = size_t(it - p.begin());
  return it->block();
}

int CachingAllocator::new_segment(int64_t size, int stream, bool small) {
  const int64_t seg_bytes = allocator_segment_size(size);
  if (double(reserved_ + seg_bytes) > cfg_.capacity_bytes) return -1;
  if (next_addr_ + seg_bytes > kAddrLimit)
    throw std::length_error("caching allocator model: segments of one replay past 2^50 bytes of addresses");
  Segment s;
  s.stream = stream;
  s.small = small;
  s.mapped = seg_bytes;
  segments_.push_back(s);
  const int b = new_block();
  Block& blk = blocks_[size_t(b)];
  blk.size = seg_bytes;
  blk.addr = next_addr_;
  next_addr_ += seg_bytes;
  blk.segment = int(segments_.size()) - 1;
  blk.stream = stream;
  blk.small = small;
  segments_.back().last = b;
  ++n_segments_;
  bump(0, seg_bytes);
  return b;
}

int CachingAllocator::expand_segment(int64_t size, int stream, bool small) {
  // try_allocate_expandable_block(): one segment per stream and pool; map pages at its end,
  // joining a free block already there.
  std::vector<int>& of = expandable_of_[small ? 1 : 0];
  if (int(of.size()) <= stream) of.resize(size_t(stream) + 1, -1);
  const int64_t page = page_of(small);
  int seg = of[size_t(stream)];
  if (seg < 0) {
    Segment s;
    s.stream = stream;
    s.small = small;
    s.expandable = true;
    segments_.push_back(s);
    seg = of[size_t(stream)] = int(segments_.size()) - 1;
    ++n_segments_;
  }
  Segment& sg = segments_[size_t(seg)];
  const int last = sg.last;
  const bool join = last >= 0 && !blocks_[last].allocated && !blocks_[last].pending;
  const int64_t have = join ? blocks_[last].size : 0;
  const int64_t grow = round_up(size - have, page);
  if (double(reserved_ + grow) > cfg_.capacity_bytes) return -1;
  if (((int64_t(seg) + 2) << 46) > kAddrLimit || sg.mapped + grow > (int64_t(1) << 46))
    throw std::length_error("caching allocator model: expandable segment past its 2^46-byte address range");
  sg.mapped += grow;
  bump(0, grow);
  if (join) {
    pool_erase(pool(stream, small), key(last));
    blocks_[last].size += grow;
    return last;
  }
  const int b = new_block();
  Block& blk = blocks_[size_t(b)];
  blk.size = grow;
  // Addresses: each expandable segment owns a 2^46-byte range (as the real one reserves the
  // device's whole memory as address space).
  blk.addr = (int64_t(seg) + 1) << 46;
  if (last >= 0) blk.addr = blocks_[last].addr + blocks_[last].size;
  blk.segment = seg;
  blk.stream = stream;
  blk.small = small;
  blk.prev = last;
  if (last >= 0) blocks_[last].next = b;
  sg.last = b;
  return b;
}

void CachingAllocator::release_cached() {
  // release_cached_blocks(): synchronize_and_free_events, then free every cached segment
  // with no block in use (fixed segments) or unmap the free pages at an expandable
  // segment's end (interior free pages of an expandable segment are not unmapped here).
  process_events(1e300);
  for (size_t pi = 0; pi < pools_.size(); ++pi) {
    const bool small = pi % 2 == 1;
    std::vector<Key>& p = pools_[pi];
    std::vector<Key> keep;
    for (auto it = p.begin(); it != p.end();) {
      const int b = it->block();
      Block& blk = blocks_[b];
      Segment& sg = segments_[size_t(blk.segment)];
      if (!sg.expandable) {
        if (blk.prev < 0 && blk.next < 0) {
          bump(0, -blk.size);
          sg.alive = false;
          kill_block(b);
          --n_segments_;
          ++it;
          continue;
        }
      } else if (sg.last == b) {
        const int64_t page = page_of(small);
        const int64_t drop = blk.size / page * page;
        if (drop > 0) {
          ++it;
          sg.mapped -= drop;
          bump(0, -drop);
          blk.size -= drop;
          if (blk.size == 0) {
            sg.last = blk.prev;
            if (blk.prev >= 0) blocks_[blk.prev].next = -1;
            kill_block(b);
          } else {
            keep.push_back(key(b));
          }
          continue;
        }
      }
      keep.push_back(*it);
      ++it;
    }
    std::sort(keep.begin(), keep.end());
    p.swap(keep);
  }
}

int CachingAllocator::malloc(int64_t bytes, int stream, double now) {
  assert(bytes > 0 && stream >= 0);
  process_events(now);
  const int64_t size = allocator_round_size(bytes);
  const bool small = size <= kSmallSize;
  // slot: the found block's place in its pool, which it leaves below (-1: a grown block).
  size_t slot = 0;
  int b = find_free(size, stream, small, &slot);
  bool cached = b >= 0;
  if (b < 0) {
    auto grow = [&] {
      return cfg_.expandable_segments && !cfg_.private_pool ? expand_segment(size, stream, small)
                                                          : new_segment(size, stream, small);
    };
    b = grow();
    if (b < 0) {
      ++retries_;
      release_cached();
      b = find_free(size, stream, small, &slot);
      cached = b >= 0;
      if (b < 0) b = grow();
      if (b < 0) {
        // Out of memory: the run would stop here. Keep replaying past the capacity so the
        // caller reads how far over it goes.
        oom_ = true;
        const double cap = cfg_.capacity_bytes;
        cfg_.capacity_bytes = 1e300;
        b = grow();
        cfg_.capacity_bytes = cap;
      }
    }
  }
  // alloc_found_block(): split off the remainder when should_split() says so.
  Block& blk = blocks_[size_t(b)];
  const int64_t remaining = blk.size - size;
  const bool split = (small || cfg_.expandable_segments) ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    Block rest;
    rest.size = remaining;
    rest.addr = blk.addr + size;
    rest.segment = blk.segment;
    rest.stream = blk.stream;
    rest.small = blk.small;
    rest.prev = b;
    rest.next = blk.next;
    const int r = new_block();
    blocks_[size_t(r)] = rest;
    Block& again = blocks_[size_t(b)];  // new_block may have moved it
    if (again.next >= 0) blocks_[size_t(again.next)].prev = r;
    again.next = r;
    again.size = size;
    if (segments_[size_t(again.segment)].last == b) segments_[size_t(again.segment)].last = r;
    // The remainder takes the found block's place in the pool (one shift, not two).
    if (cached) pool_replace_at(pool(stream, small), slot, key(r));
    else pool_insert(pool(stream, small), key(r));
  } else if (cached) {
    std::vector<Key>& p = pool(stream, small);
    p.erase(p.begin() + std::ptrdiff_t(slot));
  }
  Block& out = blocks_[size_t(b)];
  out.allocated = true;
  bump(out.size, 0);
  return b;
}

void CachingAllocator::free(int handle) {
  Block& blk = blocks_[size_t(handle)];
  assert(blk.alive && blk.allocated);
  bump(-blk.size, 0);
  insert_free(handle);
}

void CachingAllocator::free_after(int handle, double ready) {
  Block& blk = blocks_[size_t(handle)];
  assert(blk.alive && blk.allocated);
  bump(-blk.size, 0);
  blk.allocated = false;
  blk.pending = true;
  pending_.push_back({ready, handle});
  std::push_heap(pending_.begin(), pending_.end(), std::greater<>());
}

}  // namespace shardcast::planner
