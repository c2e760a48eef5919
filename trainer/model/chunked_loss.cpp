// Chunked cross-entropy (see chunked_loss.h).
#include "trainer/model/chunked_loss.h"

#include <algorithm>
#include <tuple>

#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include "trainer/profile/op_classify.h"

namespace shardcast::trainer {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct ChunkedCrossEntropyFn : torch::autograd::Function<ChunkedCrossEntropyFn> {
  // logits (N,V), targets (N) int64 -> Σ_rows (lse − logit[target]) / N, fp32 scalar. Each row
  // is shifted by its max first, as log_softmax does: loss_row = log Σ exp(z) − z[target] with
  // z = row − max, so large logits neither overflow nor lose digits to the max's magnitude.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& targets,
                            int64_t chunk) {
    const int64_t N = logits.size(0);
    const auto f32 = logits.options().dtype(at::kFloat);
    at::Tensor row_max = at::empty({N}, f32);                                     // (N) fp32
    at::Tensor log_sum = at::empty({N}, f32);                                     // (N) fp32: log Σ exp(z)
    at::Tensor total = at::zeros({}, logits.options().dtype(at::kDouble));        // Σ loss rows
    for (int64_t s = 0; s < N; s += chunk) {
      const int64_t n = std::min(chunk, N - s);
      const at::Tensor rows = logits.narrow(0, s, n).to(at::kFloat);              // (n,V) fp32
      const at::Tensor m = std::get<0>(rows.max(1, /*keepdim=*/true));            // (n,1)
      const at::Tensor z = rows - m;                                              // (n,V)
      const at::Tensor ls = z.exp().sum(1).log_();                                // (n)
      row_max.narrow(0, s, n).copy_(m.squeeze(1));
      log_sum.narrow(0, s, n).copy_(ls);
      const at::Tensor picked = z.gather(1, targets.narrow(0, s, n).unsqueeze(1)).squeeze(1);
      total += (ls - picked).sum(at::kDouble);
    }
    ctx->save_for_backward({logits, targets, row_max, log_sum});
    ctx->saved_data["chunk"] = chunk;
    return (total / double(N)).to(at::kFloat);
  }

  // d loss / d logits = (softmax(row) − onehot(target)) · grad / N, per chunk, into a buffer of
  // the logits' dtype; softmax = exp((row − max) − log Σ exp) from the saved per-row pair.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_USER_SCOPE(op_scope::lm_loss);  // the loss's backward, in the op profile's `loss` too
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& logits = saved[0];
    const at::Tensor& targets = saved[1];
    const at::Tensor& row_max = saved[2];
    const at::Tensor& log_sum = saved[3];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const int64_t N = logits.size(0);
    const at::Tensor scale = grads[0].to(at::kFloat) / double(N);                // scalar
    at::Tensor grad = at::empty_like(logits, at::MemoryFormat::Contiguous);      // (N,V) logits' dtype
    for (int64_t s = 0; s < N; s += chunk) {
      const int64_t n = std::min(chunk, N - s);
      at::Tensor p = logits.narrow(0, s, n).to(at::kFloat) - row_max.narrow(0, s, n).unsqueeze(1);  // (n,V)
      p.sub_(log_sum.narrow(0, s, n).unsqueeze(1)).exp_();                        // softmax
      p.scatter_add_(1, targets.narrow(0, s, n).unsqueeze(1), at::full({n, 1}, -1.0, p.options()));  // − onehot
      p.mul_(scale);
      grad.narrow(0, s, n).copy_(p);
    }
    return {grad, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor chunked_lm_loss(const at::Tensor& logits, const at::Tensor& targets, int64_t chunk_tokens) {
  RECORD_USER_SCOPE(op_scope::lm_loss);
  TORCH_CHECK(chunk_tokens >= 1, "chunked_lm_loss: chunk_tokens must be >= 1, got ", chunk_tokens);
  const int64_t V = logits.size(-1);
  return ChunkedCrossEntropyFn::apply(logits.reshape({-1, V}), targets.reshape({-1}), chunk_tokens);
}

}  // namespace shardcast::trainer
