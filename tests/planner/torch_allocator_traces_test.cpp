// The caching allocator model (planner/model/allocator/caching_allocator.h) against torch 2.11's own CUDA
// caching allocator: the traces shardcast-train recorded on one H200 with --allocator-trace
// (docs/gpu-runs/2026-11-27-h200-b/allocator-trace/*.csv.xz: llama3.2-1b at micro-batch 2 and
// 8 and a 25-layer llama3-8b shape at micro-batch 2, full activation checkpointing, six steps
// each, expandable segments off and on), replayed block by block through the model.
//   Fixed segments: the model's peak reserved equals the trace's own (Σ segment_alloc −
//   segment_free) to the byte — the same rules on the same requests, so any difference is a
//   rule the model lacks or gets wrong.
//   Expandable segments: within 0.1 % (measured: 0.04 % on the 1B at micro-batch 8, equal on
//   micro-batch 2): the model maps 2 MiB / 20 MiB pages at a segment's end and never unmaps
//   interior pages (caching_allocator.h), torch maps and unmaps page by page.
//   Allocated: the replay's peak of whole blocks against the run's own max allocated
//   (the header's, torch's statistics): within 0.1 % (blocks rounded the same way; the header
//   is the peak over whole steps read between phases).
// The files are xz-compressed (read through `xz -dc`; xz-utils is part of every Debian).
#include <cstdio>
#include <filesystem>
#include <string>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include "planner/model/allocator/measured_allocator_trace.h"

extern char** environ;

namespace shardcast::planner {
namespace {

const std::filesystem::path kDir =
    std::filesystem::path(SHARDCAST_TEST_SOURCE_DIR) / "docs/gpu-runs/2026-11-27-h200-b/allocator-trace";

// `xz -dc FILE`'s output, run without a shell (the path is an argument, never parsed).
std::string xz_text(const std::filesystem::path& p) {
  int fd[2];
  if (::pipe(fd) != 0) return {};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  std::string xz = "xz", dc = "-dc", file = p.string();
  char* argv[] = {xz.data(), dc.data(), file.data(), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, "xz", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fd[1]);
  std::string out;
  if (spawned == 0) {
    char buf[1 << 16];
    for (ssize_t n; (n = ::read(fd[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  }
  ::close(fd[0]);
  int status = 0;
  EXPECT_TRUE(spawned == 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "xz -dc " << file;
  return out;
}

TEST(TorchAllocatorTraces, ModelReplaysTorchsReservedPeak) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kDir)) {
    if (e.path().extension() != ".xz") continue;
    ++n;
    const MeasuredAllocatorTrace t = parse_measured_allocator_trace(xz_text(e.path()), e.path().string());
    ASSERT_TRUE(t.complete) << e.path();
    ASSERT_GT(t.rows.size(), 10000u) << e.path();
    const MeasuredCurves c = measure_allocator_trace(t);
    EXPECT_EQ(c.oom_rows, 0) << e.path();
    // The trace's own reserved peak is the run's (its statistics, read between phases).
    EXPECT_EQ(c.peak_reserved, t.max_reserved_bytes) << e.path();
    const ReplayResult r = replay_measured(t, t.expandable_segments);
    const double measured = double(c.peak_reserved);
    if (!t.expandable_segments)
      EXPECT_EQ(r.peak_reserved, measured) << e.path();
    else
      EXPECT_NEAR(r.peak_reserved / measured, 1.0, 1e-3) << e.path();
    EXPECT_NEAR(r.peak_allocated / double(t.max_allocated_bytes), 1.0, 1e-3) << e.path();
    std::printf("%s: expandable %d, reserved measured %.3f GiB, model %.3f GiB; allocated %.3f / %.3f GiB\n",
                e.path().filename().c_str(), int(t.expandable_segments), measured / (1 << 30),
                r.peak_reserved / (1 << 30), double(t.max_allocated_bytes) / (1 << 30), r.peak_allocated / (1 << 30));
  }
  EXPECT_EQ(n, 5) << "traces in " << kDir;
}

}  // namespace
}  // namespace shardcast::planner
