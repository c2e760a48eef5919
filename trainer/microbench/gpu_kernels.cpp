// GPU kernel ceilings, timed with CUDA events. See gpu_kernels.h.
#include "trainer/microbench/gpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <regex>
#include <stdexcept>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>

#include "trainer/model/llama.h"

#ifdef SHARDCAST_WITH_NCCL
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace shardcast::trainer {

namespace {

std::string utc_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// The NVIDIA kernel module's version ("580.159.04"): /proc/driver/nvidia/version, else
// nvidia-smi; said so when neither answers.
std::string driver_version() {
  const std::regex ver(R"((\d+\.\d+(\.\d+)?))");
  std::smatch m;
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (f && std::getline(f, line)) {
    const auto at = line.find("Kernel Module");
    const std::string tail = at == std::string::npos ? line : line.substr(at);
    if (std::regex_search(tail, m, ver)) return m[1];
  }
  if (FILE* p = popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null", "r")) {
    char buf[128] = {0};
    const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
    pclose(p);
    line = buf;
    if (got && std::regex_search(line, m, ver)) return m[1];
  }
  return "unknown (no /proc/driver/nvidia/version, nvidia-smi gave none)";
}

#ifdef SHARDCAST_WITH_NCCL

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("microbench --gpu: {}: {}", what, cudaGetErrorString(e)));
}

// Median seconds per call of call(i) (i counts calls, for rotating inputs), CUDA events on
// the current stream around batches of calls.
template <class F>
double median_seconds_per_call(F&& call, const GpuKernelOptions& o) {
  const cudaStream_t st = c10::cuda::getCurrentCUDAStream().stream();
  cudaEvent_t e0, e1;
  cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
  int64_t i = 0;
  auto batch = [&](int64_t n) {  // ms for n calls
    cuda_check(cudaEventRecord(e0, st), "cudaEventRecord");
    for (int64_t j = 0; j < n; ++j) call(i++);
    cuda_check(cudaEventRecord(e1, st), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    cuda_check(cudaGetLastError(), "a kernel launch");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    return double(ms) * 1e-3;
  };
  for (int w = 0; w < o.warmup; ++w) call(i++);
  const double one = batch(1);
  const int64_t n = std::clamp<int64_t>(int64_t(std::ceil(o.min_batch_s / std::max(one, 1e-7))), 1, 10000);
  std::vector<double> per_call;
  for (int s = 0; s < o.samples; ++s) per_call.push_back(batch(n) / double(n));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

// Input sets to rotate over so that a timed call does not find its inputs in L2: enough sets
// of `set_bytes` to exceed twice the L2 size, at most 8.
int64_t rotation_sets(double set_bytes) {
  const double l2 = double(at::cuda::getCurrentDeviceProperties()->l2CacheSize);
  return std::clamp<int64_t>(int64_t(std::ceil(2.0 * l2 / std::max(set_bytes, 1.0))), 1, 8);
}

at::TensorOptions bf16() { return at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA, 0); }

double time_gemm(const KernelRow& r, const GpuKernelOptions& o) {
  const int64_t sets = o.warm_gemm_inputs ? 1 : rotation_sets(2.0 * double(r.m * r.k + r.k * r.n));
  std::vector<at::Tensor> a, b;
  for (int64_t s = 0; s < sets; ++s) {
    a.push_back(at::randn({r.m, r.k}, bf16()));
    b.push_back(at::randn({r.k, r.n}, bf16()));
  }
  at::Tensor c = at::empty({r.m, r.n}, bf16());
  return median_seconds_per_call([&](int64_t i) { at::mm_out(c, a[i % sets], b[i % sets]); }, o);
}

// at::_scaled_mm with one fp32 scale per operand and the output dtype as arguments: LibTorch 2.5+.
#define SHARDCAST_HAS_SCALED_MM (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))

// fp8 tensor cores: compute capability 8.9 (Ada) and 9.0+ (Hopper, Blackwell).
bool has_fp8_tensor_cores() {
  const auto* p = at::cuda::getCurrentDeviceProperties();
  return p->major * 10 + p->minor >= 89;
}

#if SHARDCAST_HAS_SCALED_MM
// torchao's tensor-wise float8 GEMM as its Float8Linear runs it: A (m×k) row-major e4m3, B
// (k×n) column-major e4m3, a scalar fp32 scale each, bf16 out, no fast accumulation (torchao
// keeps fast accumulation for the forward GEMM only; the two backward GEMMs, two thirds of a
// Linear's, run without it).
double time_gemm_fp8(const KernelRow& r, const GpuKernelOptions& o) {
  const int64_t sets = o.warm_gemm_inputs ? 1 : rotation_sets(double(r.m * r.k + r.k * r.n));
  std::vector<at::Tensor> a, b;
  for (int64_t s = 0; s < sets; ++s) {
    a.push_back(at::randn({r.m, r.k}, bf16()).to(at::kFloat8_e4m3fn));
    b.push_back(at::randn({r.n, r.k}, bf16()).to(at::kFloat8_e4m3fn).t());  // k×n, column-major
  }
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, 0);
  const at::Tensor sa = at::ones({}, f32), sb = at::ones({}, f32);
  return median_seconds_per_call(
      [&](int64_t i) { at::_scaled_mm(a[i % sets], b[i % sets], sa, sb, {}, {}, at::kBFloat16, false); }, o);
}
#endif

#if TORCH_VERSION_MAJOR >= 2
// Forward alone, or forward + backward (the caller subtracts).
double time_sdpa(const KernelRow& r, bool backward, const GpuKernelOptions& o) {
  const std::vector<int64_t> shape = {r.batch, r.heads, r.seq_len, r.head_dim};
  // k and v already expanded to every query head, as the trainer passes them.
  at::Tensor q = at::randn(shape, bf16()).requires_grad_(), k = at::randn(shape, bf16()).requires_grad_(),
             v = at::randn(shape, bf16()).requires_grad_(), go = at::randn(shape, bf16());
  return median_seconds_per_call(
      [&](int64_t) {
        at::Tensor out = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                          /*is_causal=*/true);
        if (backward) torch::autograd::grad({out}, {q, k, v}, {go});
      },
      o);
}
#endif

// The trainer's rms_norm (fp32 inside) on (m, n), forward alone or forward + backward.
double time_rmsnorm(const KernelRow& r, bool backward, const GpuKernelOptions& o) {
  const int64_t sets = rotation_sets(2.0 * double(r.m * r.n));
  std::vector<at::Tensor> x, gy;
  for (int64_t s = 0; s < sets; ++s) {
    x.push_back(at::randn({r.m, r.n}, bf16()).requires_grad_());
    gy.push_back(at::randn({r.m, r.n}, bf16()));
  }
  at::Tensor w = (1.0 + 0.1 * at::randn({r.n}, bf16())).requires_grad_();
  return median_seconds_per_call(
      [&](int64_t i) {
        at::Tensor y = rms_norm(x[i % sets], w, 1e-5);
        if (backward) torch::autograd::grad({y}, {x[i % sets], w}, {gy[i % sets]});
      },
      o);
}

// SwiGLU's element-wise part as trainer/model/llama.cpp block_forward writes it, at::silu(gate) ·
// up, on (m, ffn n) bf16, forward or forward + backward (autograd's SiluBackward and MulBackward).
double time_swiglu(const KernelRow& r, bool backward, const GpuKernelOptions& o) {
  const int64_t sets = rotation_sets(2.0 * 3.0 * double(r.m * r.n));  // gate, up, gy in bf16
  std::vector<at::Tensor> gate, up, gy;
  for (int64_t s = 0; s < sets; ++s) {
    gate.push_back(at::randn({r.m, r.n}, bf16()).requires_grad_());
    up.push_back(at::randn({r.m, r.n}, bf16()).requires_grad_());
    gy.push_back(at::randn({r.m, r.n}, bf16()));
  }
  return median_seconds_per_call(
      [&](int64_t i) {
        const int64_t s = i % sets;
        at::Tensor y = at::silu(gate[s]) * up[s];
        if (backward) torch::autograd::grad({y}, {gate[s], up[s]}, {gy[s]});
      },
      o);
}

// The trainer's lm_loss (logits cast to fp32, mean cross-entropy) on (m, vocab n).
double time_cross_entropy(const KernelRow& r, bool backward, const GpuKernelOptions& o) {
  const int64_t sets = rotation_sets(2.0 * double(r.m * r.n));
  std::vector<at::Tensor> logits, targets;
  for (int64_t s = 0; s < sets; ++s) {
    logits.push_back(at::randn({r.m, r.n}, bf16()).requires_grad_());
    targets.push_back(at::randint(r.n, {r.m}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA, 0)));
  }
  return median_seconds_per_call(
      [&](int64_t i) {
        at::Tensor loss = lm_loss(logits[i % sets], targets[i % sets]);
        if (backward) torch::autograd::grad({loss}, {logits[i % sets]});
      },
      o);
}

// at::_fused_adamw_ and the Tensor overload of at::_foreach_mul_ (clip_grad_norm_'s scale):
// LibTorch 2.1+.
#define SHARDCAST_HAS_FUSED_ADAMW (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1))

#if SHARDCAST_HAS_FUSED_ADAMW
// One optimizer step as torch runs clip_grad_norm_(max_norm 1) then AdamW(fused=True): the
// gradients' norm (_foreach_norm, the per-tensor norms stacked and normed), the clamped scale
// applied to every gradient (_foreach_mul_ with a device scalar, no host sync), then the fused
// update, over k tensors of m / k elements in the row's dtype.
double time_adamw_fused_clip(const KernelRow& r, const GpuKernelOptions& o) {
  const auto opts = at::TensorOptions().dtype(r.dtype == "fp32" ? at::kFloat : at::kBFloat16).device(at::kCUDA, 0);
  const int64_t per = r.m / r.k;
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
  const at::Tensor step = at::ones({}, opts.dtype(at::kFloat));
  for (int64_t t = 0; t < r.k; ++t) {
    params.push_back(at::randn({per}, opts));
    grads.push_back(at::randn({per}, opts));
    exp_avgs.push_back(at::zeros({per}, opts));
    exp_avg_sqs.push_back(at::zeros({per}, opts));
    steps.push_back(step);
  }
  return median_seconds_per_call(
      [&](int64_t) {
        const at::Tensor total = at::stack(at::_foreach_norm(grads, 2)).norm();
        at::_foreach_mul_(grads, at::clamp_max(1.0 / (total + 1e-6), 1.0));
        at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, 1e-4, 0.9, 0.95, 0.1,
                          1e-8, /*amsgrad=*/false, /*maximize=*/false);
      },
      o);
}
#endif

double time_copy(const KernelRow& r, const GpuKernelOptions& o) {
  const int64_t n = int64_t(r.bytes / 2.0 / 2.0);  // bytes = read + written, bf16 elements
  at::Tensor src = at::randn({n}, bf16()), dst = at::empty({n}, bf16());
  return median_seconds_per_call([&](int64_t) { dst.copy_(src); }, o);
}

#endif  // SHARDCAST_WITH_NCCL

}  // namespace

bool gpu_kernels_built() {
#ifdef SHARDCAST_WITH_NCCL
  return true;
#else
  return false;
#endif
}

KernelTableHeader gpu_kernel_header(const std::string& command) {
  KernelTableHeader h;
  h.torch = TORCH_VERSION;
  h.date = utc_date();
  h.command = command;
  h.driver = driver_version();
#ifdef SHARDCAST_WITH_NCCL
  h.gpu = at::cuda::getCurrentDeviceProperties()->name;
  int rt = 0;
  cuda_check(cudaRuntimeGetVersion(&rt), "cudaRuntimeGetVersion");
  h.cuda = fmt::format("{}.{}", rt / 1000, (rt % 1000) / 10);
#else
  h.gpu = "none (CPU build)";
  h.cuda = "none";
#endif
  return h;
}

void run_gpu_kernel_bench(std::vector<KernelRow>& rows, const GpuKernelOptions& o) {
#ifndef SHARDCAST_WITH_NCCL
  (void)rows;
  (void)o;
  throw std::runtime_error("microbench --gpu: this shardcast-train is built against a LibTorch without CUDA");
#else
  if (!at::hasCUDA() || c10::cuda::device_count() < 1)
    throw std::runtime_error("microbench --gpu: no CUDA device is visible (nvidia-smi; CUDA_VISIBLE_DEVICES)");
  at::manual_seed(1234);
#if TORCH_VERSION_MAJOR < 2
  std::fprintf(stderr, "microbench --gpu: LibTorch %s has no at::scaled_dot_product_attention: sdpa rows left out\n",
               TORCH_VERSION);
#endif
#if !SHARDCAST_HAS_FUSED_ADAMW
  std::fprintf(stderr, "microbench --gpu: LibTorch %s has no at::_fused_adamw_ (2.1+): adamw_fused_clip rows left out\n",
               TORCH_VERSION);
#endif
  const bool fp8 = SHARDCAST_HAS_SCALED_MM && has_fp8_tensor_cores();
  if (!fp8)
    std::fprintf(stderr, "microbench --gpu: %s: fp8 gemm rows left out\n",
                 SHARDCAST_HAS_SCALED_MM ? "no fp8 tensor cores on this GPU (compute capability < 8.9)"
                                         : "LibTorch " TORCH_VERSION " has no at::_scaled_mm with output dtype (2.5+)");
  std::vector<KernelRow> kept;
  for (size_t i = 0; i < rows.size(); ++i) {
    KernelRow r = rows[i];
    if (r.op == "gemm" && r.dtype == "fp8") {
#if SHARDCAST_HAS_SCALED_MM
      if (!fp8) continue;
      r.seconds = time_gemm_fp8(r, o);
#else
      continue;
#endif
    } else if (r.op == "gemm") r.seconds = time_gemm(r, o);
    else if (r.op == "sdpa_fwd" || r.op == "sdpa_bwd") {
#if TORCH_VERSION_MAJOR >= 2
      const double fwd = time_sdpa(r, false, o);
      r.seconds = r.op == "sdpa_fwd" ? fwd : time_sdpa(r, true, o) - fwd;
#else
      continue;
#endif
    } else if (r.op == "rmsnorm_fwd") r.seconds = time_rmsnorm(r, false, o);
    else if (r.op == "rmsnorm_bwd") r.seconds = time_rmsnorm(r, true, o) - time_rmsnorm(r, false, o);
    else if (r.op == "swiglu_fwd") r.seconds = time_swiglu(r, false, o);
    else if (r.op == "swiglu_bwd") r.seconds = time_swiglu(r, true, o) - time_swiglu(r, false, o);
    else if (r.op == "cross_entropy_fwd") r.seconds = time_cross_entropy(r, false, o);
    else if (r.op == "cross_entropy_bwd") r.seconds = time_cross_entropy(r, true, o) - time_cross_entropy(r, false, o);
    else if (r.op == "copy") r.seconds = time_copy(r, o);
    else if (r.op == "adamw_fused_clip") {
#if SHARDCAST_HAS_FUSED_ADAMW
      r.seconds = time_adamw_fused_clip(r, o);
#else
      continue;
#endif
    } else throw std::logic_error("microbench --gpu: no timing for op " + r.op);
    std::fprintf(stderr, "[%zu/%zu] %s %s m=%lld n=%lld k=%lld s=%lld h=%lld: %.4f ms\n", i + 1, rows.size(), r.op.c_str(),
                 r.dtype.c_str(), (long long)r.m, (long long)r.n, (long long)r.k, (long long)r.seq_len, (long long)r.heads,
                 r.seconds * 1e3);
    kept.push_back(r);
    // Each case's tensors are gone: hand their blocks back, so that cached blocks of one shape
    // never crowd out the next case (the largest GEMMs and losses take ~35 GB).
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
  rows = std::move(kept);
#endif
}

}  // namespace shardcast::trainer
