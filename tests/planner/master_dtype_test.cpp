// precision.master_dtype through the config, the runtime profiles and the plan: pure bf16
// (the model itself in bf16, lightning-thunder's benchmark) halves every byte of sharded state
// and of the optimizer's traffic, runtimes that keep fp32 masters refuse it by name, and the
// published reader takes the runtime's default where a row does not say.
#include <gtest/gtest.h>

#include <string>

#include "planner/decide/goodput.h"
#include "planner/model/memory_model.h"
#include "planner/model/plan.h"
#include "planner/evidence/published_csv.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "shared/trainer_checks.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::component;
using test::make_config;

// llama2-7b on 8 H100-80GB, shard_grad_op (zero2), no checkpointing, micro-batch 1 × 4096,
// bf16 parameters and reduction: lightning-thunder PR #940's configuration.
TrainConfig thunder_7b() {
  TrainConfig c = make_config("llama2-7b", "H100-80GB-SXM", 8, ShardingStrategy::shard_grad_op, AcMode::none, 1, 4096);
  c.precision.param_dtype = "bf16";
  c.precision.reduce_dtype = "bf16";
  c.runtime = "lightning-thunder";
  return c;
}

TEST(MasterDtype, ConfigAcceptsFp32AndBf16WithABf16Model) {
  TrainConfig c = thunder_7b();
  c.precision.master_dtype = "bf16";
  EXPECT_TRUE(validate(c).empty());
  c.precision.master_dtype = "fp16";
  const auto e = validate(c);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("precision.master_dtype"), std::string::npos) << e[0];
  EXPECT_NE(e[0].find("allowed: fp32 | bf16"), std::string::npos) << e[0];
  c.precision.master_dtype = "bf16";
  c.precision.param_dtype = "fp32";
  c.precision.reduce_dtype = "fp32";
  const auto f = validate(c);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].find("needs param_dtype = \"bf16\""), std::string::npos) << f[0];
}

TEST(MasterDtype, PureBf16HalvesTheShardedStateAndTheOptimizerTraffic) {
  // Two ways to the same state: the plan's memory components and the closed form
  // P/Ns × (2 + 2 + 4) bytes against P/Ns × (4 + 4 + 8). Exact: the same products, halved.
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig bf = thunder_7b();
  bf.precision.master_dtype = "bf16";
  TrainConfig fp = bf;
  fp.precision.master_dtype = "fp32";
  fp.runtime = "shardcast-train";  // a runtime with fp32 masters and the same options otherwise
  bf.runtime = "shardcast-train";
  PlanOptions o = resolve_plan_options(fp, hw);
  const Prediction a = plan(fp, hw, o), b = plan(bf, hw, o);
  const double P = double(bf.model.total_params()) / 8;
  for (const char* k : {"sharded_parameters", "optimizer_states"})
    EXPECT_DOUBLE_EQ(component(b, k), 0.5 * component(a, k)) << k;
  EXPECT_DOUBLE_EQ(component(b, "sharded_parameters"), 2 * P);
  EXPECT_DOUBLE_EQ(component(b, "optimizer_states"), 4 * P);
  EXPECT_DOUBLE_EQ(state_memory(bf.model.total_params(), 8, 2, 2).total(), 8 * P);
  // AdamW reads and writes every state once per step: its time halves with its bytes.
  EXPECT_NEAR(b.optimizer_s, 0.5 * a.optimizer_s, 1e-12 * a.optimizer_s);
  EXPECT_LT(b.mem_peak_bytes, a.mem_peak_bytes);
  // A checkpoint holds parameters and moments: half the bytes as well.
  EXPECT_DOUBLE_EQ(checkpoint_size(bf).per_rank_bytes, 0.5 * checkpoint_size(fp).per_rank_bytes);
}

TEST(MasterDtype, RuntimesWithFp32MastersRefuseBf16ByName) {
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  TrainConfig c = thunder_7b();
  c.precision.master_dtype = "bf16";
  EXPECT_EQ(runtime_refusal(runtime_preset("lightning-thunder"), c, hw), "");
  // torchtitan runs full bf16 from e99e16c91 (2025-09-16): its generations from 2025-10 allow it.
  for (const char* rt : {"torchtitan-2025-10", "torchtitan-2026-06", "torchtitan"}) {
    TrainConfig d = c;
    d.runtime = rt;
    d.precision.reduce_dtype = "fp32";
    EXPECT_EQ(runtime_refusal(runtime_preset(rt), d, hw).find("precision.master_dtype"), std::string::npos) << rt;
  }
  for (const char* rt : {"torchtitan-2025-07", "fms-fsdp", "llm-foundry", "accelerate", "shardcast-train"}) {
    TrainConfig d = c;
    d.runtime = rt;
    d.precision.reduce_dtype = std::string(rt) == "accelerate" ? "bf16" : "fp32";
    const std::string why = runtime_refusal(runtime_preset(rt), d, hw);
    EXPECT_NE(why.find("precision.master_dtype = \"bf16\""), std::string::npos) << rt << ": " << why;
    EXPECT_NE(why.find(rt), std::string::npos) << why;
  }
  // The trainer itself refuses it (it keeps fp32 shards), naming the key.
  bool named = false;
  for (const auto& r : trainer_refusals(c, /*nccl_compiled=*/true)) named = named || r.key == "precision.master_dtype";
  EXPECT_TRUE(named);
  // lightning-thunder runs pure bf16 only.
  c.precision.master_dtype = "fp32";
  EXPECT_NE(runtime_refusal(runtime_preset("lightning-thunder"), c, hw).find("runs bf16"), std::string::npos);
}

TEST(MasterDtype, ProfileDefaultMustBeOneOfItsValues) {
  // A torchtitan profile of fp32 masters only (before e99e16c91) with its default moved outside its values.
  const std::string original = read_text(std::string(SHARDCAST_TEST_CONFIG_DIR) + "/runtimes/torchtitan-2025-07.toml");
  EXPECT_NO_THROW(parse_runtime_toml(original, "torchtitan-2025-07.toml"));
  std::string text = original;
  const std::string term = "master_dtype_default = \"fp32\"";
  const size_t at = text.find(term);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, term.size(), "master_dtype_default = \"bf16\"");
  try {
    parse_runtime_toml(text, "x.toml");
    FAIL() << "a default outside master_dtypes was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("master_dtype_default"), std::string::npos) << e.what();
  }
}

TEST(MasterDtype, PublishedRowsTakeTheRuntimeDefaultOrTheirColumn) {
  const std::string head =
      "source,model,n_layers,d_model,n_heads,n_kv_heads,ffn_dim,vocab,seq_len,gpu_type,n_gpus,gpus_per_node,"
      "sharding_key,ac_key,micro_batch_per_gpu,compile_key,fp8_key,measured_tokens_per_sec_per_gpu,row_id,"
      "framework,framework_date,master_dtype\n";
  const std::string row = "s,m,32,4096,32,32,11008,32000,4096,H100-80GB-SXM,8,8,SHARD_GRAD_OP,none,1,yes,no,1000,";
  const auto rows = parse_published_csv(head + row + "a,lightning-thunder benchmark_litgpt.py,2024-08-14,\n" +
                                            row + "b,torchtitan,,\n" + row + "c,torchtitan,,fp64\n",
                                        "t.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].cfg.runtime, "lightning-thunder");
  EXPECT_EQ(rows[0].cfg.precision.master_dtype, "bf16");
  EXPECT_EQ(rows[0].cfg.precision.reduce_dtype, "bf16");  // reduce_dtype_is_param_dtype
  EXPECT_EQ(rows[1].cfg.precision.master_dtype, "fp32");
  EXPECT_TRUE(rows[2].skipped());
  EXPECT_NE(rows[2].skip_reason.find("master_dtype 'fp64'"), std::string::npos) << rows[2].skip_reason;
}

}  // namespace
}  // namespace shardcast::planner
