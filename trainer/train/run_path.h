// RunPath: which code path a run took, for run_report.json's "path" and the GPU checks'
// records (tests/gpu/gpu_record.py): world size, communication backend, device, the LibTorch
// release it was built against, the AdamW kernel and the attention backend.
//
// What it is: the same predicates the engines use (trainer/train/optim.h
// fused_optimizer_applies, adamw_update's device test; trainer/model/llama.cpp causal_attention's
// CUDA branch, whose SDPA backend torch chooses: at::_fused_sdp_choice) asked once for this
// run's device, dtype and attention shape. What it is not: a measurement of the kernels (the
// op profile does that) or a way to choose them. Allocates, on CUDA with LibTorch >= 2, three
// (micro_batch, n_heads, seq_len, head_dim) tensors for the SDPA question: call it after the
// steps are measured. Thread: the rank's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "shared/train_config.h"

namespace shardcast::trainer {

// Keys, in order: world_size, comm_backend, device, libtorch, param_dtype, optimizer_kernel,
// attention_backend. `comm_backend`: "gloo", "nccl", or "none" for the reference path.
std::vector<std::pair<std::string, std::string>> describe_run_path(const TrainConfig& cfg, at::Device device,
                                                                   int world_size, const std::string& comm_backend);

// The AdamW kernel the engines run for parameters on `device`: "fused_adamw" (at::_fused_adamw_,
// CUDA with LibTorch >= 2), "reference_ops" (per-tensor LibTorch ops on a device without the
// fused kernel), "host_one_pass" (trainer/train/adamw_kernel.h on CPU).
std::string optimizer_kernel(at::Device device);

// The attention backend of causal_attention for (micro_batch, n_heads, seq_len, head_dim) in
// `dtype` on `device`: "blocked_eager" (the blocked baddbmm/softmax path: CPU, or LibTorch 1.x),
// else SDPA's choice as torch names it: "flash_attention", "efficient_attention",
// "cudnn_attention", "math", "overrideable", or "sdpa_backend_<n>" for a number this build does
// not know ("error" when torch finds none).
std::string attention_backend(const TrainConfig& cfg, at::Device device, at::ScalarType dtype);

}  // namespace shardcast::trainer
