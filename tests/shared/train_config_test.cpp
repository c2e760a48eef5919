// TrainConfig helpers: shard groups and which blocks selective checkpointing picks.
#include "shared/train_config.h"

#include <gtest/gtest.h>

namespace shardcast {
namespace {

TEST(TrainConfig, ShardGroupSizePerStrategy) {
  ParallelismConfig p;
  p.sharding_strategy = ShardingStrategy::full_shard;
  EXPECT_EQ(p.shard_group_size(64, 8), 64);
  p.sharding_strategy = ShardingStrategy::shard_grad_op;
  EXPECT_EQ(p.shard_group_size(64, 8), 64);
  p.sharding_strategy = ShardingStrategy::no_shard;
  EXPECT_EQ(p.shard_group_size(64, 8), 1);
  p.sharding_strategy = ShardingStrategy::hybrid_shard;
  EXPECT_EQ(p.shard_group_size(64, 8), 8);  // default: one node
  p.hsdp_shard_size = 16;
  EXPECT_EQ(p.shard_group_size(64, 8), 16);
}

TEST(TrainConfig, SelectiveRatioSpreadsBlocksEvenly) {
  ActivationCheckpointingConfig ac;
  ac.mode = AcMode::selective;
  ac.ratio = 0.5;
  int n = 0;
  for (int i = 0; i < 8; ++i) n += ac.block_checkpointed(i);
  EXPECT_EQ(n, 4);
  EXPECT_FALSE(ac.block_checkpointed(0));
  EXPECT_TRUE(ac.block_checkpointed(1));
  ac.ratio = 1.0 / 3.0;
  EXPECT_NEAR(ac.recompute_fraction(30), 1.0 / 3.0, 1e-12);
  ac.ratio = 1.0;
  EXPECT_DOUBLE_EQ(ac.recompute_fraction(7), 1.0);
  ac.mode = AcMode::none;
  EXPECT_DOUBLE_EQ(ac.recompute_fraction(7), 0.0);
  ac.mode = AcMode::full;
  ac.ratio = 0.25;  // ratio is ignored by full
  EXPECT_DOUBLE_EQ(ac.recompute_fraction(7), 1.0);
  ac.mode = AcMode::selective_op;  // op-level: no whole block is recomputed
  EXPECT_DOUBLE_EQ(ac.recompute_fraction(7), 0.0);
}

TEST(TrainConfig, EnumSpellingsRoundTrip) {
  for (auto s : {ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op, ShardingStrategy::hybrid_shard,
                 ShardingStrategy::no_shard})
    EXPECT_EQ(parse_sharding_strategy(to_string(s)), s);
  for (auto m : {AcMode::none, AcMode::selective, AcMode::full, AcMode::selective_op}) EXPECT_EQ(parse_ac_mode(to_string(m)), m);
  EXPECT_FALSE(parse_sharding_strategy("FULL_SHARD"));
  EXPECT_FALSE(parse_ac_mode("op"));
}

}  // namespace
}  // namespace shardcast
