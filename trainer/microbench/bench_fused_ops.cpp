// bench_fused_ops: one block's forward + backward of the CPU trainer on its fused RMSNorm and
// rotary (model/fused_ops.h) or on the reference ops (BlockOps::reference), one intra-op thread,
// for paired whole-process timing (`farm-bench --vs`, docs/trainer.md "Fused RMSNorm and
// rotary"). Prints the mean time per iteration of the chosen path; no thresholds.
//   bench_fused_ops fused|reference [MODEL=small-6l] [MICRO_BATCH=4] [SEQ_LEN=256] [ITERS=20]
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

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "fused" && mode != "reference") {
    std::fprintf(stderr, "usage: bench_fused_ops fused|reference [MODEL] [MICRO_BATCH] [SEQ_LEN] [ITERS]\n");
    return 2;
  }
  const std::string model = argc > 2 ? argv[2] : "small-6l";
  const int B = argc > 3 ? std::atoi(argv[3]) : 4, T = argc > 4 ? std::atoi(argv[4]) : 256;
  const int iters = argc > 5 ? std::atoi(argv[5]) : 20;
  if (B < 1 || T < 1 || iters < 1) {
    std::fprintf(stderr, "bench_fused_ops: MICRO_BATCH, SEQ_LEN and ITERS must be positive integers\n");
    return 2;
  }
  const ModelSpec m = load_model(model);
  at::set_num_threads(1);
  const BlockOps ops = mode == "fused" ? BlockOps::fused : BlockOps::reference;
  std::vector<at::Tensor> w;
  const auto infos = unit_param_infos(m);
  for (const auto& p : infos[1]) w.push_back(init_param(p, 1).requires_grad_(true));
  const Rope rope = make_rope(m, T);
  const at::Tensor x = at::randn({B, T, m.d_model}).requires_grad_(true), g = at::randn({B, T, m.d_model});
  block_forward(m, rope, x, w, nullptr, ops).backward(g);  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) block_forward(m, rope, x, w, nullptr, ops).backward(g);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  fmt::print("{} block ({}), micro_batch {}, seq_len {}: {:.3f} ms per forward + backward\n", model, mode, B, T,
             s * 1e3);
  return 0;
}
