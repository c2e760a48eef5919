// Export of a sharded checkpoint to safetensors + config.json, verified by parsing the
// safetensors format here (8-byte LE header length, JSON header, raw data) — no transformers.
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shared/errors.h"
#include "tests/trainer/harness.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/export/safetensors.h"

namespace shardcast::trainer {
namespace {

namespace fs = std::filesystem;
using testing::run_ranks;
using testing::synthetic_token_file;
using testing::tiny_config;

struct Parsed {
  nlohmann::json header;
  std::string data;
};

Parsed parse_safetensors(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GE(all.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(all[size_t(i)])) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  Parsed out;
  out.header = nlohmann::json::parse(all.substr(8, n));
  out.data = all.substr(8 + n);
  return out;
}

TEST(Export, SafetensorsMatchTheGatheredParameters) {
  for (bool tied : {false, true}) {
    TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 4);
    cfg.model.tied_embeddings = tied;
    // d_model 38: the last unit (38 + 256·38 = 9766 elements) is not a multiple of the 4
    // shards, so the export must drop the padding.
    cfg.model.d_model = 38;
    cfg.model.n_heads = 1;
    cfg.model.n_kv_heads = 1;
    cfg.checkpoint.dir = (fs::temp_directory_path() / ("shardcast_export_" + std::to_string(::getpid()))).string();
    fs::remove_all(cfg.checkpoint.dir);
    std::vector<std::pair<std::string, at::Tensor>> params;
    TokenFile data(synthetic_token_file());
    run_ranks(4, 4, [&](int rank, ProcessGroups g) {
      auto engine = make_fsdp_engine(cfg, std::move(g));
      TrainLoop loop(cfg, *engine, data, DataSlice{rank, 1, 4}, 0);
      loop.step(1);
      loop.step(2);
      save_checkpoint(*fsdp_model_of(*engine), cfg, {2, 0});
      auto p = engine->full_parameters();
      if (rank == 0) params = p;
    });
    const fs::path out = fs::path(cfg.checkpoint.dir) / "hf";
    auto r = export_checkpoint(fs::path(cfg.checkpoint.dir) / "step_00000002", out);
    EXPECT_EQ(r.tensors, int(params.size()));
    Parsed st = parse_safetensors(out / "model.safetensors");
    EXPECT_EQ(st.header.size(), params.size() + 1);  // + __metadata__
    EXPECT_EQ(st.header.contains("lm_head.weight"), !tied);
    uint64_t expect_off = 0;
    for (const auto& [name, t] : params) {
      ASSERT_TRUE(st.header.contains(name)) << name;
      const auto& e = st.header[name];
      EXPECT_EQ(e["dtype"], "F32");
      EXPECT_EQ(e["shape"].get<std::vector<int64_t>>(), t.sizes().vec()) << name;
      const uint64_t b = e["data_offsets"][0], en = e["data_offsets"][1];
      EXPECT_EQ(b, expect_off) << name;  // contiguous, in unit order
      ASSERT_EQ(en - b, uint64_t(t.numel()) * 4) << name;
      ASSERT_LE(en, st.data.size());
      EXPECT_EQ(std::memcmp(st.data.data() + b, t.contiguous().data_ptr<float>(), en - b), 0) << name;
      expect_off = en;
    }
    EXPECT_EQ(expect_off, st.data.size());
    std::ifstream cj(out / "config.json");
    auto c = nlohmann::json::parse(cj);
    EXPECT_EQ(c["model_type"], "llama");
    EXPECT_EQ(c["hidden_size"], 38);
    EXPECT_EQ(c["num_key_value_heads"], 1);
    EXPECT_EQ(c["tie_word_embeddings"], tied);
    EXPECT_EQ(c["intermediate_size"], 192);

    // bf16: half the bytes, values rounded.
    auto rb = export_checkpoint(fs::path(cfg.checkpoint.dir) / "step_00000002", out / "bf16", "bf16");
    Parsed sb = parse_safetensors(out / "bf16" / "model.safetensors");
    EXPECT_EQ(sb.data.size() * 2, st.data.size());
    EXPECT_EQ(rb.tensors, r.tensors);
    const auto& [n0, t0] = params[0];
    uint16_t h0;
    std::memcpy(&h0, sb.data.data(), 2);
    uint32_t bits = uint32_t(h0) << 16;
    float back;
    std::memcpy(&back, &bits, 4);
    const float orig = t0.reshape({-1})[0].item<float>();
    EXPECT_NEAR(back, orig, std::abs(orig) / 128);  // bf16 has 8 significant bits
    fs::remove_all(cfg.checkpoint.dir);
  }
}

TEST(Export, CorruptCheckpointIsRefusedWithoutOutput) {
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
  cfg.checkpoint.dir = (fs::temp_directory_path() / ("shardcast_export_bad_" + std::to_string(::getpid()))).string();
  fs::remove_all(cfg.checkpoint.dir);
  run_ranks(2, 2, [&](int, ProcessGroups g) {
    auto engine = make_fsdp_engine(cfg, std::move(g));
    save_checkpoint(*fsdp_model_of(*engine), cfg, {1, 0});
  });
  const fs::path dir = fs::path(cfg.checkpoint.dir) / "step_00000001";
  {
    std::fstream f(dir / "shard_00000.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    f.write("\x7f", 1);
  }
  const fs::path out = fs::path(cfg.checkpoint.dir) / "hf";
  try {
    export_checkpoint(dir, out);
    ADD_FAILURE() << "corrupt checkpoint exported";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out / "model.safetensors"));
  EXPECT_THROW(export_checkpoint(fs::path(cfg.checkpoint.dir) / "nope", out), InputError);
  fs::remove_all(cfg.checkpoint.dir);
}

}  // namespace
}  // namespace shardcast::trainer
