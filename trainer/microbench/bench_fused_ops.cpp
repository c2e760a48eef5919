// bench_fused_ops: one block's forward + backward of the CPU trainer on its fused RMSNorm,
// rotary and SwiGLU (model/fused_ops.h) or on the reference ops (BlockOps::reference), one
// intra-op thread. With a path named: that path's mean time per iteration, for paired
// whole-process timing (docs/trainer.md "Fused RMSNorm, rotary and SwiGLU"). Without arguments (as `make bench` runs it):
// both paths in turn, three rounds, with their ratio. No thresholds.
//   bench_fused_ops [fused|reference [MODEL=small-6l] [MICRO_BATCH=4] [SEQ_LEN=256] [ITERS=20]]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include "shared/config_io.h"
#include "trainer/model/llama.h"

using namespace shardcast;
using namespace shardcast::trainer;

namespace {

// Mean seconds of one forward + backward of the block on `ops`, over `iters` after a warm-up.
double time_block(const ModelSpec& m, int B, int T, int iters, BlockOps ops) {
  std::vector<at::Tensor> w;
  const auto infos = unit_param_infos(m);
  for (const auto& p : infos[1]) w.push_back(init_param(p, 1).requires_grad_(true));
  const Rope rope = make_rope(m, T);
  const at::Tensor x = at::randn({B, T, m.d_model}).requires_grad_(true), g = at::randn({B, T, m.d_model});
  block_forward(m, rope, x, w, nullptr, ops).backward(g);  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) block_forward(m, rope, x, w, nullptr, ops).backward(g);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

// No mode given: both paths in turn, three rounds, and their ratio per round (a table).
int paired_table(const ModelSpec& m, const std::string& model, int B, int T, int iters) {
  fmt::print("{} block, micro_batch {}, seq_len {}, {} iterations a round, one thread (ms per forward + backward)\n",
             model, B, T, iters);
  fmt::print("{:>6} {:>12} {:>12} {:>18}\n", "round", "reference", "fused", "fused / reference");
  for (int r = 1; r <= 3; ++r) {
    const double ref = time_block(m, B, T, iters, BlockOps::reference);
    const double fused = time_block(m, B, T, iters, BlockOps::fused);
    fmt::print("{:>6} {:>12.3f} {:>12.3f} {:>18.3f}\n", r, ref * 1e3, fused * 1e3, fused / ref);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!mode.empty() && mode != "fused" && mode != "reference") {
    std::fprintf(stderr, "usage: bench_fused_ops [fused|reference [MODEL] [MICRO_BATCH] [SEQ_LEN] [ITERS]]\n");
    return 2;
  }
  const std::string model = argc > 2 ? argv[2] : "small-6l";
  const int B = argc > 3 ? std::atoi(argv[3]) : 4, T = argc > 4 ? std::atoi(argv[4]) : 256;
  const int iters = argc > 5 ? std::atoi(argv[5]) : (mode.empty() ? 5 : 20);
  if (B < 1 || T < 1 || iters < 1) {
    std::fprintf(stderr, "bench_fused_ops: MICRO_BATCH, SEQ_LEN and ITERS must be positive integers\n");
    return 2;
  }
  const ModelSpec m = load_model(model);
  at::set_num_threads(1);
  if (mode.empty()) return paired_table(m, model, B, T, iters);
  const double s = time_block(m, B, T, iters, mode == "fused" ? BlockOps::fused : BlockOps::reference);
  fmt::print("{} block ({}), micro_batch {}, seq_len {}: {:.3f} ms per forward + backward\n", model, mode, B, T,
             s * 1e3);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_fused_ops: %s\n", e.what());
  return 2;
}
