#include "planner/model/allocator/measured_allocator_trace.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "planner/model/allocator/caching_allocator.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {

constexpr std::string_view kTitle = "# shardcast allocator trace:";
constexpr std::string_view kHeaderRow = "action,addr,size,stream";
constexpr const char* kAllowedActions =
    "alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map, segment_unmap, oom, snapshot";
constexpr const char* kHeaderKeys =
    "torch device expandable_segments entries complete max_reserved_bytes max_allocated_bytes";
constexpr int kMaxStream = 1023;  // the model keeps two pools per stream index

constexpr MeasuredAction kActions[] = {
    MeasuredAction::alloc,         MeasuredAction::free_requested, MeasuredAction::free_completed,
    MeasuredAction::segment_alloc, MeasuredAction::segment_free,   MeasuredAction::segment_map,
    MeasuredAction::segment_unmap, MeasuredAction::oom,            MeasuredAction::snapshot};

[[noreturn]] void fail(const std::string& label, int line, const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}", label, line, what));
}

// Decimal digits only (no sign, no spaces), at most `max`; false otherwise.
bool parse_decimal(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > max) return false;
  *out = v;
  return true;
}

constexpr uint64_t kInt64Max = uint64_t(std::numeric_limits<int64_t>::max());

// The title line's key=value pairs into *t.
void parse_title(std::string_view line, const std::string& label, MeasuredAllocatorTrace* t) {
  const std::string expected = fmt::format("expected '{} {}' with key=value for each of: {}", kTitle,
                                           "torch=2.11.0 device=0 ...", kHeaderKeys);
  if (line.substr(0, kTitle.size()) != kTitle) fail(label, 1, "missing header line: " + expected);
  std::string_view rest = line.substr(kTitle.size());
  std::vector<std::string> seen;
  while (!rest.empty()) {
    const size_t a = rest.find_first_not_of(' ');
    if (a == std::string_view::npos) break;
    rest = rest.substr(a);
    const std::string_view tok = rest.substr(0, rest.find(' '));
    rest = rest.substr(tok.size());
    const size_t eq = tok.find('=');
    if (eq == std::string_view::npos) fail(label, 1, fmt::format("'{}' is not key=value; {}", tok, expected));
    const std::string key(tok.substr(0, eq));
    const std::string_view val = tok.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      fail(label, 1, fmt::format("key '{}' given twice (each of {} once)", key, kHeaderKeys));
    seen.push_back(key);
    uint64_t v = 0;
    auto number = [&](uint64_t max, const char* allowed) {
      if (!parse_decimal(val, max, &v))
        fail(label, 1, fmt::format("{}='{}' is not allowed ({})", key, val, allowed));
      return v;
    };
    if (key == "torch") {
      if (val.empty()) fail(label, 1, "torch= is empty (allowed: the torch version, e.g. torch=2.11.0)");
      t->torch = std::string(val);
    } else if (key == "device") {
      t->device = int(number(std::numeric_limits<int>::max(), "a CUDA device index ≥ 0"));
    } else if (key == "expandable_segments") {
      t->expandable_segments = number(1, "0 | 1") == 1;
    } else if (key == "complete") {
      t->complete = number(1, "0 | 1") == 1;
    } else if (key == "entries") {
      t->entries = int64_t(number(kInt64Max, "the number of rows, decimal"));
    } else if (key == "max_reserved_bytes") {
      t->max_reserved_bytes = int64_t(number(kInt64Max, "bytes, decimal"));
    } else if (key == "max_allocated_bytes") {
      t->max_allocated_bytes = int64_t(number(kInt64Max, "bytes, decimal"));
    } else {
      fail(label, 1, fmt::format("unknown key '{}' (allowed: {})", key, kHeaderKeys));
    }
  }
  for (const char* k : {"torch", "device", "expandable_segments", "entries", "complete", "max_reserved_bytes",
                        "max_allocated_bytes"})
    if (std::find(seen.begin(), seen.end(), k) == seen.end())
      fail(label, 1, fmt::format("header line lacks {}= (required: {})", k, kHeaderKeys));
}

MeasuredTraceEntry parse_row(std::string_view line, int n, const std::string& label) {
  std::string_view f[4];
  size_t k = 0;
  for (std::string_view rest = line;; ++k) {
    const size_t c = rest.find(',');
    if (k >= 4) fail(label, n, fmt::format("'{}' has more than 4 fields (allowed: {})", line, kHeaderRow));
    f[k] = rest.substr(0, c);
    if (c == std::string_view::npos) break;
    rest = rest.substr(c + 1);
  }
  if (k != 3) fail(label, n, fmt::format("'{}' has {} fields (allowed: 4, {})", line, k + 1, kHeaderRow));
  MeasuredTraceEntry e;
  e.line = n;
  bool known = false;
  for (MeasuredAction a : kActions)
    if (f[0] == measured_action_name(a)) e.action = a, known = true;
  if (!known) fail(label, n, fmt::format("unknown action '{}' (allowed: {})", f[0], kAllowedActions));
  uint64_t v = 0;
  if (!parse_decimal(f[1], std::numeric_limits<uint64_t>::max(), &v))
    fail(label, n, fmt::format("addr '{}' is not allowed (a decimal unsigned 64-bit address)", f[1]));
  e.addr = v;
  if (!parse_decimal(f[2], kInt64Max, &v))
    fail(label, n, fmt::format("size '{}' is not allowed (decimal bytes, 0 … 2^63−1)", f[2]));
  e.size = int64_t(v);
  if (e.action == MeasuredAction::alloc && e.size == 0) fail(label, n, "alloc of size 0 (allowed: > 0 bytes)");
  if (!parse_decimal(f[3], kMaxStream, &v))
    fail(label, n, fmt::format("stream '{}' is not allowed (a stream index 0 … {})", f[3], kMaxStream));
  e.stream = int(v);
  return e;
}

// The block rows of `t` in order: on_alloc(row, tensor) for each alloc, on_free(row, tensor)
// for each free_completed of a live block (tensor: the alloc's index among the allocs). Throws
// InputError for the block errors (header comment); counts skipped frees (complete=0).
template <class OnAlloc, class OnFree>
void walk_blocks(const MeasuredAllocatorTrace& t, OnAlloc on_alloc, OnFree on_free, int64_t* skipped) {
  struct Block {
    int tensor = 0;
    int64_t size = 0;    // requested bytes
    int line = 0;        // of its alloc, or of its free_completed once freed
    bool live = false;
  };
  std::unordered_map<uint64_t, Block> at;  // by address: the latest block there
  int tensors = 0;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const MeasuredTraceEntry& r = t.rows[i];
    const bool completed = r.action == MeasuredAction::free_completed;
    if (r.action == MeasuredAction::alloc) {
      Block& b = at[r.addr];
      if (b.live)
        fail(t.path, r.line,
             fmt::format("alloc at address {} whose block from line {} is still live (allowed: an address "
                         "free of blocks, or one whose last block was free_completed)",
                         r.addr, b.line));
      b = Block{tensors++, r.size, r.line, true};
      on_alloc(i, b.tensor);
    } else if (completed || r.action == MeasuredAction::free_requested) {
      const char* what = measured_action_name(r.action);
      auto it = at.find(r.addr);
      if (it == at.end()) {
        if (!t.complete) {  // allocated before the kept part of the ring buffer
          if (completed) ++*skipped;
          continue;
        }
        fail(t.path, r.line,
             fmt::format("{} of address {}, which no alloc row gave out (allowed: the address of a live "
                         "block; only a trace with complete=0 may free blocks it lost)",
                         what, r.addr));
      }
      Block& b = it->second;
      if (!b.live)
        fail(t.path, r.line,
             fmt::format("{} of address {}, whose block was already free_completed at line {} (allowed: "
                         "the address of a live block)",
                         what, r.addr, b.line));
      if (r.size != b.size)
        fail(t.path, r.line,
             fmt::format("{} of {} bytes at address {}, allocated with {} bytes at line {} (allowed: the "
                         "alloc's size)",
                         what, r.size, r.addr, b.size, b.line));
      if (completed) {
        b.live = false;
        b.line = r.line;
        on_free(i, b.tensor);
      }
    }
  }
}

}  // namespace

const char* measured_action_name(MeasuredAction a) {
  switch (a) {
    case MeasuredAction::alloc: return "alloc";
    case MeasuredAction::free_requested: return "free_requested";
    case MeasuredAction::free_completed: return "free_completed";
    case MeasuredAction::segment_alloc: return "segment_alloc";
    case MeasuredAction::segment_free: return "segment_free";
    case MeasuredAction::segment_map: return "segment_map";
    case MeasuredAction::segment_unmap: return "segment_unmap";
    case MeasuredAction::oom: return "oom";
    case MeasuredAction::snapshot: return "snapshot";
  }
  return "?";
}

MeasuredAllocatorTrace parse_measured_allocator_trace(const std::string& text, const std::string& label) {
  MeasuredAllocatorTrace t;
  t.path = label;
  bool title = false, header_row = false;
  int n = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++n;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!title) {
      parse_title(line, label, &t);
      title = true;
      t.rows.reserve(size_t(std::min<int64_t>(t.entries, int64_t(1) << 24)));
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    if (!header_row) {
      if (line != kHeaderRow)
        fail(label, n, fmt::format("header row '{}' (allowed: exactly '{}')", line, kHeaderRow));
      header_row = true;
      continue;
    }
    t.rows.push_back(parse_row(line, n, label));
  }
  if (!title) fail(label, 1, fmt::format("empty file (expected a header line '{} …', then '{}')", kTitle, kHeaderRow));
  if (!header_row) fail(label, n, fmt::format("missing header row (expected '{}' after the header line)", kHeaderRow));
  if (int64_t(t.rows.size()) != t.entries)
    fail(label, n,
         fmt::format("the header line says entries={} but the file has {} rows (a file cut short, or a "
                     "header from another trace)",
                     t.entries, t.rows.size()));
  return t;
}

MeasuredAllocatorTrace read_measured_allocator_trace(const std::string& path) {
  return parse_measured_allocator_trace(read_text(path), path);
}

MeasuredCurves measure_allocator_trace(const MeasuredAllocatorTrace& trace) {
  MeasuredCurves c;
  int64_t reserved = 0;
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    const MeasuredTraceEntry& r = trace.rows[i];
    switch (r.action) {
      case MeasuredAction::segment_alloc:
      case MeasuredAction::segment_map: reserved += r.size; break;
      case MeasuredAction::segment_free:
      case MeasuredAction::segment_unmap: reserved -= r.size; break;
      case MeasuredAction::oom: ++c.oom_rows; continue;
      default: continue;
    }
    c.reserved_curve.push_back({int64_t(i), reserved});
    c.peak_reserved = std::max(c.peak_reserved, reserved);
    c.floor_reserved = std::min(c.floor_reserved, reserved);
  }
  int64_t allocated = 0, rounded = 0;
  walk_blocks(
      trace,
      [&](size_t i, int) {
        allocated += trace.rows[i].size;
        rounded += allocator_round_size(trace.rows[i].size);
        c.peak_allocated = std::max(c.peak_allocated, allocated);
        c.peak_allocated_rounded = std::max(c.peak_allocated_rounded, rounded);
      },
      [&](size_t i, int) {
        allocated -= trace.rows[i].size;
        rounded -= allocator_round_size(trace.rows[i].size);
      },
      &c.skipped_frees);
  return c;
}

std::vector<AllocEvent> to_alloc_events(const MeasuredAllocatorTrace& trace) {
  std::vector<AllocEvent> ev;
  std::vector<int> stream_of;  // per tensor: its alloc's stream
  int64_t skipped = 0;
  walk_blocks(
      trace,
      [&](size_t i, int tensor) {
        const MeasuredTraceEntry& r = trace.rows[i];
        ev.push_back(AllocEvent{double(i), tensor, r.size, r.stream, kPoolDevice, double(i)});
        stream_of.push_back(r.stream);
      },
      [&](size_t i, int tensor) {
        ev.push_back(AllocEvent{double(i), tensor, 0, stream_of[size_t(tensor)], kPoolDevice, double(i)});
      },
      &skipped);
  return ev;
}

ReplayResult replay_measured(const MeasuredAllocatorTrace& trace, bool expandable_segments) {
  CachingAllocatorConfig cfg;
  cfg.expandable_segments = expandable_segments;
  try {
    return replay_allocation_trace(to_alloc_events(trace), cfg);
  } catch (const std::length_error& e) {
    // The model's own limits (caching_allocator.h: 2^23 blocks, 2^50 bytes of segments, 2^46
    // per expandable segment), far past any device: the file's sizes are not a GPU run's.
    throw InputError(fmt::format("{}: its blocks do not replay: {} (no device holds that much)", trace.path, e.what()));
  }
}

}  // namespace shardcast::planner
