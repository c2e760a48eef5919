// Micro-benchmarks of this machine for `shardcast calibrate --hardware-out`: what one trainer
// rank can do, measured the way the trainer does it.
//
// What it is: run_microbench() times (1) fp32 matmuls over GEMM shapes (FLOP/s per shape,
// one intra-op thread per rank as the launcher sets OMP_NUM_THREADS), (2) memory bandwidth
// (a large tensor copy, read + write bytes), (3) the trainer's own Gloo collectives
// (trainer/comm: all_gather composed from list allgather, all_reduce; reduce_scatter is an
// all_reduce of the full buffer there) on loopback with 2 and 4 ranks, ranks as threads over
// a HashStore, over message sizes. It reports raw points only: the planner's calibration
// fits t = latency + bytes/bandwidth to them (planner/evidence/calibrate.h); the JSON
// (`shardcast-train microbench --json`) is its input, since the planner never links LibTorch.
// What it is not: a performance test (no thresholds) and not the planner's mapping of these
// numbers to a hardware profile (planner/evidence/calibrate.h). Call from the main thread; it spawns
// and joins its own rank threads.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardcast::trainer {

struct MicrobenchOptions {
  std::vector<int> ranks = {2, 4};
  double min_seconds = 0.05;   // per measured point, repeat until at least this long  // s
  bool quick = false;          // fewer shapes and sizes (tests)
  // Interleaved rounds over all GEMM shapes and the copy, best kept per point: this VM's
  // vCPUs alternate between fast and slow phases lasting seconds (docs/validation-cpu.md).
  int rounds = 3;
};

struct MatmulPoint {
  int64_t m = 0, k = 0, n = 0;   // (m, k) x (k, n)
  double flops_per_s = 0;        // FLOP/s, best of repeats
};
struct CollectivePoint {
  std::string op;                // "all_gather" | "all_reduce" | "reduce_scatter"
  int ranks = 0;
  double bytes = 0;              // total size as nccl-tests defines it (gathered / buffer)  // bytes
  double seconds = 0;            // median over repeats  // s
};

struct MicrobenchResult {
  int threads_per_rank = 1;
  std::vector<MatmulPoint> matmul;
  double memory_bytes_per_s = 0;       // copy: read + write bytes / time  // bytes/s
  std::vector<CollectivePoint> collectives;
};

MicrobenchResult run_microbench(const MicrobenchOptions& opts);
void to_json(nlohmann::json& j, const MicrobenchResult& r);

}  // namespace shardcast::trainer
