// bench_block_memory: what one FSDP unit of the CPU trainer keeps for backward and how high
// its live tensor bytes go, counted by the trainer's counting allocator (trainer/train/memory.h),
// per token, for the planner's CPU memory terms (planner/model/plan.h attention_materialized,
// docs/validation.md "CPU runs"). Prints a table; no thresholds.
//   bench_block_memory [MODEL=tiny-2l] [MICRO_BATCH=8] [SEQ_LEN=128] [OPS=fused|reference]
// OPS: the trainer's fused RMSNorm, rotary and SwiGLU (model/fused_ops.h), or the reference ops
// they replaced (the eager block of runtime shardcast-train-2026-11).
#include <cstdio>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard (not reached through ATen.h in LibTorch 2.x)
#include <fmt/format.h>

#include "shared/causal_blocks.h"
#include "shared/config_io.h"
#include "trainer/model/llama.h"
#include "trainer/train/memory.h"

using namespace shardcast;
using namespace shardcast::trainer;

int main(int argc, char** argv) try {
  memory::install_counting_allocator();
  const std::string model = argc > 1 ? argv[1] : "tiny-2l";
  const int B = argc > 2 ? std::atoi(argv[2]) : 8, T = argc > 3 ? std::atoi(argv[3]) : 128;
  const std::string ops_name = argc > 4 ? argv[4] : "fused";
  if (ops_name != "fused" && ops_name != "reference") {
    std::fprintf(stderr, "bench_block_memory: OPS must be fused or reference, got '%s'\n", ops_name.c_str());
    return 2;
  }
  const BlockOps ops = ops_name == "fused" ? BlockOps::fused : BlockOps::reference;
  if (B < 1 || T < 1) {
    std::fprintf(stderr, "bench_block_memory: MICRO_BATCH and SEQ_LEN must be positive integers\n");
    return 2;
  }
  const ModelSpec m = load_model(model);
  at::set_num_threads(1);
  const double tokens = double(B) * T;
  auto infos = unit_param_infos(m);
  std::vector<at::Tensor> w;
  for (const auto& p : infos[1]) w.push_back(init_param(p, 1).requires_grad_(true));
  Rope rope = make_rope(m, T);
  at::Tensor x = at::randn({B, T, m.d_model}).requires_grad_(true);
  const int64_t base = memory::live_bytes();
  memory::reset_peak();
  at::Tensor y = block_forward(m, rope, x, w, nullptr, ops);
  const int64_t fwd_peak = memory::peak_bytes() - base;
  const int64_t kept = memory::live_bytes() - base;  // includes the output y
  memory::reset_peak();
  const int64_t before_bwd = memory::live_bytes();
  y.backward(at::ones_like(y));
  const int64_t bwd_peak = memory::peak_bytes() - before_bwd;
  // A checkpointed block's forward runs without grad: nothing is kept, only transients.
  int64_t nograd_peak = 0;
  {
    at::NoGradGuard no_grad;
    const int64_t b0 = memory::live_bytes();
    memory::reset_peak();
    at::Tensor z = block_forward(m, rope, x, w, nullptr, ops);
    nograd_peak = memory::peak_bytes() - b0 - int64_t(z.numel()) * 4;
  }
  const double out = tokens * m.d_model * 4;
  fmt::print("{} block ({} ops), micro_batch {}, seq_len {} ({} tokens), fp32; per token bytes and in units of 4·d_model:\n",
             model, ops_name, B, T, tokens);
  auto row = [&](const char* what, double bytes) {
    fmt::print("  {:<44} {:>12.0f} B/token {:>8.2f} x 4d   ({:.2f} MiB)\n", what, bytes / tokens,
               bytes / tokens / (4.0 * m.d_model), bytes / 1048576.0);
  };
  row("kept for backward (without the output)", kept - out);
  row("forward peak above the input", fwd_peak);
  row("forward transient (peak - kept - output)", fwd_peak - kept);
  row("backward peak above the kept state", bwd_peak);
  row("no-grad forward (checkpointed) peak - output", nograd_peak);
  row("one (b, heads, s, s) fp32 tensor", double(B) * m.n_heads * T * T * 4);
  row("the causal blocks' fp32 scores", double(B) * m.n_heads * causal_block_score_elements(T) * 4);
  // Head + loss.
  std::vector<at::Tensor> hw;
  for (const auto& p : infos.back()) hw.push_back(init_param(p, 1).requires_grad_(true));
  if (m.tied_embeddings) hw.push_back(init_param(infos[0][0], 1).requires_grad_(true));  // head = embedding
  at::Tensor h = at::randn({B, T, m.d_model}).requires_grad_(true);
  at::Tensor targets = at::randint(0, m.vocab, {B, T}, at::kLong);
  const int64_t hb = memory::live_bytes();
  memory::reset_peak();
  // (The logits go straight into the loss: a named tensor would keep them alive and count them.)
  at::Tensor loss = lm_loss(ops == BlockOps::fused ? head_forward(m, h, hw[0], hw[1])
                                                   : at::linear(rms_norm(h, hw[0], m.norm_eps), hw[1]),
                            targets);
  const int64_t head_peak = memory::peak_bytes() - hb, head_kept = memory::live_bytes() - hb;
  memory::reset_peak();
  const int64_t hbb = memory::live_bytes();
  loss.backward();
  const int64_t head_bwd = memory::peak_bytes() - hbb;
  const double logits = tokens * double(m.vocab) * 4;
  fmt::print("head + loss (vocab {}; one fp32 logits tensor = {:.2f} MiB):\n", m.vocab, logits / 1048576.0);
  auto lrow = [&](const char* what, double bytes) {
    fmt::print("  {:<44} {:>8.2f} x logits   ({:.2f} MiB)\n", what, bytes / logits, bytes / 1048576.0);
  };
  lrow("kept for backward", head_kept);
  lrow("forward peak", head_peak);
  lrow("backward peak above the kept state", head_bwd);
  return 0;
}
catch (const std::exception& e) {
  std::fprintf(stderr, "bench_block_memory: %s\n", e.what());
  return 2;
}
