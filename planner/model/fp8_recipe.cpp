#include "planner/model/fp8_recipe.h"

#include <cassert>

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
Fp8CastKernels fp8_cast_kernels(Fp8Recipe r, double M, double K, double N, int A, bool fuse, bool weight_precast) {
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
  }
  return k;
}

}  // namespace shardcast::planner
