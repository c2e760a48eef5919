// The GPU kernel-ceiling table's cases and CSV (trainer/microbench/kernel_table.h), without
// LibTorch or a GPU: the exact CSV the planner reads, the FLOP counts, the GEMM shapes of a
// preset's block in all three orientations, and no duplicate rows.
#include "trainer/microbench/kernel_table.h"

#include <set>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include "shared/config_io.h"

namespace shardcast::trainer {
namespace {

TEST(KernelTable, CsvIsTheFormatThePlannerReads) {
  KernelTableHeader h{"NVIDIA H100 80GB HBM3", "580.159.04", "2.11.0", "13.0", "2026-11-24",
                      "shardcast-train microbench --gpu --out k.csv"};
  KernelRow g;
  g.op = "gemm", g.m = 8192, g.n = 4096, g.k = 4096, g.flop = 2.0 * 8192 * 4096 * 4096, g.seconds = 0.000345;
  KernelRow a;
  a.op = "sdpa_fwd", a.batch = 1, a.seq_len = 8192, a.heads = 32, a.kv_heads = 8, a.head_dim = 128;
  a.flop = sdpa_causal_fwd_flop(1, 32, 8192, 128), a.seconds = 0.0021;
  KernelRow c;
  c.op = "copy", c.bytes = 2.0 * (1 << 30), c.seconds = 0.0007;
  EXPECT_EQ(format_kernel_csv(h, {g, a, c}),
            "# gpu: NVIDIA H100 80GB HBM3\n"
            "# driver: 580.159.04\n"
            "# torch: 2.11.0\n"
            "# cuda: 13.0\n"
            "# date: 2026-11-24\n"
            "# command: shardcast-train microbench --gpu --out k.csv\n"
            "op,dtype,m,n,k,batch,seq_len,heads,kv_heads,head_dim,bytes,flop,seconds\n"
            "gemm,bf16,8192,4096,4096,,,,,,,274877906944,0.000345\n"
            "sdpa_fwd,bf16,,,,1,8192,32,8,128,,549755813888,0.0021\n"  // 4·32·8192²·128/2
            "copy,bf16,,,,,,,,,2147483648,,0.0007\n");
}

TEST(KernelTable, CausalAttentionFlopsAsFlashAttentionCountsThem) {
  // 4·b·h·s²·d / 2 forward; backward 2.5× (FlashAttention's benchmark convention).
  EXPECT_DOUBLE_EQ(sdpa_causal_fwd_flop(2, 32, 4096, 64), 4.0 * 2 * 32 * 4096.0 * 4096 * 64 / 2);
  EXPECT_DOUBLE_EQ(sdpa_causal_bwd_flop(2, 32, 4096, 64), 2.5 * sdpa_causal_fwd_flop(2, 32, 4096, 64));
}

TEST(KernelTable, CasesCoverEveryBlockShapeInThreeOrientationsOnce) {
  KernelCaseOptions o;
  o.models = {load_model("llama3-8b"), load_model("llama3.1-8b")};  // same shapes: deduplicated
  o.tokens = {8192};
  o.seq_lens = {4096};
  const auto rows = kernel_cases(o);
  std::set<std::tuple<int64_t, int64_t, int64_t>> gemms;
  std::multiset<std::string> ops;
  for (const auto& r : rows) {
    ops.insert(r.op);
    EXPECT_LT(r.seconds, 0) << "cases are untimed";
    if (r.op == "gemm") {
      EXPECT_TRUE(gemms.insert({r.m, r.n, r.k}).second) << "duplicate gemm " << r.m << "x" << r.n << "x" << r.k;
      EXPECT_DOUBLE_EQ(r.flop, 2.0 * r.m * r.n * r.k);
    }
  }
  // llama3-8b: d 4096, 32 heads / 8 KV heads of 128, ffn 14336, vocab 128256.
  for (auto [out, in] : std::vector<std::pair<int64_t, int64_t>>{
           {4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}, {128256, 4096}}) {
    EXPECT_TRUE(gemms.count({8192, out, in})) << "forward " << out << "x" << in;
    EXPECT_TRUE(gemms.count({8192, in, out})) << "input gradient " << out << "x" << in;
    EXPECT_TRUE(gemms.count({out, in, 8192})) << "weight gradient " << out << "x" << in;
  }
  // Distinct shapes: q/o (4096×4096) forward = dX, + dW: 2; k/v: 3; gate/up: 3; down's
  // forward and dX are gate/up's dX and forward: 1; lm head: 3.
  EXPECT_EQ(gemms.size(), 12u);
  EXPECT_EQ(ops.count("sdpa_fwd"), 1u);
  EXPECT_EQ(ops.count("sdpa_bwd"), 1u);
  EXPECT_EQ(ops.count("rmsnorm_fwd"), 1u);
  EXPECT_EQ(ops.count("rmsnorm_bwd"), 1u);
  EXPECT_EQ(ops.count("cross_entropy_fwd"), 1u);
  EXPECT_EQ(ops.count("cross_entropy_bwd"), 1u);
  EXPECT_EQ(ops.count("copy"), 1u);
  for (const auto& r : rows)
    if (r.op == "sdpa_fwd") {
      EXPECT_EQ(r.batch, 8);  // sdpa_tokens 32768 / 4096
      EXPECT_EQ(r.heads, 32);
      EXPECT_EQ(r.kv_heads, 8);
      EXPECT_EQ(r.head_dim, 128);
    } else if (r.op == "rmsnorm_fwd") {
      EXPECT_DOUBLE_EQ(r.bytes, 2.0 * (2.0 * 8192 * 4096 + 4096));
    }
}

}  // namespace
}  // namespace shardcast::trainer
