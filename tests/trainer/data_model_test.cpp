// Token files, the sampler, the parameter layout, init, the LR schedule and the
// activation-checkpointing selection.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness.h"
#include "shared/causal_blocks.h"
#include "shared/errors.h"
#include "trainer/train/optim.h"

namespace shardcast::trainer::testing {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("shardcast_" + std::to_string(::getpid()) + "_" + name);
}

TEST(TokenFile, RoundTripAndTokenize) {
  const fs::path txt = temp_path("a.txt");
  std::ofstream(txt) << "hi\xff";
  auto toks = tokenize_bytes({txt.string()});
  ASSERT_EQ(toks, (std::vector<uint16_t>{'h', 'i', 0xff, '\n'}));
  const fs::path bin = temp_path("a.bin");
  write_token_file(bin.string(), toks);
  TokenFile f(bin.string());
  ASSERT_EQ(f.size(), 4);
  EXPECT_EQ(f[2], 0xffu);
  EXPECT_EQ(f.max_token(), 0xffu);
  EXPECT_EQ(fs::file_size(bin), 1024u + 8u);
}

TEST(TokenFile, RejectsBadFiles) {
  const fs::path p = temp_path("bad.bin");
  std::ofstream(p, std::ios::binary) << "short";
  EXPECT_THROW(TokenFile f(p.string()), InputError);
  std::vector<int32_t> h(256, 0);
  h[0] = 1234;
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<char*>(h.data()), 1024);
  try {
    TokenFile f(p.string());
    FAIL() << "bad magic accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos);
  }
  h[0] = kTokenFileMagic;
  h[1] = 1;
  h[2] = 10;  // claims 10 tokens, has none
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<char*>(h.data()), 1024);
  EXPECT_THROW(TokenFile f(p.string()), InputError);
  EXPECT_THROW(TokenFile f(temp_path("missing.bin").string()), ConfigError);  // a missing file: exit 2 everywhere
}

TEST(Sampler, DeterministicAndIndependentOfSharding) {
  TokenFile f(synthetic_token_file());
  const int T = 16;
  std::vector<int64_t> a(4 * (T + 1)), b(4 * (T + 1)), c(4 * (T + 1));
  read_sequences(f, 3, 5, 0, 4, T, a.data());
  read_sequences(f, 3, 5, 0, 4, T, b.data());
  EXPECT_EQ(a, b);
  // Two "ranks" reading two sequences each see the same global batch.
  read_sequences(f, 3, 5, 0, 2, T, c.data());
  read_sequences(f, 3, 5, 2, 2, T, c.data() + 2 * (T + 1));
  EXPECT_EQ(a, c);
  // Different step or seed: different data.
  read_sequences(f, 3, 6, 0, 4, T, b.data());
  EXPECT_NE(a, b);
  read_sequences(f, 4, 5, 0, 4, T, b.data());
  EXPECT_NE(a, b);
  // Tokens are consecutive in the file.
  const int64_t s = sequence_start(f, 3, 5, 1, T);
  for (int t = 0; t <= T; ++t) EXPECT_EQ(a[(T + 1) + t], int64_t(f[s + t]));
}

TEST(Llama, ParameterLayoutMatchesModelSpec) {
  for (const char* name : {"tiny-2l", "small-6l", "mpt-125m", "llama3-8b"}) {
    ModelSpec m = load_model(name);
    for (bool tied : {false, true}) {
      m.tied_embeddings = tied;
      auto units = unit_param_infos(m);
      ASSERT_EQ(int(units.size()), m.n_fsdp_units());
      const auto expect = m.fsdp_unit_params();
      int64_t total = 0;
      for (size_t u = 0; u < units.size(); ++u) {
        int64_t n = 0;
        for (const auto& p : units[u]) n += p.numel;
        EXPECT_EQ(n, expect[u]) << name << " unit " << u << " tied " << tied;
        total += n;
      }
      EXPECT_EQ(total, m.total_params()) << name;
      EXPECT_EQ(units[1][1].name, "model.layers.0.self_attn.q_proj.weight");
      EXPECT_EQ(units[1].back().name, "model.layers.0.mlp.down_proj.weight");
      EXPECT_EQ(units[1][2].shape, (std::vector<int64_t>{m.kv_dim(), m.d_model}));
      EXPECT_EQ(units.back()[0].name, "model.norm.weight");
    }
  }
}

TEST(Llama, InitDependsOnSeedAndNameOnly) {
  ParamInfo p{"model.layers.0.mlp.up_proj.weight", {8, 4}, 32, 0.02, {8, 4}, -1, 0};
  EXPECT_TRUE(init_param(p, 1).equal(init_param(p, 1)));
  EXPECT_FALSE(init_param(p, 1).equal(init_param(p, 2)));
  ParamInfo q = p;
  q.name = "model.layers.1.mlp.up_proj.weight";
  EXPECT_FALSE(init_param(p, 1).equal(init_param(q, 1)));
  const double std = init_param(ParamInfo{"x", {4096}, 4096, 0.02, {4096}, -1, 0}, 0).std().item<double>();
  EXPECT_NEAR(std, 0.02, 0.002);  // 4096 samples: the sample std is within ~2% of 0.02
}

TEST(Llama, AttentionIsCausal) {
  // Changing a later token must not change earlier logits.
  ModelSpec m = load_model("tiny-2l");
  ReferenceModel model(m, 1);
  at::NoGradGuard g;
  at::Tensor a = at::randint(0, 256, {1, 12}, at::kLong);
  at::Tensor b = a.clone();
  b[0][8] = (a[0][8].item<int64_t>() + 1) % 256;
  at::Tensor la = model.forward(a), lb = model.forward(b);
  EXPECT_TRUE(la.narrow(1, 0, 8).equal(lb.narrow(1, 0, 8)));
  EXPECT_FALSE(la.narrow(1, 8, 1).equal(lb.narrow(1, 8, 1)));
}

// block_forward's attention (query blocks, each one baddbmm: bias + (1/√hd)·q·kᵀ) against
// HF's eager spelling (matmul, /√hd, masked_fill over the whole T×T): each score is one
// rounding of the scale apart (≤ 1 ulp of |score| ≲ 8 here), which softmax and the sums over
// up to T keys carry into the output and the gradients; 1e-5 of the largest value is ~80 ulp,
// and a wrong mask, scale or block boundary is off by more than 1e-2. T = 37 is one block;
// T = 200 is blocks of 64, 64, 64 and 8 rows (shared/causal_blocks.h).
TEST(Llama, AttentionMatchesTheEagerReference) {
  at::manual_seed(3);
  for (int64_t T : {37, 200}) {
    const int64_t B = 2, H = 4, hd = 16;
    auto make = [&] { return at::randn({B, H, T, hd}).requires_grad_(true); };
    const at::Tensor q = make(), k = make(), v = make(), dy = at::randn({B, H, T, hd});
    auto run = [&](auto attention) {
      const at::Tensor y = attention(q, k, v);
      auto g = torch::autograd::grad({y}, {q, k, v}, {dy});
      return std::vector<at::Tensor>{y.detach(), g[0], g[1], g[2]};
    };
    const auto fast = run(causal_attention), ref = run(causal_attention_reference);
    const char* what[] = {"output", "dq", "dk", "dv"};
    for (size_t i = 0; i < fast.size(); ++i) {
      const double scale = ref[i].abs().max().item<double>();
      EXPECT_LE((fast[i] - ref[i]).abs().max().item<double>(), 1e-5 * scale) << what[i] << ", T = " << T;
    }
    // The first query sees only the first key: its output is v's first row exactly.
    EXPECT_TRUE(fast[0].select(2, 0).equal(v.detach().select(2, 0)));
  }
  EXPECT_EQ(causal_block_score_elements(37), 37.0 * 37.0);
  EXPECT_EQ(causal_block_score_elements(200), 64.0 * (64 + 128 + 192) + 8.0 * 200);
}

TEST(Llama, GeluMlpVariantTrainsUnderFsdpLikeTheReference) {
  constexpr double kTol = 1e-5;  // fp32 summation order, see fsdp_parity_test.cpp
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
  cfg.model.mlp_type = MlpType::gelu;
  const RunResult f = train_fsdp(cfg, 3), r = train_reference(cfg, 3);
  EXPECT_LE(max_rel_error(f.grads1, r.grads1), kTol);
  EXPECT_LE(max_rel_error(f.params, r.params), kTol);
  int64_t n = 0;
  for (const auto& [name, t] : r.params) n += t.numel();
  EXPECT_EQ(n, cfg.model.total_params());
}

TEST(Configs, EveryExampleRunConfigReadsAndRunsOnThisBuild) {
  const fs::path dir = fs::path(SHARDCAST_TEST_SOURCE_DIR) / "configs" / "train";
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    ++n;
    TrainConfig c = read_train_config(e.path().string());  // throws on any problem
    EXPECT_EQ(c.precision.param_dtype, "fp32") << e.path() << ": the CPU trainer runs fp32";
    EXPECT_LE(c.training.seq_len, c.model.max_seq_len) << e.path();
    EXPECT_NO_THROW(unit_param_infos(c.model)) << e.path();
  }
  EXPECT_GE(n, 1);
}

TEST(LrSchedule, WarmupThenCosineToFloor) {
  OptimizerConfig o;
  o.lr = 1.0;
  LrScheduleConfig s;
  s.warmup_steps = 10;
  s.min_lr_factor = 0.1;
  EXPECT_DOUBLE_EQ(lr_at(1, 110, o, s), 0.1);
  EXPECT_DOUBLE_EQ(lr_at(10, 110, o, s), 1.0);
  EXPECT_NEAR(lr_at(60, 110, o, s), 0.55, 1e-12);  // halfway: (1 + 0.1)/2
  EXPECT_NEAR(lr_at(110, 110, o, s), 0.1, 1e-12);
  s.decay = "linear";
  EXPECT_NEAR(lr_at(60, 110, o, s), 0.55, 1e-12);
  s.decay = "constant";
  EXPECT_DOUBLE_EQ(lr_at(100, 110, o, s), 1.0);
}

TEST(ActivationCheckpointing, SelectiveRatioPicksEvenlySpreadBlocks) {
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 1, AcMode::selective);
  cfg.model = load_model("small-6l");
  cfg.activation_checkpointing.ratio = 0.5;
  run_ranks(1, 1, [&](int, ProcessGroups g) {
    FsdpModel m(cfg.model, fsdp_options(cfg), std::move(g));
    std::vector<bool> ck;
    for (const auto& u : m.units()) ck.push_back(u.checkpoint);
    // [embedding, 6 blocks, head]: every other block, never embedding or head.
    EXPECT_EQ(ck, (std::vector<bool>{false, false, true, false, true, false, true, false}));
  });
}

}  // namespace
}  // namespace shardcast::trainer::testing
