// ModelSpec: parameter counts pinned to the published sizes, FLOPs per token by hand.
#include "shared/model_spec.h"

#include <gtest/gtest.h>

#include "shared/config_io.h"

namespace shardcast {
namespace {

// Published sizes are quoted to 3 significant figures (6.74B, 8.03B, ...): the tolerance is
// half a unit in the last quoted digit, relative to the quoted value.
void expect_params(const std::string& preset, double published, double half_ulp) {
  const ModelSpec m = load_model(preset);
  EXPECT_NEAR(double(m.total_params()), published, half_ulp) << preset;
}

TEST(ModelSpec, ParameterCountsMatchPublished) {
  expect_params("llama2-7b", 6.74e9, 0.005e9);
  expect_params("llama2-13b", 13.02e9, 0.005e9);
  expect_params("llama2-70b", 68.98e9, 0.005e9);
  expect_params("llama3-8b", 8.03e9, 0.005e9);
  expect_params("llama3-70b", 70.55e9, 0.05e9);
  expect_params("llama3.1-405b", 405.85e9, 0.05e9);
  expect_params("codellama-34b", 33.74e9, 0.005e9);
  expect_params("llama3.2-1b", 1.24e9, 0.005e9);
  expect_params("mpt-7b", 6.65e9, 0.005e9);
  expect_params("mpt-30b", 29.96e9, 0.01e9);
}

// Qwen3 (model.head_dim, model.qk_norm): the HF model cards quote the total and the count
// without the embedding and the output head (32.8B / 31.2B; 8.2B / 6.95B), to 3 figures.
TEST(ModelSpec, Qwen3CountsMatchPublished) {
  expect_params("qwen3-32b", 32.8e9, 0.05e9);
  expect_params("qwen3-8b", 8.2e9, 0.05e9);
  const ModelSpec m32 = load_model("qwen3-32b");
  EXPECT_NEAR(double(m32.total_params() - m32.embedding_params() - m32.head_params()), 31.2e9, 0.05e9);
  const ModelSpec m8 = load_model("qwen3-8b");
  EXPECT_NEAR(double(m8.total_params() - m8.embedding_params() - m8.head_params()), 6.95e9, 0.005e9);
  // By hand: wq and wo are 5120 x 8192 (64 heads of 128), wk and wv 5120 x 1024, and the two
  // per-head norms 128 each.
  EXPECT_EQ(m32.head_dim(), 128);
  EXPECT_EQ(m32.q_dim(), 8192);
  EXPECT_EQ(m32.attention_params(), 2LL * 5120 * 8192 + 2LL * 5120 * 1024 + 2 * 128);
  EXPECT_EQ(m32.parameter_tensors(), 1 + 64LL * 11 + 1 + 1);
  // PaLM's attention term counts heads x head_dim (12·L·H·Q·s); torchtitan's own count keeps
  // dim // n_heads (experiments/qwen3/model/args.py @d66b72a6a).
  EXPECT_DOUBLE_EQ(m32.attention_flops_per_token(4096), 12.0 * 64 * 8192 * 4096);
  EXPECT_DOUBLE_EQ(m32.flops_per_token_torchtitan(4096),
                   6.0 * double(m32.total_params() - m32.embedding_params()) + 12.0 * 64 * 5120 * 4096);
}

// model.head_dim = d_model / n_heads is the Llama model: every derived count is the same.
TEST(ModelSpec, HeadDimEqualToTheDerivedOneChangesNothing) {
  const ModelSpec a = load_model("llama3-8b");
  ModelSpec b = a;
  b.explicit_head_dim = 128;
  EXPECT_EQ(b.total_params(), a.total_params());
  EXPECT_EQ(b.parameter_tensors(), a.parameter_tensors());
  EXPECT_DOUBLE_EQ(b.flops_per_token(8192), a.flops_per_token(8192));
  EXPECT_DOUBLE_EQ(b.flops_per_token_torchtitan(8192), a.flops_per_token_torchtitan(8192));
}

TEST(ModelSpec, Llama2_7bExactCountByHand) {
  const ModelSpec m = load_model("llama2-7b");
  // q,k,v,o: 4·4096² ; MLP 3·4096·11008 ; 2 norms 2·4096.
  const int64_t block = 4LL * 4096 * 4096 + 3LL * 4096 * 11008 + 2 * 4096;
  EXPECT_EQ(m.block_params(), block);
  EXPECT_EQ(m.total_params(), 2LL * 32000 * 4096 + 32 * block + 4096);
  EXPECT_EQ(m.total_params(), 6738415616LL);  // HF Llama-2-7b-hf safetensors index total / 2 bytes
}

TEST(ModelSpec, GqaShrinksKvProjections) {
  const ModelSpec m = load_model("llama3-8b");
  EXPECT_EQ(m.kv_dim(), 1024);
  EXPECT_EQ(m.attention_params(), 2LL * 4096 * 4096 + 2LL * 4096 * 1024);
}

TEST(ModelSpec, FsdpUnitsCoverEveryParameterOnce) {
  for (const char* name : {"llama2-7b", "mpt-7b", "tiny-2l", "llama3.2-1b"}) {
    const ModelSpec m = load_model(name);
    const auto units = m.fsdp_unit_params();
    ASSERT_EQ(int(units.size()), m.n_fsdp_units());
    int64_t sum = 0;
    for (int64_t u : units) sum += u;
    EXPECT_EQ(sum, m.total_params()) << name;
  }
}

// The tensors torch.optim iterates over under per-parameter shards, counted by hand from the
// modules: Llama-2-7B (untied) the embedding, 32 × (wq, wk, wv, wo, w1, w2, w3, two norms), the
// final norm and the head; MPT-7B (tied) the embedding, 32 × (Wqkv, out_proj, fc1, fc2, two
// LayerNorms) and the final norm.
TEST(ModelSpec, ParameterTensorsByHand) {
  EXPECT_EQ(load_model("llama2-7b").parameter_tensors(), 1 + 32 * 9 + 1 + 1);
  EXPECT_EQ(load_model("mpt-7b").parameter_tensors(), 1 + 32 * 6 + 1);
}

TEST(ModelSpec, TiedEmbeddingsCountOnce) {
  ModelSpec m = load_model("mpt-7b");
  EXPECT_EQ(m.head_params(), 0);
  m.tied_embeddings = false;
  EXPECT_EQ(m.head_params(), m.embedding_params());
}

TEST(ModelSpec, FlopsPerTokenConvention) {
  const ModelSpec m = load_model("llama2-7b");
  // 6·N + 12·L·d·s, by hand.
  EXPECT_DOUBLE_EQ(m.flops_per_token(4096), 6.0 * 6738415616.0 + 12.0 * 32 * 4096 * 4096);
  // fms-fsdp's published 7B row: 3760 tokens/s/GPU at MFU 0.56 on A100 (312 TFLOP/s).
  EXPECT_NEAR(3760 * m.flops_per_token(4096) / 312e12, 0.56, 0.01);
  // Full recompute adds one forward of the blocks: 2·N_blocks + 4·L·d·s.
  const double extra = 2.0 * 32 * double(m.block_params()) + 4.0 * 32 * 4096 * 4096;
  EXPECT_DOUBLE_EQ(m.hardware_flops_per_token(4096, 1.0), m.flops_per_token(4096) + extra);
  EXPECT_DOUBLE_EQ(m.hardware_flops_per_token(4096, 0.0), m.flops_per_token(4096));
}

}  // namespace
}  // namespace shardcast
