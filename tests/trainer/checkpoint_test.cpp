// Sharded checkpoints: manifest parsing, exact resume, re-shard on load, keep-last-M,
// corruption detection, write failures. Ranks are threads (tests/trainer/harness.h).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shared/errors.h"
#include "tests/trainer/harness.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/checkpoint/manifest.h"

namespace shardcast::trainer {
namespace {

namespace fs = std::filesystem;
using testing::run_ranks;
using testing::shard_size_of;
using testing::synthetic_token_file;
using testing::tiny_config;

fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("shardcast_ckpt_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

// Full (unsharded) params and AdamW moments by name, gathered over the shard group.
struct FullState {
  std::vector<std::pair<std::string, at::Tensor>> params, exp_avg, exp_avg_sq;
  int optimizer_steps = 0;
};

FullState full_state(FsdpModel& m) {
  FullState s;
  s.optimizer_steps = m.optimizer_steps();
  auto& shard = *m.groups().shard;
  for (const auto& u : m.units()) {
    std::vector<std::pair<std::string, at::Tensor>>* dst[3] = {&s.params, &s.exp_avg, &s.exp_avg_sq};
    at::Tensor src[3] = {u.shard.detach(), u.exp_avg, u.exp_avg_sq};
    for (int t = 0; t < 3; ++t) {
      at::Tensor full = at::empty({u.padded_numel}, at::kFloat);
      shard.all_gather(full, src[t].contiguous()).wait();
      auto parts = full.split_with_sizes(u.split_sizes);
      for (size_t k = 0; k < u.params.size(); ++k) dst[t]->emplace_back(u.params[k].name, parts[k].clone());
    }
  }
  return s;
}

bool equal_exactly(const std::vector<std::pair<std::string, at::Tensor>>& a,
                   const std::vector<std::pair<std::string, at::Tensor>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !at::equal(a[i].second, b[i].second)) return false;
  return true;
}

// Trains steps [first, last] of cfg, resuming from `resume` if non-empty and saving after
// `save_at` (0 = never). Returns rank 0's losses and, optionally, the full state at the end.
std::vector<double> train(const TrainConfig& cfg, int first, int last, const fs::path& resume, int save_at,
                          FullState* end_state = nullptr) {
  TokenFile data(synthetic_token_file());
  std::vector<double> losses;
  run_ranks(cfg.world_size(), shard_size_of(cfg), [&](int rank, ProcessGroups g) {
    auto engine = make_fsdp_engine(cfg, std::move(g));
    FsdpModel& model = *fsdp_model_of(*engine);
    if (!resume.empty()) {
      auto m = load_checkpoint(model, resume);
      model.set_optimizer_steps(m.optimizer_steps);
      EXPECT_EQ(m.data.step, first - 1);
    }
    TrainLoop loop(cfg, *engine, data, DataSlice{rank, 1, cfg.world_size()}, 0);
    std::vector<double> mine;
    for (int s = first; s <= last; ++s) {
      mine.push_back(loop.step(s).loss);
      if (s == save_at) save_checkpoint(model, cfg, {s, int64_t(s) * cfg.tokens_per_step()});
    }
    FullState st = full_state(model);
    if (rank == 0) {
      losses = mine;
      if (end_state) *end_state = st;
    }
  });
  return losses;
}

// ------------------------------------------------------------------ manifest (no tensors)

ckpt::Manifest small_manifest() {
  ckpt::Manifest m;
  m.model = "t";
  m.spec = load_model("tiny-2l");
  m.sharding_strategy = "full_shard";
  m.shard_size = 2;
  m.optimizer_steps = 3;
  m.data = {3, 7, 384, 2, 2, 32, 1};
  m.rng_state_hex = "00ff";
  m.units = {{5, 6, {{"a", {5}, 5}}}, {6, 6, {{"b", {2, 3}, 6}}}};
  m.files = {{0, "shard_00000.bin", 72, 1}, {1, "shard_00001.bin", 72, 2}};
  return m;
}

TEST(Manifest, RoundTrip) {
  const auto m = small_manifest();
  const auto back = ckpt::parse_manifest(ckpt::manifest_to_json(m), "x");
  EXPECT_EQ(ckpt::manifest_to_json(back), ckpt::manifest_to_json(m));
  EXPECT_EQ(back.shard_file_bytes(), 72u);  // 3 tensors x (6+6)/2 elements x 4 bytes
}

TEST(Manifest, BadInputNamesTheKey) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      ckpt::parse_manifest(text, "m.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string good = ckpt::manifest_to_json(small_manifest());
  expect_error("", "not valid JSON");
  expect_error(good.substr(0, good.size() / 2), "not valid JSON");
  expect_error("[]", "expected an object");
  auto j = nlohmann::json::parse(good);
  j["units"][0]["padded_numel"] = 7;
  expect_error(j.dump(), "units[0].padded_numel");
  j = nlohmann::json::parse(good);
  j["files"][1]["bytes"] = 71;
  expect_error(j.dump(), "files[1].bytes");
  j = nlohmann::json::parse(good);
  j["files"][0]["file"] = "../etc/passwd";
  expect_error(j.dump(), "plain file name");
  j = nlohmann::json::parse(good);
  j["units"][1]["params"][0]["shape"] = {2, 2};
  expect_error(j.dump(), "numel 6");
  j = nlohmann::json::parse(good);
  j["format"] = 3;
  expect_error(j.dump(), "not supported");
  j = nlohmann::json::parse(good);
  j["format"] = 1;  // before manifests carried their own checksum: refused, said why
  expect_error(j.dump(), "format: version 1 (written before a manifest carried its own checksum)");
  j = nlohmann::json::parse(good);
  j["optimizer_steps"] = 2;  // an edit that keeps the structure: only the checksum sees it
  expect_error(j.dump(), "manifest_crc32: the manifest's own checksum");
  j = nlohmann::json::parse(good);
  j.erase("manifest_crc32");
  expect_error(j.dump(), "manifest_crc32: missing");
  j = nlohmann::json::parse(good);
  j["data"].erase("step");
  expect_error(j.dump(), "data.step: missing");
}

TEST(Manifest, Crc32KnownValue) {
  // The standard check value of CRC-32/ISO-HDLC.
  EXPECT_EQ(ckpt::crc32_update(0, "123456789", 9), 0xCBF43926u);
  // Incremental equals one-shot.
  EXPECT_EQ(ckpt::crc32_update(ckpt::crc32_update(0, "12345", 5), "6789", 4), 0xCBF43926u);
}

TEST(Manifest, IncompleteDirectoriesAreInvisible) {
  const fs::path root = fresh_dir("listing");
  fs::create_directories(root / "step_00000002");
  std::ofstream(root / "step_00000002" / "manifest.json") << "{}";
  fs::create_directories(root / "step_00000004.tmp");  // a save killed before its rename
  std::ofstream(root / "step_00000004.tmp" / "manifest.json") << "{}";
  fs::create_directories(root / "step_00000003");      // no manifest: never committed
  auto all = ckpt::list_complete(root);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].filename(), "step_00000002");
  EXPECT_EQ(ckpt::resolve_checkpoint("latest", root), root / "step_00000002");
  EXPECT_EQ(ckpt::resolve_checkpoint("latest", fresh_dir("empty")), fs::path());  // first start
  EXPECT_THROW(ckpt::resolve_checkpoint(root.string() + "/step_00000003", root), InputError);
  ckpt::prune(root, 2);
  EXPECT_FALSE(fs::exists(root / "step_00000004.tmp"));  // stale temp removed
  EXPECT_TRUE(fs::exists(root / "step_00000002"));
  fs::remove_all(root);
}

TEST(Manifest, WriteFailureLeavesNoFile) {
  // A write that fails (here: RLIMIT_FSIZE -> EFBIG, the same code path as ENOSPC) must throw
  // with the OS reason and remove the partial file. Run in a child so the limit stays there.
  const fs::path dir = fresh_dir("fsize");
  fs::create_directories(dir);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    int code = 1;
    try {
      ckpt::DurableWriter w(dir / "big.bin");
      std::vector<char> buf(1 << 16, 'x');
      w.write(buf.data(), buf.size());
      w.close();
    } catch (const InputError& e) {
      const std::string msg = e.what();
      code = (msg.find("File too large") != std::string::npos && !fs::exists(dir / "big.bin")) ? 0 : 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  fs::remove_all(dir);
}

// ------------------------------------------------------------------ save / load

TEST(Checkpoint, ExactResumeIsBitIdentical) {
  // 6 steps straight == 3 steps + save + fresh processes' state loaded + 3 steps, exactly.
  for (auto strategy : {ShardingStrategy::full_shard, ShardingStrategy::hybrid_shard}) {
    const int world = strategy == ShardingStrategy::hybrid_shard ? 4 : 2;
    TrainConfig cfg = tiny_config(strategy, world);
    cfg.training.steps = 6;
    cfg.checkpoint.dir = fresh_dir("exact").string();
    FullState straight_state, resumed_state;
    const auto straight = train(cfg, 1, 6, {}, 3, &straight_state);
    const auto resumed = train(cfg, 4, 6, fs::path(cfg.checkpoint.dir) / "step_00000003", 0, &resumed_state);
    ASSERT_EQ(straight.size(), 6u);
    ASSERT_EQ(resumed.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(straight[3 + i], resumed[i]) << to_string(strategy) << " step " << 4 + i;
    EXPECT_TRUE(equal_exactly(straight_state.params, resumed_state.params));
    EXPECT_TRUE(equal_exactly(straight_state.exp_avg_sq, resumed_state.exp_avg_sq));
    EXPECT_EQ(straight_state.optimizer_steps, resumed_state.optimizer_steps);
    // hybrid_shard: only the first replica group writes, one file per shard rank.
    const auto m = ckpt::read_manifest(fs::path(cfg.checkpoint.dir) / "step_00000003");
    EXPECT_EQ(m.files.size(), size_t(shard_size_of(cfg)));
    fs::remove_all(cfg.checkpoint.dir);
  }
}

TEST(Checkpoint, ReshardOnLoadTwoToFourRanks) {
  // Saved by 2 full_shard ranks, loaded by 4 ranks (full_shard, then hybrid 2x2, then
  // no_shard): parameters and both AdamW moments arrive exactly; training continues.
  TrainConfig two = tiny_config(ShardingStrategy::full_shard, 2);
  two.checkpoint.dir = fresh_dir("reshard").string();
  FullState saved;
  train(two, 1, 3, {}, 3, &saved);
  const fs::path ckpt_dir = fs::path(two.checkpoint.dir) / "step_00000003";
  for (auto strategy : {ShardingStrategy::full_shard, ShardingStrategy::hybrid_shard, ShardingStrategy::no_shard}) {
    TrainConfig four = tiny_config(strategy, 4);
    FullState loaded;
    TokenFile data(synthetic_token_file());
    run_ranks(4, shard_size_of(four), [&](int rank, ProcessGroups g) {
      auto engine = make_fsdp_engine(four, std::move(g));
      FsdpModel& model = *fsdp_model_of(*engine);
      auto m = load_checkpoint(model, ckpt_dir);
      model.set_optimizer_steps(m.optimizer_steps);
      FullState st = full_state(model);
      TrainLoop loop(four, *engine, data, DataSlice{rank, 1, 4}, 0);
      const double loss = loop.step(4).loss;
      EXPECT_TRUE(std::isfinite(loss));
      if (rank == 0) loaded = st;
    });
    EXPECT_TRUE(equal_exactly(saved.params, loaded.params)) << to_string(strategy);
    EXPECT_TRUE(equal_exactly(saved.exp_avg, loaded.exp_avg)) << to_string(strategy);
    EXPECT_TRUE(equal_exactly(saved.exp_avg_sq, loaded.exp_avg_sq)) << to_string(strategy);
    EXPECT_EQ(loaded.optimizer_steps, 3);
  }
  fs::remove_all(two.checkpoint.dir);
}

TEST(Checkpoint, KeepsLastM) {
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
  cfg.checkpoint.dir = fresh_dir("keep").string();
  cfg.checkpoint.keep = 2;
  TokenFile data(synthetic_token_file());
  run_ranks(2, 2, [&](int rank, ProcessGroups g) {
    auto engine = make_fsdp_engine(cfg, std::move(g));
    TrainLoop loop(cfg, *engine, data, DataSlice{rank, 1, 2}, 0);
    for (int s = 1; s <= 4; ++s) {
      loop.step(s);
      save_checkpoint(*fsdp_model_of(*engine), cfg, {s, 0});
    }
  });
  auto all = ckpt::list_complete(cfg.checkpoint.dir);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].filename(), "step_00000003");
  EXPECT_EQ(all[1].filename(), "step_00000004");
  fs::remove_all(cfg.checkpoint.dir);
}

TEST(Checkpoint, CorruptionIsDetectedOnEveryRank) {
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
  cfg.checkpoint.dir = fresh_dir("corrupt").string();
  train(cfg, 1, 1, {}, 1);
  const fs::path dir = fs::path(cfg.checkpoint.dir) / "step_00000001";
  {  // flip one byte in the middle of rank 1's file
    std::fstream f(dir / "shard_00001.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x10;
    f.seekp(100);
    f.write(&c, 1);
  }
  std::vector<std::string> errors(2);
  TokenFile data(synthetic_token_file());
  run_ranks(2, 2, [&](int rank, ProcessGroups g) {
    auto engine = make_fsdp_engine(cfg, std::move(g));
    try {
      load_checkpoint(*fsdp_model_of(*engine), dir);
    } catch (const InputError& e) {
      errors[rank] = e.what();
    }
  });
  EXPECT_NE(errors[1].find("checksum mismatch"), std::string::npos) << errors[1];
  EXPECT_NE(errors[1].find("shard_00001.bin"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("failed on rank 1"), std::string::npos) << errors[0];
  // A truncated file is reported as such.
  fs::resize_file(dir / "shard_00001.bin", 10);
  std::string err;
  run_ranks(2, 2, [&](int rank, ProcessGroups g) {
    auto engine = make_fsdp_engine(cfg, std::move(g));
    try {
      load_checkpoint(*fsdp_model_of(*engine), dir);
    } catch (const InputError& e) {
      if (rank == 1) err = e.what();
    }
  });
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  fs::remove_all(cfg.checkpoint.dir);
}

TEST(Checkpoint, OtherModelIsRefused) {
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
  cfg.checkpoint.dir = fresh_dir("othermodel").string();
  train(cfg, 1, 1, {}, 1);
  // Rank 0's error loading the step-1 checkpoint into a model of `other` ("" = none).
  auto load_error = [&](const TrainConfig& other) {
    std::string err;
    run_ranks(2, 2, [&](int rank, ProcessGroups g) {
      auto engine = make_fsdp_engine(other, std::move(g));
      try {
        load_checkpoint(*fsdp_model_of(*engine), fs::path(cfg.checkpoint.dir) / "step_00000001");
      } catch (const InputError& e) {
        if (rank == 0) err = e.what();
      }
    });
    return err;
  };
  TrainConfig other = cfg;
  other.model.ffn_dim = 128;
  std::string err = load_error(other);
  EXPECT_NE(err.find("another model"), std::string::npos) << err;
  // The same shapes, another function: heads regrouped, RoPE's base, the norms' epsilon.
  for (int k = 0; k < 3; ++k) {
    TrainConfig same_shapes = cfg;
    const char* key = k == 0 ? "n_heads" : k == 1 ? "rope_theta" : "norm_eps";
    if (k == 0) same_shapes.model.n_heads *= 2, same_shapes.model.n_kv_heads *= 2;
    if (k == 1) same_shapes.model.rope_theta = 500000.0;
    if (k == 2) same_shapes.model.norm_eps = 0.1;
    err = load_error(same_shapes);
    EXPECT_NE(err.find(std::string("model_spec.") + key), std::string::npos) << key << ": " << err;
    EXPECT_NE(err.find("another model"), std::string::npos) << err;
  }
  fs::remove_all(cfg.checkpoint.dir);
}

}  // namespace
}  // namespace shardcast::trainer

namespace shardcast::trainer {
namespace {

TEST(Checkpoint, DiskBytesAreTheBlocksOfEveryFile) {
  ckpt::Manifest m = small_manifest();  // 2 shard files of 72 bytes
  m.files.clear();
  // Byte-granular blocks: the files, the manifest with the widest CRC fields, one "block".
  ckpt::Manifest widest = m;
  widest.files = {{0, "shard_00000.bin", 72, 0xFFFFFFFFu}, {1, "shard_00001.bin", 72, 0xFFFFFFFFu}};
  EXPECT_EQ(ckpt::checkpoint_disk_bytes(m, 1), 2 * 72 + ckpt::manifest_to_json(widest).size() + 1);
  // 4 KiB blocks: each file takes one block, the manifest (< 4 KiB) one, the directory one.
  ASSERT_LT(ckpt::manifest_to_json(widest).size(), 4096u);
  EXPECT_EQ(ckpt::checkpoint_disk_bytes(m, 4096), 4u * 4096);
}

// async_mode = "async": the files of every save are byte-identical to a synchronous run's,
// although training changes the shards in place while the background thread writes them
// (the host copy is taken at the step boundary); the state is zeroed right after the last
// save is handed to the background thread, before it is written.
TEST(Checkpoint, AsyncSavesTheStateOfItsStep) {
  auto run = [](const std::string& mode) {
    TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
    cfg.training.steps = 6;
    cfg.checkpoint.dir = fresh_dir("async_" + mode).string();
    cfg.checkpoint.interval = 1;  // a save every step: the next save always waits for one in flight
    cfg.checkpoint.keep = 6;
    cfg.checkpoint.async_mode = mode;
    TokenFile data(synthetic_token_file());
    auto store = c10::make_intrusive<c10d::HashStore>();  // for the async writer's process group
    run_ranks(2, 2, [&](int rank, ProcessGroups g) {
      auto engine = make_fsdp_engine(cfg, std::move(g));
      CheckpointHook hook(cfg, *engine, store);
      TrainLoop loop(cfg, *engine, data, DataSlice{rank, 1, 2}, 0);
      for (int s = 1; s <= cfg.training.steps; ++s) {
        loop.step(s);
        hook.after_step(s);
      }
      // The last save may still be in flight: overwrite the live state now. Its files must
      // still hold the step's values (the host copy), as a synchronous save's do.
      for (const auto& u : fsdp_model_of(*engine)->units()) {
        u.shard.detach().zero_();
        u.exp_avg.zero_();
        u.exp_avg_sq.zero_();
      }
      hook.finish();
    });
    return cfg.checkpoint.dir;
  };
  const fs::path sync = run("disabled"), async = run("async");
  auto bytes = [](const fs::path& f) {
    std::ifstream in(f, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ASSERT_EQ(ckpt::list_complete(async).size(), 6u);
  for (int s = 1; s <= 6; ++s)
    for (const char* f : {"shard_00000.bin", "shard_00001.bin"}) {
      const auto a = bytes(async / ckpt::step_dir_name(s) / f), b = bytes(sync / ckpt::step_dir_name(s) / f);
      EXPECT_FALSE(a.empty()) << s << " " << f;
      EXPECT_TRUE(a == b) << "step " << s << " " << f << " differs between async and sync saves";
    }
  fs::remove_all(sync);
  fs::remove_all(async);
}

}  // namespace
}  // namespace shardcast::trainer
