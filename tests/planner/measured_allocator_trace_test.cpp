// The measured allocator trace reader and replay (planner/model/allocator/measured_allocator_trace.h), each
// checked against a second way of getting the same number:
//  - a trace written from CachingAllocator's own run (its segment growth as segment_alloc or
//    segment_map rows, recordStream frees as free_requested then a later free_completed)
//    replays to the model's peaks and its rows sum to the model's reserved peak (tolerance 0:
//    the same rules on the same sequence);
//  - the running sums of a hand-written trace equal values computed by hand (tolerance 0);
//  - bad files throw InputError naming the file and the line.
#include "planner/model/allocator/measured_allocator_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/model/allocator/caching_allocator.h"
#include "shared/errors.h"

namespace shardcast::planner {
namespace {

namespace fs = std::filesystem;
constexpr int64_t MiB = 1 << 20;
constexpr uint64_t kBase = 139872312000000;  // a device address as torch prints them

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("shardcast_measured_trace_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

std::string title(int64_t entries, bool complete, bool expandable, int64_t max_res = 0, int64_t max_alloc = 0) {
  return fmt::format(
      "# shardcast allocator trace: torch=2.11.0 device=0 expandable_segments={} entries={} complete={} "
      "max_reserved_bytes={} max_allocated_bytes={}\n",
      expandable ? 1 : 0, entries, complete ? 1 : 0, max_res, max_alloc);
}

// Rows "action,addr,size,stream" (one per string) under a title and the header row.
std::string trace_text(const std::vector<std::string>& rows, bool complete = true) {
  std::string s = title(int64_t(rows.size()), complete, false) + "action,addr,size,stream\n";
  for (const std::string& r : rows) s += r + "\n";
  return s;
}

// CachingAllocator run on a random sequence, written as the trainer would write the real one.
struct ModelRun {
  std::string text;
  int64_t peak_reserved = 0, peak_allocated = 0;  // bytes
  int rows = 0, delayed_frees = 0;
};
ModelRun model_trace(bool expandable, unsigned seed, int steps) {
  CachingAllocatorConfig cfg;
  cfg.expandable_segments = expandable;
  CachingAllocator a(cfg);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  struct Live { int handle; int64_t bytes; int stream; };
  std::vector<Live> live;
  std::vector<std::pair<double, Live>> pending;  // recordStream frees: (ready, block)
  std::string rows;
  ModelRun run;
  auto row = [&](const char* action, uint64_t addr, int64_t size, int stream) {
    rows += fmt::format("{},{},{},{}\n", action, addr, size, stream);
    ++run.rows;
  };
  auto addr = [](int handle) { return kBase + uint64_t(handle) * 4096; };  // unique among live blocks
  uint64_t segment_addr = kBase * 2;
  for (int step = 0; step < steps; ++step) {
    const double t = step;
    if (live.empty() || u(rng) < 0.55) {
      const double k = u(rng);
      const int64_t bytes = k < 0.4 ? 1 + int64_t(u(rng) * double(kSmallSize))
                          : k < 0.8 ? kSmallSize + int64_t(u(rng) * double(9 * MiB))
                                    : 10 * MiB + int64_t(u(rng) * double(54 * MiB));
      const int stream = int(u(rng) * 3);
      // The model returns ready blocks to their pools first, earliest (ready, block) first.
      std::sort(pending.begin(), pending.end(),
                [](const auto& x, const auto& y) { return std::make_pair(x.first, x.second.handle) < std::make_pair(y.first, y.second.handle); });
      size_t done = 0;
      while (done < pending.size() && pending[done].first <= t) {
        const Live& b = pending[done++].second;
        row("free_completed", addr(b.handle), b.bytes, b.stream);
      }
      pending.erase(pending.begin(), pending.begin() + std::ptrdiff_t(done));
      const int64_t before = a.reserved();
      const int h = a.malloc(bytes, stream, t);
      if (a.reserved() > before) {
        row(expandable ? "segment_map" : "segment_alloc", segment_addr, a.reserved() - before, stream);
        segment_addr += uint64_t(a.reserved() - before);
      }
      row("alloc", addr(h), bytes, stream);
      live.push_back({h, bytes, stream});
    } else {
      const size_t i = size_t(u(rng) * double(live.size()));
      const Live b = live[i];
      live.erase(live.begin() + std::ptrdiff_t(i));
      row("free_requested", addr(b.handle), b.bytes, b.stream);
      if (u(rng) < 0.3) {  // another stream used it: back in its pool a few steps later
        const double ready = t + 1 + int(u(rng) * 4);
        a.free_after(b.handle, ready);
        pending.push_back({ready, b});
        ++run.delayed_frees;
      } else {
        a.free(b.handle);
        row("free_completed", addr(b.handle), b.bytes, b.stream);
      }
    }
  }
  run.peak_reserved = a.peak_reserved();
  run.peak_allocated = a.peak_allocated();
  run.text = title(run.rows, true, expandable, run.peak_reserved, run.peak_allocated) +
             "# written by measured_allocator_trace_test from CachingAllocator\naction,addr,size,stream\n" + rows;
  return run;
}


// Expects `f` to throw InputError whose message starts with "PATH:LINE:" and contains `what`.
template <class F>
void expect_input_error(F f, const std::string& path, int line, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "expected InputError at " << path << ":" << line;
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(path + ":" + std::to_string(line) + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

}  // namespace

TEST(MeasuredAllocatorTrace, ModelWrittenTraceReplaysToTheModelsPeaks) {
  // Tolerance 0: the replay applies the same rules to the same sequence, and the rows' segment
  // bytes are the model's reserved growth, so all three agree to the byte.
  for (bool expandable : {false, true}) {
    for (unsigned seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(fmt::format("expandable={} seed={}", expandable, seed));
      const ModelRun run = model_trace(expandable, seed, 600);
      ASSERT_GT(run.delayed_frees, 10);
      const std::string path = write_temp(fmt::format("model_{}_{}.csv", int(expandable), seed), run.text);
      const MeasuredAllocatorTrace t = read_measured_allocator_trace(path);
      EXPECT_EQ(t.path, path);
      EXPECT_EQ(t.torch, "2.11.0");
      EXPECT_EQ(t.expandable_segments, expandable);
      EXPECT_TRUE(t.complete);
      ASSERT_EQ(int64_t(t.rows.size()), run.rows);

      const ReplayResult r = replay_measured(t, expandable);
      EXPECT_EQ(int64_t(r.peak_reserved), run.peak_reserved);
      EXPECT_EQ(int64_t(r.peak_allocated), run.peak_allocated);
      EXPECT_EQ(int64_t(r.peak_reserved), t.max_reserved_bytes);
      EXPECT_FALSE(r.out_of_memory);

      const MeasuredCurves c = measure_allocator_trace(t);
      EXPECT_EQ(c.peak_reserved, run.peak_reserved);
      EXPECT_EQ(c.floor_reserved, 0);
      EXPECT_EQ(c.skipped_frees, 0);
      // Requested ≤ rounded to 512 B ≤ whole blocks (a large block's unsplit remainder).
      EXPECT_LE(c.peak_allocated, c.peak_allocated_rounded);
      EXPECT_LE(c.peak_allocated_rounded, run.peak_allocated);

      // The other setting replays too; reserved never below allocated.
      const ReplayResult other = replay_measured(t, !expandable);
      EXPECT_GE(other.peak_reserved, other.peak_allocated);
      EXPECT_GE(other.peak_allocated, double(c.peak_allocated_rounded));
    }
  }
}

TEST(MeasuredAllocatorTrace, RunningSumsEqualHandComputedValues) {
  const uint64_t A = kBase, B = kBase + 100 * MiB, C = kBase + 200 * MiB;
  const std::string path = write_temp("sums.csv", trace_text({
      fmt::format("segment_alloc,{},{},0", A, 20 * MiB),        // reserved 20 MiB
      fmt::format("alloc,{},3000000,0", A),                      // allocated 3000000 (rounded 3000320)
      fmt::format("alloc,{},5000000,0", A + 3000320),            // 8000000 (rounded 8000512)
      fmt::format("free_requested,{},3000000,0", A),
      fmt::format("free_completed,{},3000000,0", A),             // 5000000
      fmt::format("segment_alloc,{},{},1", B, 2 * MiB),          // reserved 22 MiB
      fmt::format("alloc,{},1000,1", B),                         // 5001000
      fmt::format("free_requested,{},1000,1", B),
      fmt::format("free_completed,{},1000,1", B),
      fmt::format("segment_free,{},{},1", B, 2 * MiB),           // reserved 20 MiB
      fmt::format("segment_map,{},{},0", C, 40 * MiB),           // reserved 60 MiB
      fmt::format("segment_unmap,{},{},0", C, 20 * MiB),         // reserved 40 MiB
      "oom,123456,4096,0",
      "snapshot,0,0,0",
  }));
  const MeasuredCurves c = measure_allocator_trace(read_measured_allocator_trace(path));
  EXPECT_EQ(c.peak_reserved, 60 * MiB);
  EXPECT_EQ(c.floor_reserved, 0);
  EXPECT_EQ(c.peak_allocated, 8000000);
  EXPECT_EQ(c.peak_allocated_rounded, 3000320 + 5000192);
  EXPECT_EQ(c.oom_rows, 1);
  ASSERT_EQ(c.reserved_curve.size(), 5u);
  const std::vector<std::pair<int64_t, int64_t>> want = {
      {0, 20 * MiB}, {5, 22 * MiB}, {9, 20 * MiB}, {10, 60 * MiB}, {11, 40 * MiB}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(c.reserved_curve[i].row, want[i].first);
    EXPECT_EQ(c.reserved_curve[i].reserved, want[i].second);
  }
}

TEST(MeasuredAllocatorTrace, FixedAndExpandableSegmentsReplayAsComputedByHand) {
  // 30 MiB, freed, then 40 MiB. Fixed segments: a 30 MiB segment stays cached and a 40 MiB
  // one is added (70 MiB). Expandable: 40 MiB mapped for the first (20 MiB pages), which the
  // second then takes whole (40 MiB). Allocated: 40 MiB either way.
  const std::string path = write_temp("two_settings.csv", trace_text({
      fmt::format("alloc,{},{},0", kBase, 30 * MiB),
      fmt::format("free_requested,{},{},0", kBase, 30 * MiB),
      fmt::format("free_completed,{},{},0", kBase, 30 * MiB),
      fmt::format("alloc,{},{},0", kBase, 40 * MiB),
  }));
  const MeasuredAllocatorTrace t = read_measured_allocator_trace(path);
  const ReplayResult fixed = replay_measured(t, false), expandable = replay_measured(t, true);
  EXPECT_EQ(fixed.peak_reserved, double(70 * MiB));
  EXPECT_EQ(expandable.peak_reserved, double(40 * MiB));
  EXPECT_EQ(fixed.peak_allocated, double(40 * MiB));
  EXPECT_EQ(expandable.peak_allocated, double(40 * MiB));
}

TEST(MeasuredAllocatorTrace, EventsFollowFreeCompletedAndTheLatestBlockAtAnAddress) {
  // Block X on stream 0 is used by stream 1 (recordStream): free_requested at row 2, back in its
  // pool at row 4. The address is then handed out again (a new tensor at the same address).
  const uint64_t X = kBase, Y = kBase + 4096;
  const MeasuredAllocatorTrace t = parse_measured_allocator_trace(trace_text({
      fmt::format("alloc,{},700,0", X),            // row 0: tensor 0
      fmt::format("alloc,{},900,1", Y),            // row 1: tensor 1
      fmt::format("free_requested,{},700,0", X),   // row 2: not an event
      "snapshot,0,0,0",                            // row 3
      fmt::format("free_completed,{},700,0", X),   // row 4: free tensor 0
      fmt::format("alloc,{},800,0", X),            // row 5: tensor 2
      fmt::format("free_completed,{},800,0", X),   // row 6: free tensor 2
  }), "events");
  const std::vector<AllocEvent> ev = to_alloc_events(t);
  ASSERT_EQ(ev.size(), 5u);
  const double want_t[] = {0, 1, 4, 5, 6};
  const int want_tensor[] = {0, 1, 0, 2, 2};
  const int64_t want_bytes[] = {700, 900, 0, 800, 0};
  const int want_stream[] = {0, 1, 0, 0, 0};
  for (size_t i = 0; i < ev.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(ev[i].t, want_t[i]);
    EXPECT_EQ(ev[i].ready, ev[i].t);  // freed at once
    EXPECT_EQ(ev[i].tensor, want_tensor[i]);
    EXPECT_EQ(ev[i].bytes, want_bytes[i]);
    EXPECT_EQ(ev[i].stream, want_stream[i]);
  }
}

TEST(MeasuredAllocatorTrace, IncompleteTraceSkipsFreesOfLostBlocksOnly) {
  const std::vector<std::string> rows = {
      fmt::format("free_requested,{},5000,0", kBase),   // line 3: its alloc was lost
      fmt::format("free_completed,{},5000,0", kBase),   // line 4
      fmt::format("segment_free,{},{},0", kBase, 2 * MiB),  // line 5: reserved dips to −2 MiB
      fmt::format("alloc,{},5000,0", kBase),            // line 6
      fmt::format("free_completed,{},5000,0", kBase),   // line 7
  };
  const MeasuredAllocatorTrace lost = parse_measured_allocator_trace(trace_text(rows, false), "lost");
  EXPECT_FALSE(lost.complete);
  const MeasuredCurves c = measure_allocator_trace(lost);
  EXPECT_EQ(c.skipped_frees, 1);
  EXPECT_EQ(c.peak_allocated, 5000);
  EXPECT_EQ(c.floor_reserved, -2 * MiB);
  EXPECT_EQ(to_alloc_events(lost).size(), 2u);
  // The same rows in a complete trace: the first free is an error.
  const MeasuredAllocatorTrace whole = parse_measured_allocator_trace(trace_text(rows, true), "whole");
  expect_input_error([&] { to_alloc_events(whole); }, "whole", 3, "free_requested of address");
  // A second free of a block the kept rows allocated is an error even with complete=0.
  std::vector<std::string> twice = rows;
  twice.push_back(fmt::format("free_completed,{},5000,0", kBase));  // line 8
  const MeasuredAllocatorTrace t2 = parse_measured_allocator_trace(trace_text(twice, false), "twice");
  expect_input_error([&] { measure_allocator_trace(t2); }, "twice", 8, "already free_completed at line 7");
}

TEST(MeasuredAllocatorTrace, BadFilesNameTheFileAndTheLine) {
  const std::string ok_row = fmt::format("alloc,{},1024,0", kBase);
  struct Case { const char* name; std::string text; int line; std::string what; };
  const std::vector<Case> cases = {
      {"unknown_action.csv", trace_text({ok_row, "allocate,1,2,0"}), 4, "unknown action 'allocate' (allowed: alloc,"},
      {"bad_size.csv", trace_text({"alloc,1,12kB,0"}), 3, "size '12kB' is not allowed"},
      {"negative_size.csv", trace_text({"alloc,1,-5,0"}), 3, "size '-5' is not allowed"},
      {"bad_addr.csv", trace_text({"alloc,0x10,512,0"}), 3, "addr '0x10' is not allowed"},
      {"bad_stream.csv", trace_text({"alloc,1,512,s1"}), 3, "stream 's1' is not allowed"},
      {"fields.csv", trace_text({"alloc,1,512"}), 3, "has 3 fields"},
      {"missing_header.csv", "action,addr,size,stream\n" + ok_row + "\n", 1, "missing header line"},
      {"empty.csv", "", 1, "empty file"},
      {"unknown_key.csv",
       "# shardcast allocator trace: torch=2.11.0 device=0 expandable_segments=0 entries=0 complete=1 "
       "max_reserved_bytes=0 max_allocated_bytes=0 colour=blue\naction,addr,size,stream\n",
       1, "unknown key 'colour'"},
      {"missing_key.csv",
       "# shardcast allocator trace: torch=2.11.0 device=0 entries=0 complete=1 max_reserved_bytes=0 "
       "max_allocated_bytes=0\naction,addr,size,stream\n",
       1, "lacks expandable_segments="},
      {"bad_flag.csv",
       "# shardcast allocator trace: torch=2.11.0 device=0 expandable_segments=yes entries=0 complete=1 "
       "max_reserved_bytes=0 max_allocated_bytes=0\naction,addr,size,stream\n",
       1, "expandable_segments='yes' is not allowed (0 | 1)"},
      {"header_row.csv", title(0, true, false) + "# a comment\naction,address,size,stream\n", 3, "header row"},
      {"no_header_row.csv", title(0, true, false) + "# only comments\n", 2, "missing header row"},
      {"short.csv", title(3, true, false) + "action,addr,size,stream\n" + ok_row + "\n", 3,
       "entries=3 but the file has 1 rows"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const std::string path = write_temp(k.name, k.text);
    expect_input_error([&] { read_measured_allocator_trace(path); }, path, k.line, k.what);
  }
  // Block errors: the file reads, the walk over its rows names the line.
  struct BlockCase { const char* name; std::vector<std::string> rows; int line; std::string what; };
  const std::vector<BlockCase> block_cases = {
      {"free_unknown.csv", {ok_row, fmt::format("free_completed,{},1024,0", kBase + 512)}, 4,
       "free_completed of address " + std::to_string(kBase + 512) + ", which no alloc row gave out"},
      {"alloc_live.csv", {ok_row, ok_row}, 4, "whose block from line 3 is still live"},
      {"free_size.csv", {ok_row, fmt::format("free_completed,{},2048,0", kBase)}, 4,
       "allocated with 1024 bytes at line 3"},
  };
  for (const BlockCase& k : block_cases) {
    SCOPED_TRACE(k.name);
    const std::string path = write_temp(k.name, trace_text(k.rows));
    const MeasuredAllocatorTrace t = read_measured_allocator_trace(path);
    expect_input_error([&] { to_alloc_events(t); }, path, k.line, k.what);
    expect_input_error([&] { measure_allocator_trace(t); }, path, k.line, k.what);
    expect_input_error([&] { replay_measured(t, false); }, path, k.line, k.what);
  }
  // A file that cannot be opened: ConfigError naming it (read_text's rule, exit 2).
  EXPECT_THROW(read_measured_allocator_trace("/nonexistent/trace.csv"), ConfigError);
}

}  // namespace shardcast::planner
