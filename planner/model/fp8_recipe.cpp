#include "planner/model/fp8_recipe.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace shardcast::planner {

// Which GEMM runs how (torchao/float8/config.py Float8LinearConfig.from_recipe_name and
// float8_ops.py addmm_float8_unwrapped, pytorch/ao@36027d82d):
// - tensorwise: the three GEMMs in fp8 on cuBLAS (torch._scaled_mm with scalar scales).
// - rowwise: forward with fast accumulation (gemm_config_output use_fast_accum=True) on the
//   CUTLASS row-wise kernel; grad_input and grad_weight without fast accumulation, which
//   addmm_float8_unwrapped runs on the cuBLAS tensor-wise kernel followed by
//   `output *= post_inverse_scale` (read and write the output in the compute dtype).
// - rowwise_with_gw_hp: forward as rowwise; grad_input = grad_output (row-wise) · weight
//   (tensor-wise, cast_config_weight_for_grad_input) — scales of different shapes, so not the
//   row-wise pair: the tensor-wise kernel with the row scale applied after it, as rowwise;
//   grad_weight in the compute dtype (ScalingType.DISABLED).
// Under torch.compile the rescale of grad_input fuses into the op after it (its consumer
// reads the output anyway); grad_weight's output goes to the reduce-scatter, so it stays a pass.
Fp8GemmRun fp8_gemm_run(Fp8Recipe r, LinearGemm g, int act_bytes, bool compile) {
  Fp8GemmRun run;
  const double rescale = 2.0 * act_bytes;  // read + write the output
  switch (r) {
    case Fp8Recipe::none:
      return run;
    case Fp8Recipe::tensorwise:
      run.fp8 = true;
      return run;
    case Fp8Recipe::rowwise:
    case Fp8Recipe::rowwise_with_gw_hp:
      if (g == LinearGemm::grad_weight && r == Fp8Recipe::rowwise_with_gw_hp) return run;  // bf16
      run.fp8 = true;
      if (g == LinearGemm::forward) run.rate = kRowwiseGemmRate;
      else if (g == LinearGemm::grad_input) run.rescale_bytes_per_output = compile ? 0.0 : rescale;
      else run.rescale_bytes_per_output = rescale;
      return run;
    // mxfp8: torchao torchao/prototype/moe_training/mxfp8_linear.py @36027d82d mx_mm (what
    // torchtitan's MXFP8LinearConverter swaps in, wgrad_with_hp False): forward, grad_input and
    // grad_weight each torch.mm of two MXTensors, the scales applied inside the GEMM (no pass after).
    case Fp8Recipe::mxfp8:
      run.fp8 = true;
      run.rate = kMxfp8GemmRate;
      return run;
    // nvfp4: torchao torchao/prototype/moe_training/nvfp4_training/nvfp4_linear.py @36027d82d
    // nvfp4_mm_triton: the three GEMMs are F.scaled_mm of fp4 operands with block and tensor-wise
    // scales, output bf16, at the fp4 peak (fp8_formats.h fp4_over_fp8_peak).
    case Fp8Recipe::nvfp4:
      run.fp8 = true;
      return run;
  }
  assert(false);
  return run;
}

// Bytes of each scaling / cast kernel, per tensor role, as torchao's roofline counts them
// (torchao/testing/training/roofline_utils.py get_tensor_memory_traffic_ovhd_s and
// get_float8_mem_sympy, pytorch/ao@36027d82d), with A = bytes of the compute dtype and 1 byte
// per fp8 element; `fuse` drops the first read of x and grad_output (compile fuses it into the
// op before; the weight's is never fused). Split into forward and backward by when
// float8_linear.py runs the cast (input and weight dim0 in forward; grad_output and the dim1
// casts in backward):
//   tensorwise   x  (M·K):  amax (A, 0 fused) + amax stage 2 (~0) + cast to both layouts (A + 2)   fwd
//                W  (K·N):  amax A + stage 2 + cast dim0 (A + 1) fwd; cast dim1 (A + 1) bwd
//                go (M·N):  amax (A, 0 fused) + stage 2 + cast to both layouts (A + 2)            bwd
//   rowwise      x:  dim0 cast + bf16 transpose (A or 0, + 1 + A) fwd; dim1 cast (A + 1) bwd
//                W:  dim0 cast (A + 1) fwd; transpose (2A) + dim1 cast (A + 1) bwd
//                go: as x, all bwd
//   rowwise_with_gw_hp  x: dim0 cast (A or 0, + 1) fwd; W: dim0 cast (A + 1) fwd, scale (~0) and
//                tensor-wise dim1 cast (A + 1) bwd; go: dim0 cast (A or 0, + 1) bwd
// A kernel of ~0 bytes still costs its launch (kFp8CastKernelFloorS), as in torchao's roofline.
bool parse_mxfp8_casts(const std::string& s, Mxfp8Casts& out) {
  if (s == "compile_triton") out = Mxfp8Casts::compile_triton;
  else if (s == "triton_cuda") out = Mxfp8Casts::triton_cuda;
  else return false;
  return true;
}

Fp8CastKernels fp8_cast_kernels(Fp8Recipe r, double M, double K, double N, int A, bool fuse, bool weight_precast,
                                Mxfp8Casts mx) {
  Fp8CastKernels k;
  const double x = M * K, w = K * N, go = M * N;
  const double first_read = fuse ? 0.0 : double(A);
  switch (r) {
    case Fp8Recipe::none:
      break;
    case Fp8Recipe::tensorwise:
      k.fwd = {first_read * x, 0.0, (A + 2.0) * x};
      if (!weight_precast) {
        k.fwd.insert(k.fwd.end(), {A * w, 0.0, (A + 1.0) * w});
        k.bwd.push_back((A + 1.0) * w);
      }
      k.bwd.insert(k.bwd.end(), {first_read * go, 0.0, (A + 2.0) * go});
      break;
    case Fp8Recipe::rowwise:
      k.fwd = {(first_read + 1.0 + A) * x, (A + 1.0) * w};
      k.bwd = {(A + 1.0) * x, 2.0 * A * w, (A + 1.0) * w, (first_read + 1.0 + A) * go, (A + 1.0) * go};
      break;
    case Fp8Recipe::rowwise_with_gw_hp:
      k.fwd = {(first_read + 1.0) * x, (A + 1.0) * w};
      k.bwd = {0.0, (A + 1.0) * w, (first_read + 1.0) * go};
      break;
    // mxfp8 (mxfp8_linear.py mx_mm): forward casts x and W along dim0; backward casts grad_output
    // along dim0, and W, grad_output and x along dim1 (the kernels of `mx`: Mxfp8Casts). Each
    // reads A and writes 1 byte per element, torchao's roofline count for mxfp8_cublas_rceil
    // (roofline_utils.py get_tensor_memory_traffic_ovhd_s, e8m0 scales not counted). The casts are
    // custom kernels (or a compiled region of their own): compile fuses none of them.
    case Fp8Recipe::mxfp8: {
      // At the published share of the HBM rate of each cast (mxfp8_cast_bytes_scale).
      const double c0 = (A + 1.0) * mxfp8_cast_bytes_scale(mx, false), c1 = (A + 1.0) * mxfp8_cast_bytes_scale(mx, true);
      k.fwd = {c0 * x, c0 * w};
      k.bwd = {c0 * go, c1 * w, c1 * go, c1 * x};
      break;
    }
    // nvfp4 (nvfp4_linear.py nvfp4_mm_triton): per tensor an amax kernel (x, grad_output: the
    // Hadamard-rotated amax, triton_rht_amax; W: triton_group_weight_amax) reading A per element,
    // then one kernel reading A and writing both layouts at 0.5 byte plus an fp8 scale per 16
    // elements: A + 2·(0.5 + 1/16). x and W in forward (their column-wise codes saved for
    // backward), grad_output in backward.
    case Fp8Recipe::nvfp4: {
      const double q = A + 2.0 * (0.5 + 1.0 / 16.0);
      k.fwd = {double(A) * x, q * x, double(A) * w, q * w};
      k.bwd = {double(A) * go, q * go};
      break;
    }
  }
  return k;
}

double nvfp4_block_fraction(int n_layers) {
  if (n_layers <= 0) return 0.0;
  const double bf16 = std::ceil(n_layers * kNvfp4Bf16TailFraction);
  return std::max(0.0, n_layers - bf16) / n_layers;
}

}  // namespace shardcast::planner
