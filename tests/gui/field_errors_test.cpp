// Field errors: the key path and detail of shared validation messages.
#include <gtest/gtest.h>

#include "gui/field_errors.h"
#include "shared/train_config.h"

using namespace shardcast;
using namespace shardcast::gui;

TEST(FieldErrors, SplitsFileKeyDetail) {
  const auto e = parse_field_error("run.toml: training.micro_batch: 0 is not allowed: must be >= 1");
  EXPECT_EQ(e.key, "training.micro_batch");  // not "run.toml"
  EXPECT_EQ(e.detail, "0 is not allowed: must be >= 1");
}

TEST(FieldErrors, NoKey) {
  const auto e = parse_field_error("cannot read foo.toml");
  EXPECT_EQ(e.key, "");
  EXPECT_EQ(e.detail, "cannot read foo.toml");
}

TEST(FieldErrors, EveryValidateMessageOfABadConfigHasItsKey) {
  TrainConfig c;
  c.model.n_layers = 2;
  c.model.d_model = 64;
  c.model.n_heads = 4;
  c.model.n_kv_heads = 3;
  c.model.ffn_dim = 128;
  c.model.vocab = 256;
  c.model.max_seq_len = 128;
  c.training.micro_batch = 0;
  c.training.seq_len = 256;
  c.parallelism.hsdp_shard_size = 2;
  c.activation_checkpointing.ratio = 0;
  const auto errs = parse_field_errors(validate(c));
  std::vector<std::string> keys;
  for (const auto& e : errs) keys.push_back(e.key);
  for (const char* k : {"model.n_kv_heads", "training.micro_batch", "training.seq_len", "parallelism.hsdp_shard_size",
                        "activation_checkpointing.ratio"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  for (const auto& e : errs) EXPECT_FALSE(e.key.empty()) << e.message;
}

TEST(FieldErrors, JoinedMessages) {
  const auto v = parse_field_errors(std::string("a: training.seq_len: x\nb: precision.fp8: y\n"));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].key, "precision.fp8");
}
