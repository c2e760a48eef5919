#include "planner/model/optimizer_step.h"

#include <cassert>

namespace shardcast::planner {

bool parse_adamw_update(const std::string& s, AdamwUpdate& out) {
  if (s == "fused") out = AdamwUpdate::fused;
  else if (s == "foreach") out = AdamwUpdate::foreach;
  else if (s == "for_loop") out = AdamwUpdate::for_loop;
  else return false;
  return true;
}

bool parse_grad_clip(const std::string& s, GradClip& out) {
  if (s == "none") out = GradClip::none;
  else if (s == "norm_and_scale") out = GradClip::norm_and_scale;
  else if (s == "norm_in_update") out = GradClip::norm_in_update;
  else return false;
  return true;
}

std::string to_string(AdamwUpdate u) {
  switch (u) {
    case AdamwUpdate::fused: return "fused";
    case AdamwUpdate::foreach: return "foreach";
    case AdamwUpdate::for_loop: return "for_loop";
  }
  assert(false && "unknown AdamwUpdate");
  return "";
}

const char* torchtitan_name(AdamwUpdate u) {
  return u == AdamwUpdate::for_loop ? "for-loop" : u == AdamwUpdate::foreach ? "foreach" : "fused";
}

bool parse_torchtitan_implementation(const std::string& s, AdamwUpdate& out) {
  return s != "for_loop" && parse_adamw_update(s == "for-loop" ? "for_loop" : s, out);
}

namespace {

// torch.nn.utils.clip_grad_norm_ (torch/nn/utils/clip_grad.py, foreach on CUDA) and FSDP1's
// FullyShardedDataParallel.clip_grad_norm_ alike: one norm over the gradients, then every
// gradient multiplied by min(1, max_norm / (norm + 1e-6)) whether or not the norm exceeds it.
const std::vector<OptimizerKernel> kClipNorm = {
    {"torch._foreach_norm(grads)", 1, 0},
};
const std::vector<OptimizerKernel> kClipScale = {
    {"torch._foreach_mul_(grads, clip_coef_clamped)", 1, 1},
};

// at::_fused_adamw_ (torch.optim.AdamW(fused=True); shardcast-train's FsdpModel::optimizer_step):
// one kernel reads p, g, m, v and writes p, m, v; a clip coefficient can ride in as grad_scale.
const std::vector<OptimizerKernel> kFused = {
    {"torch._fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, ...)", 4, 3, 4},
};

// torch/optim/adamw.py _multi_tensor_adamw (torch 2.1 … 2.5; torch/optim/adam.py _multi_tensor_adam
// with decoupled_weight_decay from 2.6), capturable off: each line one pass over the shard.
const std::vector<OptimizerKernel> kForeach = {
    {"torch._foreach_mul_(params, 1 - lr * weight_decay)", 1, 1},
    {"torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)", 2, 1, 2},
    {"torch._foreach_mul_(exp_avg_sqs, beta2)", 1, 1, 2},
    {"torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)", 2, 1, 2},
    {"exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)", 1, 1, 1},
    {"torch._foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)", 1, 1},
    {"torch._foreach_add_(exp_avg_sq_sqrt, eps)", 1, 1},
    {"torch._foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, step_size)", 3, 1, 1},
};

// torch/optim/adamw.py _single_tensor_adamw (foreach=False), per parameter: the same arithmetic
// as foreach, the denominator made by an out-of-place sqrt and division (two temporaries of the
// parameter's size alive at once) before the in-place add of eps.
const std::vector<OptimizerKernel> kForLoop = {
    {"param.mul_(1 - lr * weight_decay)", 1, 1},
    {"exp_avg.lerp_(grad, 1 - beta1)", 2, 1, 2},
    {"exp_avg_sq.mul_(beta2)", 1, 1, 2},
    {"exp_avg_sq.addcmul_(grad, grad, value=1 - beta2)", 2, 1, 2},
    {"exp_avg_sq.sqrt()", 1, 1, 1},
    {"(...) / bias_correction2_sqrt", 1, 1},
    {"denom.add_(eps)", 1, 1},
    {"param.addcdiv_(exp_avg, denom, value=-step_size)", 3, 1, 1},
};

const std::vector<OptimizerKernel>& update_kernels(AdamwUpdate u) {
  switch (u) {
    case AdamwUpdate::fused: return kFused;
    case AdamwUpdate::foreach: return kForeach;
    case AdamwUpdate::for_loop: return kForLoop;
  }
  assert(false && "unknown AdamwUpdate");
  return kFused;
}

}  // namespace

std::vector<OptimizerKernel> optimizer_kernels(AdamwUpdate update, GradClip clip) {
  std::vector<OptimizerKernel> out;
  if (clip != GradClip::none) out.insert(out.end(), kClipNorm.begin(), kClipNorm.end());
  if (clip == GradClip::norm_and_scale) out.insert(out.end(), kClipScale.begin(), kClipScale.end());
  const auto& u = update_kernels(update);
  out.insert(out.end(), u.begin(), u.end());
  return out;
}

namespace {

// Bytes the calls of update and clip move per element of the shard, the moments' accesses at
// moment_bytes and the others at master_bytes, summed over the static lists without building
// the list (plan() asks per call).
double weighted_accesses(AdamwUpdate update, GradClip clip, double master_bytes, double moment_bytes) {
  auto sum = [&](const std::vector<OptimizerKernel>& ks) {
    double n = 0;
    for (const auto& k : ks)
      n += double(k.reads + k.writes - k.moment_accesses) * master_bytes + double(k.moment_accesses) * moment_bytes;
    return n;
  };
  return (clip != GradClip::none ? sum(kClipNorm) : 0) + (clip == GradClip::norm_and_scale ? sum(kClipScale) : 0) +
         sum(update_kernels(update));
}

}  // namespace

int optimizer_accesses(AdamwUpdate update, GradClip clip) { return int(weighted_accesses(update, clip, 1, 1)); }

double optimizer_bytes_per_element(AdamwUpdate update, GradClip clip, int master_bytes, int moment_bytes) {
  return weighted_accesses(update, clip, master_bytes, moment_bytes);
}

}  // namespace shardcast::planner
