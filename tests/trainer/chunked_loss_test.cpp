// The chunked cross-entropy (model/chunked_loss.h) against its oracle, lm_loss (logits.to(fp32)
// then at::cross_entropy_loss): the same loss and logits gradient for every chunk size (one row,
// a chunk not dividing the rows, one chunk for all), on fp32 and bf16 logits.
// Tolerances: fp32 — 2e-6 relative on the loss and 2e-6 of the largest gradient element: the
// same fp32 operations in another order (log-sum-exp per row vs log_softmax, the mean summed in
// fp64 here), a few fp32 roundings (1.2e-7 each) apart. bf16 — the loss as fp32 (both read the
// same bf16 values, computed in fp32); the gradient is rounded to bf16 by both (the oracle's
// ToCopyBackward, here the copy into the bf16 buffer), so two roundings of fp32 values that
// differ by the fp32 error can land one bf16 step apart: 2^-8 of the largest element.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "trainer/model/chunked_loss.h"
#include "trainer/model/llama.h"

namespace shardcast::trainer {
namespace {

struct Result {
  double loss;
  at::Tensor grad;  // fp32 copy of d loss / d logits
};

Result run(bool chunked, const at::Tensor& logits0, const at::Tensor& targets, int64_t chunk) {
  at::Tensor logits = logits0.detach().clone().requires_grad_(true);
  at::Tensor loss = chunked ? chunked_lm_loss(logits, targets, chunk) : lm_loss(logits, targets);
  EXPECT_EQ(loss.scalar_type(), at::kFloat);
  EXPECT_EQ(loss.dim(), 0);
  (loss * 0.75).backward();  // a gradient other than one reaches the logits scaled
  return {loss.item<double>(), logits.grad().to(at::kFloat)};
}

TEST(ChunkedLoss, MatchesTheReferenceLossAndGradientForEveryChunking) {
  at::manual_seed(11);
  const int64_t B = 3, T = 37, V = 101;  // 111 rows
  const at::Tensor targets = at::randint(0, V, {B, T}, at::kLong);
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    // Scale 8: rows with a dominant logit and rows near uniform, as a trained head gives.
    const at::Tensor logits = (at::randn({B, T, V}) * 8.0).to(dtype);
    const Result ref = run(false, logits, targets, 0);
    const bool fp32 = dtype == at::kFloat;
    const double loss_tol = 2e-6, grad_tol = fp32 ? 2e-6 : 1.0 / 256;
    const double largest = ref.grad.abs().max().item<double>();
    ASSERT_GT(largest, 0.0);
    for (int64_t chunk : {int64_t(1), int64_t(16), int64_t(50), int64_t(111), kLossChunkTokens}) {
      const std::string what = fmt::format("{} chunk {}", fp32 ? "fp32" : "bf16", chunk);
      const Result got = run(true, logits, targets, chunk);
      EXPECT_NEAR(got.loss, ref.loss, loss_tol * ref.loss) << what;
      const double err = (got.grad - ref.grad).abs().max().item<double>();
      EXPECT_LE(err, grad_tol * largest) << what;
      std::printf("[chunked_loss] %s: loss %.8f vs %.8f, grad max abs err %.3g of largest %.3g\n", what.c_str(),
                  got.loss, ref.loss, err, largest);
    }
  }
}

TEST(ChunkedLoss, LargeLogitsStayFinite) {
  // Rows of logits near 1e4: exp overflows fp32 unless the log-sum-exp subtracts the row's max.
  const at::Tensor logits = at::full({2, 5, 7}, 1e4) + at::arange(7).to(at::kFloat);
  const at::Tensor targets = at::zeros({2, 5}, at::kLong);
  const Result ref = run(false, logits, targets, 0);
  const Result got = run(true, logits, targets, 3);
  EXPECT_TRUE(std::isfinite(got.loss));
  EXPECT_NEAR(got.loss, ref.loss, 2e-6 * ref.loss);
  EXPECT_LE((got.grad - ref.grad).abs().max().item<double>(), 2e-6);
}

TEST(ChunkedLoss, BadChunkIsRefused) {
  const at::Tensor logits = at::zeros({1, 2, 3});
  const at::Tensor targets = at::zeros({1, 2}, at::kLong);
  EXPECT_THROW(chunked_lm_loss(logits, targets, 0), c10::Error);
}

}  // namespace
}  // namespace shardcast::trainer
