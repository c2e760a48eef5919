// shared/train_config.h: the mesh's degrees resolved from [parallelism] (against the 1-D strategies'
// shard_group_size of before the mesh, written out here as the oracle) and validate_mesh's
// refusals, each naming its key.
#include "shared/train_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast {
namespace {

// The 1-D shard group of before the mesh (ParallelismConfig::shard_group_size at 75ec84b).
int shard_group_1d(const ParallelismConfig& p, int world, int gpn) {
  switch (p.sharding_strategy) {
    case ShardingStrategy::full_shard:
    case ShardingStrategy::shard_grad_op: return world;
    case ShardingStrategy::hybrid_shard: return p.hsdp_shard_size > 0 ? p.hsdp_shard_size : gpn;
    case ShardingStrategy::no_shard: return 1;
    // Added after the mesh (ZeRO stage 1): parameters whole on every rank, as no_shard.
    case ShardingStrategy::shard_optimizer: return 1;
  }
  return world;
}

TEST(Mesh, OneDimensionalStrategiesKeepTheirShardGroups) {
  for (ShardingStrategy s : all_sharding_strategies())
    for (int hsdp : {0, 2, 16})
      for (int world : {1, 8, 64, 1024}) {
        ParallelismConfig p;
        p.sharding_strategy = s;
        if (s == ShardingStrategy::hybrid_shard) p.hsdp_shard_size = hsdp;
        const Mesh m = resolve_mesh(p, world, 8);
        EXPECT_EQ(m.dp_shard, shard_group_1d(p, world, 8)) << to_string(s) << " " << world;
        EXPECT_EQ(p.shard_group_size(world, 8), shard_group_1d(p, world, 8));
        EXPECT_TRUE(m.one_d());
        if (world % m.dp_shard == 0) {
          EXPECT_EQ(m.world(), world);
        }
      }
}

TEST(Mesh, DegreesTakeTheRestAsTorchtitan) {
  ParallelismConfig p;
  p.tp = 8;
  p.pp = 8;
  Mesh m = resolve_mesh(p, 512, 8);
  EXPECT_EQ(m.dp_shard, 8);
  EXPECT_EQ(m.dp_replicate, 1);
  EXPECT_EQ(m.world(), 512);
  EXPECT_EQ(mesh_label(m), "dp_shard 8 x tp 8 x pp 8");
  p.sharding_strategy = ShardingStrategy::hybrid_shard;  // default group: the node's ranks outside tp
  m = resolve_mesh(p, 512, 8);
  EXPECT_EQ(m.dp_shard, 1);
  EXPECT_EQ(m.dp_replicate, 8);
  ParallelismConfig q;
  q.sharding_strategy = ShardingStrategy::hybrid_shard;
  q.dp_replicate = 4;
  q.tp = 2;
  m = resolve_mesh(q, 64, 8);
  EXPECT_EQ(m.dp_shard, 8);
  EXPECT_EQ(m.world(), 64);
}

// Degrees up to 2^30 each (what the readers allow) multiply in 64 bits: resolving such a mesh
// neither divides by zero nor overflows (an audit crashed `plan --tp 65536 --cp 65536`).
TEST(Mesh, HugeDegreesResolveWithoutOverflow) {
  ParallelismConfig p;
  p.tp = 65536;
  p.cp = 65536;
  const Mesh m = resolve_mesh(p, 64, 8);
  EXPECT_EQ(m.dp_shard, 1);
  EXPECT_EQ(m.world(), int64_t(1) << 32);
  p.sharding_strategy = ShardingStrategy::hybrid_shard;
  EXPECT_GE(resolve_mesh(p, 64, 8).dp_shard, 1);
}

TrainConfig mesh_config(const std::string& parallelism) {
  return parse_train_config("[model]\npreset = \"llama3-8b\"\n[cluster]\nnodes = 8\ngpus_per_node = 8\n[training]\n"
                            "seq_len = 8192\nmicro_batch = 4\n[parallelism]\n" +
                                parallelism,
                            "run.toml");
}

std::string problems(const TrainConfig& c) {
  std::string s;
  for (const std::string& e : validate(c)) s += e + "\n";
  return s;
}

TEST(Mesh, ValidMeshesPass) {
  EXPECT_EQ(problems(mesh_config("tp = 8\n")), "");
  EXPECT_EQ(problems(mesh_config("tp = 2\ncp = 2\npp = 2\npp_schedule = \"Interleaved1F1B\"\n")), "");
  EXPECT_EQ(problems(mesh_config("sharding_strategy = \"hybrid_shard\"\ndp_replicate = 2\ndp_shard = 4\ntp = 8\n")),
            "");
  const TrainConfig c = mesh_config("tp = 8\npp = 2\n");
  EXPECT_EQ(c.dp_size(), 4);
  EXPECT_EQ(c.tokens_per_step(), 4LL * 8192 * 4);  // micro_batch is per data-parallel rank
}

TEST(Mesh, EachRefusalNamesItsKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"tp = 3\n", "parallelism.tp: tp 3 x cp 1 x pp 1 = 3 does not divide the world size 64"},
      {"tp = 16\n", "parallelism.tp: 16 does not divide the model's n_kv_heads (tensor parallel splits attention by heads: n_heads 32 and n_kv_heads 8"},
      {"cp = 0\n", "parallelism.cp: 0 is not allowed: must be >= 1"},
      {"dp_shard = 0\n", "parallelism.dp_shard: 0 is not allowed"},
      {"dp_shard = 4\n", "parallelism.dp_shard: dp_replicate 1 x dp_shard 4 x tp 1 x cp 1 x pp 1 = 4 is not the world"},
      {"dp_replicate = 2\n", "parallelism.dp_replicate: 2 is not allowed with sharding_strategy = \"full_shard\""},
      {"tp_async = true\n", "parallelism.tp_async: true is only allowed with tp > 1"},
      {"pp_schedule = \"GPipe\"\n", "parallelism.pp_schedule: \"GPipe\" is only allowed with pp > 1"},
      {"cp_rotate = \"alltoall\"\n", "parallelism.cp_rotate: \"alltoall\" is only allowed with cp > 1"},
      {"pp = 2\npp_microbatch = 3\n", "parallelism.pp_microbatch: 3 does not divide training.micro_batch 4"},
      {"pp = 64\npp_schedule = \"Interleaved1F1B\"\n", "parallelism.pp: pp 64 x 2 stages per rank = 128 stages"},
      {"pp = 2\npp_schedule = \"ZBVZeroBubble\"\npp_virtual_stages = 3\n",
       "its V shape runs 2 stages per rank"},
      {"pp = 2\npp_virtual_stages = 2\n", "parallelism.pp_virtual_stages: 2 is not allowed with pp_schedule = \"1F1B\""},
  };
  for (const auto& [toml, want] : cases) {
    std::string got;
    try {
      got = problems(mesh_config(toml));
    } catch (const std::exception& e) {
      got = e.what();
    }
    EXPECT_NE(got.find(want), std::string::npos) << toml << "\ngot: " << got;
  }
  // A degree below 1 is said once, without a product computed from the clamped value (an
  // audit saw "dp_shard 0 x tp 2 ... = 2 is not the world size 4" beside the right error).
  for (const char* toml : {"dp_shard = 0\n", "dp_shard = -2\ntp = 2\n", "dp_replicate = 0\ndp_shard = 8\n"}) {
    std::string got;
    try {
      got = problems(mesh_config(toml));
    } catch (const std::exception& e) {
      got = e.what();
    }
    EXPECT_EQ(got.find("is not the world size"), std::string::npos) << toml << "\ngot: " << got;
    EXPECT_NE(got.find("is not allowed: must be >= 1"), std::string::npos) << toml << "\ngot: " << got;
  }
  // The interleaved schedules need their micro-batches a multiple of the rounds, max(1, n // pp)
  // (torch.distributed.pipelining raises otherwise): 9 on pp 4 is 2 rounds; 8 and 3 run.
  for (const char* sched : {"Interleaved1F1B", "InterleavedZeroBubble"}) {
    TrainConfig q = mesh_config(std::string("pp = 4\npp_schedule = \"") + sched + "\"\n");
    for (const auto& [mb, ok] : {std::pair{9, false}, {8, true}, {3, true}}) {
      q.training.micro_batch = mb;
      const std::string got = problems(q);
      EXPECT_EQ(got.find("training.micro_batch: " + std::to_string(mb) + " gives") == std::string::npos, ok)
          << sched << " mb " << mb << ": " << got;
    }
  }
  TrainConfig one = mesh_config("pp = 4\n");  // 1F1B takes any count
  one.training.micro_batch = 9;
  EXPECT_EQ(problems(one).find("rounds"), std::string::npos);
  // cp needs seq_len a multiple of 2·cp.
  TrainConfig c = mesh_config("cp = 4\n");
  c.training.seq_len = 8188;
  EXPECT_NE(problems(c).find("parallelism.cp: training.seq_len 8188 is not a multiple of 2 x cp = 8"), std::string::npos);
  // Sequence parallel needs seq_len a multiple of tp (times 2·cp with cp): 8196 = 4 · 2049.
  TrainConfig t = mesh_config("tp = 8\n");
  t.training.seq_len = 8196;
  EXPECT_NE(problems(t).find("parallelism.tp: training.seq_len 8196 is not a multiple of tp = 8"), std::string::npos);
  t.training.seq_len = 8200;
  EXPECT_EQ(problems(t).find("is not a multiple of tp"), std::string::npos) << problems(t);
  TrainConfig tc = mesh_config("tp = 4\ncp = 2\n");
  tc.training.seq_len = 8200;  // a multiple of 2·cp, not of tp·2·cp = 16
  EXPECT_NE(problems(tc).find("is not a multiple of tp x 2 x cp = 16"), std::string::npos) << problems(tc);
}

TEST(Mesh, RunTomlRoundTripsTheMesh) {
  const TrainConfig c = mesh_config(
      "tp = 2\ncp = 2\npp = 2\ntp_async = true\npp_schedule = \"ZBVZeroBubble\"\npp_microbatch = 2\n"
      "cp_rotate = \"alltoall\"\n");
  const TrainConfig back = parse_train_config(write_train_config(c), "back.toml");
  EXPECT_EQ(back.parallelism.tp, 2);
  EXPECT_EQ(back.parallelism.cp, 2);
  EXPECT_EQ(back.parallelism.pp, 2);
  EXPECT_TRUE(back.parallelism.tp_async);
  EXPECT_EQ(back.parallelism.pp_schedule, PpSchedule::zbv_zero_bubble);
  EXPECT_EQ(back.parallelism.pp_microbatch, 2);
  EXPECT_EQ(back.parallelism.cp_rotate, CpRotate::alltoall);
  EXPECT_EQ(back.parallelism.dp_shard, -1);
}

// torchtitan's names in run.toml's [parallelism] are refused (nothing is planned as something else)
// and the error names our key; each name is one torchtitan v0.2 writes (the key list emit is
// checked against, tests/planner/data/torchtitan_keys_v0.2.txt).
TEST(Mesh, TorchtitanNamesAreRefusedWithOurKey) {
  try {
    mesh_config("tensor_parallel_degree = 8\n");
    ADD_FAILURE() << "tensor_parallel_degree was read";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("parallelism.tensor_parallel_degree"), std::string::npos) << what;
    EXPECT_NE(what.find("torchtitan's name: this file's key is 'parallelism.tp'"), std::string::npos) << what;
  }
  std::ifstream in(std::string(SHARDCAST_TEST_SOURCE_DIR) + "/tests/planner/data/torchtitan_keys_v0.2.txt");
  ASSERT_TRUE(in);
  std::set<std::string> keys;
  for (std::string line; std::getline(in, line);) keys.insert(line);
  const TrainConfig c = mesh_config("");
  for (const auto& [theirs, ours] : torchtitan_parallelism_names()) {
    EXPECT_TRUE(keys.count("parallelism." + theirs)) << theirs;
    EXPECT_THROW(mesh_config(theirs + " = 1\n"), ConfigError) << theirs;
  }
}

}  // namespace
}  // namespace shardcast
