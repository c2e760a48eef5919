// `shardcast-train microbench --gpu`: measured kernel ceilings of the current CUDA device.
//
// What it is: run_gpu_kernel_bench() times every case of kernel_cases() (kernel_table.h) on
// cuda:0 in bf16 through LibTorch — at::mm_out for the GEMMs, at::scaled_dot_product_attention
// (is_causal; k and v expanded to every query head, as the trainer calls it) forward and
// forward + backward (the backward's time is the difference of the two medians), the
// trainer's own rms_norm, SwiGLU product (at::silu(gate) * up, as block_forward) and lm_loss
// (trainer/model/llama.h) forward and backward the same way, a device-to-device copy, and an optimizer step (clip_grad_norm_'s norm and scale, then
// at::_fused_adamw_; LibTorch >= 2.1) — with CUDA events on the current stream: warm-up calls
// first, then `samples` timed batches of calls, each batch long enough to dwarf the event
// resolution, the median of the per-call times kept. Inputs are random (never zeros), and
// GEMMs and memory-bound cases rotate over enough input sets to exceed twice the L2 cache
// (GEMMs with warm_gemm_inputs reuse one set, the other reading of a step, whose GEMMs often
// find the operand the op before wrote in L2: tests/gpu/gemm_shapes_vs_table.py compares both
// with a step's GEMMs by shape).
// gpu_kernel_header() reads the GPU name, driver, torch and CUDA versions for the CSV.
// What it is not: the CPU micro-benchmark (microbench.h) nor the planner's use of the table.
// Only built with a CUDA LibTorch (SHARDCAST_WITH_NCCL); gpu_kernels_available() is false
// elsewhere and run_gpu_kernel_bench() then throws. SDPA rows need LibTorch >= 2.0 and are
// left out (said on stderr) below it. Call from the main thread.
#pragma once

#include <string>
#include <vector>

#include "trainer/microbench/kernel_table.h"

namespace shardcast::trainer {

struct GpuKernelOptions {
  int warmup = 3;          // untimed calls before the first sample
  int samples = 15;        // timed batches; the median per-call time is kept
  double min_batch_s = 2e-3;   // each timed batch runs at least this long  // s
  bool warm_gemm_inputs = false;  // GEMMs reuse one input set instead of rotating past the L2
};

// True when this binary was built against a CUDA LibTorch. (A device may still be absent.)
bool gpu_kernels_built();

// Times every row in place (rows[i].seconds). Throws std::runtime_error naming the reason
// when this build has no CUDA or no device is visible. Progress lines go to stderr.
void run_gpu_kernel_bench(std::vector<KernelRow>& rows, const GpuKernelOptions& o);

// gpu, driver, torch, cuda of the current device and build; date (UTC, YYYY-MM-DD) now.
KernelTableHeader gpu_kernel_header(const std::string& command);

}  // namespace shardcast::trainer
