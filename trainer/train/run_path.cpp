// The code path a run took. See run_path.h.
#include "trainer/train/run_path.h"

#include <torch/version.h>

#include <fmt/format.h>

#include "trainer/train/optim.h"

namespace shardcast::trainer {

std::string optimizer_kernel(at::Device device) {
  // FsdpModel::optimizer_step and the reference engine: fused when it applies, else adamw_update,
  // which runs the host loop on CPU and the reference ops elsewhere.
  if (fused_optimizer_applies(at::empty({0}, at::TensorOptions().dtype(at::kFloat).device(device))))
    return "fused_adamw";
  return device.is_cpu() ? "host_one_pass" : "reference_ops";
}

std::string attention_backend(const TrainConfig& cfg, at::Device device, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR >= 2
  // NEVER COMPILED OR RUN in this project's CI (LibTorch 1.13 here): the question
  // causal_attention's at::scaled_dot_product_attention(is_causal) puts to torch, on tensors
  // of the run's attention shape (q, k, v of equal heads: GQA repeats K and V before it).
  if (device.is_cuda()) {
    const ModelSpec& m = cfg.model;
    const int64_t hd = m.d_model / m.n_heads;
    const auto o = at::TensorOptions().dtype(dtype).device(device);
    const at::Tensor q = at::empty({cfg.training.micro_batch, m.n_heads, cfg.training.seq_len, hd}, o);
    const int64_t choice = at::_fused_sdp_choice(q, q, q, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
    // sdp::SDPBackend (aten/src/ATen/native/transformers/sdp_utils_cpp.h, torch 2.0 to 2.11).
    switch (choice) {
      case -1: return "error";
      case 0: return "math";
      case 1: return "flash_attention";
      case 2: return "efficient_attention";
      case 3: return "cudnn_attention";
      case 4: return "overrideable";
      default: return fmt::format("sdpa_backend_{}", choice);
    }
  }
#else
  (void)cfg;
  (void)dtype;
#endif
  (void)device;
  return "blocked_eager";
}

std::vector<std::pair<std::string, std::string>> describe_run_path(const TrainConfig& cfg, at::Device device,
                                                                   int world_size, const std::string& comm_backend) {
  const at::ScalarType dtype = cfg.precision.param_dtype == "bf16"   ? at::kBFloat16
                               : cfg.precision.param_dtype == "fp16" ? at::kHalf
                                                                     : at::kFloat;
  return {{"world_size", std::to_string(world_size)},
          {"comm_backend", comm_backend},
          {"device", device.str()},
          {"libtorch", fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH)},
          {"param_dtype", cfg.precision.param_dtype},
          {"optimizer_kernel", optimizer_kernel(device)},
          {"attention_backend", attention_backend(cfg, device, dtype)}};
}

}  // namespace shardcast::trainer
