// The cost of a float8 training recipe (precision.fp8) on one Linear layer.
//
// What it is: for torchao's recipes (torchao/float8/config.py Float8LinearRecipeName at
// pytorch/ao@36027d82d), which of a Linear's three GEMMs run in fp8, the rate of the recipe's
// fp8 GEMM kernel relative to cuBLAS's tensor-wise one, the extra scaling pass some GEMMs need
// after them, and the scaling (amax) and cast kernels as bytes moved and kernels launched
// (memory-bound; torchao's own roofline, torchao/testing/training/roofline_utils.py
// get_tensor_memory_traffic_ovhd_s). docs/cost-model.md §fp8 lists every number with its
// source. What it is not: the GEMM rate model (ops.h gemm_time owns it; this file asks it for
// each GEMM's time) or memory (fp8 all-gather is plan.cpp's).
// Pure functions, thread-safe.
//
// A Linear y = x·Wᵀ with x of M×K (tokens × in features) and W of N×K runs three GEMMs:
//   forward      (M×K)·(K×N) → M×N
//   grad_input   (M×N)·(N×K) → M×K
//   grad_weight  (K×M)·(M×N) → K×N
#pragma once

#include <string>
#include <vector>

#include "shared/train_config.h"

namespace shardcast::planner {

enum class LinearGemm { forward, grad_input, grad_weight };

// How one of the three GEMMs runs under a recipe.
struct Fp8GemmRun {
  // In fp8, or fp4 for nvfp4 (false: in the compute dtype, at its rate). nvfp4's GEMMs run at
  // the fp4 peak, which plan.cpp sets as ComputeContext::fp8_peak_flops (fp8_formats.h).
  bool fp8 = false;
  double rate = 1.0;   // rate / the cuBLAS tensor-wise rate of the same precision and shape, in (0, 1]
  // An elementwise pass over the GEMM's output after it (rowwise backward: cuBLAS tensor-wise
  // GEMM, then output *= row scale · column scale), bytes per output element.
  double rescale_bytes_per_output = 0;
};
Fp8GemmRun fp8_gemm_run(Fp8Recipe r, LinearGemm g, int act_bytes, bool compile);

// torchao's MXFP8 cast kernels, as a runtime runs them (runtime term mxfp8_casts), and their B200
// rates, below the HBM rate other casts are charged at:
// - compile_triton: dim0 by MXTensor.to_mx under torch.compile, dim1 by the Triton kernel (torchao's
//   mx recipe mxfp8_cublas, FLOOR scales, with torchtitan's [mx] mxfp8_dim1_cast_kernel_choice =
//   "triton", its default through v0.2): "up to 6.3 TB/s for the dim0 cast (with torch.compile), and
//   up to 3.9 TB/s for the dim1 cast (with a triton kernel)" (pytorch/ao@534bea57e
//   torchao/prototype/mx_formats/README.md lines 202-203, cast_bench.py at M = K = 16384).
// - triton_cuda: dim0 by the Triton kernel, dim1 by the CUDA kernel, RCEIL scales (torchao's
//   MXFP8Linear, moe_training/mxfp8_linear.py @36027d82d: MXFP8Dim0CastKernelChoice.TRITON,
//   MXFP8Dim1CastKernelChoice.CUDA, ScaleCalculationMode.RCEIL; torchtitan's MXFP8LinearConverter
//   from 3c4d47024): 5888.83 and 5716.72 GB/s (pytorch/ao@4446ad91b README "quantization kernel
//   microbenchmarks", dim0_mxfp8_triton_rceil and dim1_mxfp8_cuda_rceil, 16384 x 16384 on a B200 at
//   1000 W; the same table at 36027d82d docs/source/workflows/training.md).
// Other casts move their bytes at the GPU's effective HBM rate (hbm_tbps · hbm_ceiling · hbm_eff:
// 7.7 · 0.8960 · 1 = 6.90 TB/s on configs/hardware/B200.toml); an MXFP8 cast's bytes are scaled by
// that B200 rate over its stated one, so on a B200 it runs at exactly the stated rate, and on
// another GPU at the same share of that GPU's effective rate (the best case torchao states; smaller
// shapes run slower). BlockScaledFormats.MxCastsRunAtTheStatedB200Rates holds these.
enum class Mxfp8Casts { compile_triton, triton_cuda };
bool parse_mxfp8_casts(const std::string& s, Mxfp8Casts& out);  // "compile_triton" | "triton_cuda"
inline constexpr double kB200EffectiveHbmTbps = 7.7 * 0.8960 * 1.0;  // TB/s
struct Mxfp8CastRates {
  double dim0_tbps = 0, dim1_tbps = 0;  // on a B200  // TB/s
};
constexpr Mxfp8CastRates mxfp8_cast_rates(Mxfp8Casts k) {
  return k == Mxfp8Casts::triton_cuda ? Mxfp8CastRates{5.88883, 5.71672} : Mxfp8CastRates{6.3, 3.9};
}
// The factor on an MXFP8 cast's bytes along dim0 or dim1 (above).
constexpr double mxfp8_cast_bytes_scale(Mxfp8Casts k, bool dim1) {
  return kB200EffectiveHbmTbps / (dim1 ? mxfp8_cast_rates(k).dim1_tbps : mxfp8_cast_rates(k).dim0_tbps);
}

// The scaling and cast kernels of one Linear: bytes each kernel moves, by direction.
struct Fp8CastKernels {
  std::vector<double> fwd;  // bytes per kernel, forward
  std::vector<double> bwd;  // bytes per kernel, backward
};
// compile: the first read of x and of grad_output is fused into the op before (torchao's
// enable_fusion_modeling); weight_precast: the weight arrives in fp8 from the all-gather
// (tensorwise only), no weight kernels; mx: the MXFP8 cast kernels (mxfp8 only).
Fp8CastKernels fp8_cast_kernels(Fp8Recipe r, double M, double K, double N, int act_bytes, bool compile,
                                bool weight_precast, Mxfp8Casts mx = Mxfp8Casts::compile_triton);

// A kernel's floor: torchao's KERNEL_LAUNCH_OVERHEAD_SEC (roofline_utils.py, measured on H100).
inline constexpr double kFp8CastKernelFloorS = 2e-6;  // s
// Time of kernels moving `bytes` each over HBM, each at least kFp8CastKernelFloorS.  // s
inline double fp8_cast_kernels_s(const std::vector<double>& bytes, double hbm_bytes_per_s) {
  double t = 0;
  for (double b : bytes) t += b / hbm_bytes_per_s > kFp8CastKernelFloorS ? b / hbm_bytes_per_s : kFp8CastKernelFloorS;
  return t;
}
// The CUTLASS row-wise fp8 GEMM (fast accumulation, the forward GEMM of rowwise recipes)
// relative to cuBLAS tensor-wise: "most shapes within 90-100 %" (pytorch/pytorch#147971, H100);
// the middle of that range. No source states it for MI300X; the same value is used there.
inline constexpr double kRowwiseGemmRate = 0.95;
// The block-scaled MXFP8 GEMM (torch._scaled_mm with e8m0 scales per 32 elements, cuBLAS on
// compute capability 10.x) relative to the tensor-wise fp8 one: the same tensor-core rate (torchao
// torchao/testing/training/roofline_utils.py @36027d82d get_individual_gemm_time_sympy times
// mxfp8 GEMMs at fp8_peak_tops and the same pct_achievable_gemm_tops; the scales add K/32 reads).
inline constexpr double kMxfp8GemmRate = 1.0;
// torchtitan's NVFP4 recipe keeps the last ceil(0.15 · n_layers) blocks and the LM head in bf16
// (torchtitan @b5bcd76c6 models/llama3/config_registry.py llama3_8b_first_85_pct_layers_nvfp4,
// _NVFP4_BF16_TAIL_FRACTION = 0.15; components/quantization/nvfp4.py nvfp4_bf16_tail_fqns).
inline constexpr double kNvfp4Bf16TailFraction = 0.15;
// The blocks of an n_layers model that run NVFP4 under that recipe, as a fraction of all blocks.
double nvfp4_block_fraction(int n_layers);

// The time of each GEMM of the Linear: `gemm(m, n, k, fp8)` in seconds for (m×k)·(k×n).
struct Fp8LinearTime {
  double fwd_s = 0;  // forward GEMM + forward cast kernels  // s
  double bwd_s = 0;  // grad_input + grad_weight GEMMs, rescale passes, backward cast kernels  // s
};
template <class GemmTime>
Fp8LinearTime fp8_linear_time(Fp8Recipe r, double M, double K, double N, int act_bytes, bool compile,
                              bool weight_precast, double hbm_bytes_per_s, GemmTime gemm,
                              Mxfp8Casts mx = Mxfp8Casts::compile_triton);

// ---------------------------------------------------------------------------------------------

template <class GemmTime>
Fp8LinearTime fp8_linear_time(Fp8Recipe r, double M, double K, double N, int act_bytes, bool compile,
                              bool weight_precast, double hbm_bytes_per_s, GemmTime gemm, Mxfp8Casts mx) {
  auto kernels_s = [&](const std::vector<double>& bytes) { return fp8_cast_kernels_s(bytes, hbm_bytes_per_s); };
  // (m, n, k) of each GEMM and the size of its output.
  auto one = [&](LinearGemm g, double m, double n, double k) {
    const Fp8GemmRun run = fp8_gemm_run(r, g, act_bytes, compile);
    double t = run.fp8 ? gemm(m, n, k, true) / run.rate : gemm(m, n, k, false);
    if (run.rescale_bytes_per_output > 0) t += kernels_s({run.rescale_bytes_per_output * m * n});
    return t;
  };
  const Fp8CastKernels casts = fp8_cast_kernels(r, M, K, N, act_bytes, compile, weight_precast, mx);
  Fp8LinearTime out;
  out.fwd_s = one(LinearGemm::forward, M, N, K) + kernels_s(casts.fwd);
  out.bwd_s = one(LinearGemm::grad_input, M, K, N) + one(LinearGemm::grad_weight, K, N, M) + kernels_s(casts.bwd);
  return out;
}

}  // namespace shardcast::planner
