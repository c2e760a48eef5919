// The GPU kernel-ceiling table's cases (trainer/microbench/kernel_table.h), without LibTorch or
// a GPU: the FLOP counts, the GEMM shapes of a preset's block in all three orientations, no
// duplicate rows, and the real cases through the shared CSV writer and reader
// (shared/kernel_table.h; its format tests are tests/shared/kernel_table_test.cpp).
#include "trainer/microbench/kernel_table.h"

#include <cstdlib>
#include <ostream>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "shared/config_io.h"

namespace shardcast {
// gtest prints a KernelRow that differs field by field, in shortest round-trip digits.
void PrintTo(const KernelRow& r, std::ostream* os) {
  *os << fmt::format("{{op={} dtype={} m={} n={} k={} batch={} seq_len={} heads={} kv_heads={} head_dim={} "
                     "bytes={} flop={} seconds={}}}",
                     r.op, r.dtype, r.m, r.n, r.k, r.batch, r.seq_len, r.heads, r.kv_heads, r.head_dim, r.bytes,
                     r.flop, r.seconds);
}
}  // namespace shardcast

namespace shardcast::trainer {
namespace {

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
  std::set<std::tuple<int64_t, int64_t, int64_t>> gemms, fp8_gemms;
  std::multiset<std::string> ops;
  for (const auto& r : rows) {
    ops.insert(r.op);
    EXPECT_LT(r.seconds, 0) << "cases are untimed";
    if (r.op == "gemm") {
      ASSERT_TRUE(r.dtype == "bf16" || r.dtype == "fp8") << r.dtype;
      auto& set = r.dtype == "bf16" ? gemms : fp8_gemms;
      EXPECT_TRUE(set.insert({r.m, r.n, r.k}).second) << "duplicate " << r.dtype << " gemm " << r.m << "x" << r.n << "x" << r.k;
      EXPECT_DOUBLE_EQ(r.flop, 2.0 * r.m * r.n * r.k);
    }
  }
  EXPECT_EQ(fp8_gemms, gemms);  // every shape once more in fp8 (torchao's tensor-wise GEMM)
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
  EXPECT_EQ(ops.count("swiglu_fwd"), 1u);
  EXPECT_EQ(ops.count("swiglu_bwd"), 1u);
  EXPECT_EQ(ops.count("cross_entropy_fwd"), 1u);
  EXPECT_EQ(ops.count("cross_entropy_bwd"), 1u);
  EXPECT_EQ(ops.count("copy"), 1u);
  EXPECT_EQ(ops.count("adamw_fused_clip"), 2u);  // bf16 and fp32
  for (const auto& r : rows)
    if (r.op == "sdpa_fwd") {
      EXPECT_EQ(r.batch, 8);  // sdpa_tokens 32768 / 4096
      EXPECT_EQ(r.heads, 32);
      EXPECT_EQ(r.kv_heads, 8);
      EXPECT_EQ(r.head_dim, 128);
    } else if (r.op == "rmsnorm_fwd") {
      EXPECT_DOUBLE_EQ(r.bytes, 2.0 * (2.0 * 8192 * 4096 + 4096));
    } else if (r.op == "swiglu_fwd" || r.op == "swiglu_bwd") {
      EXPECT_EQ(r.m, 8192);
      EXPECT_EQ(r.n, 14336);  // the FFN width
      EXPECT_DOUBLE_EQ(r.bytes, 2.0 * (r.op == "swiglu_fwd" ? 3 : 5) * 8192 * 14336) << r.op;
    } else if (r.op == "adamw_fused_clip") {
      // llama3-8b: 8,030,261,248 parameters in 2 + 9·32 + 1 = 291 tensors of 27,595,399 on average;
      // 38 of them fit 2^30 elements. 10 accesses an element: 2 bytes each in bf16, 4 in fp32.
      EXPECT_EQ(r.k, 38);
      EXPECT_EQ(r.m, 38 * 27595399);
      EXPECT_DOUBLE_EQ(r.bytes, 10.0 * (r.dtype == "bf16" ? 2 : 4) * double(r.m)) << r.dtype;
    }
}

TEST(KernelTable, RealCasesRoundTripThroughTheCsv) {
  // The cases microbench --gpu times for llama3.2-1b (its default tokens and sequence lengths),
  // with made-up seconds, written by format_kernel_csv and read back by parse_kernel_csv: every
  // row equal, exactly (no tolerance). Exact because every value is exact in the CSV's digits:
  // the counts are integers, bytes and FLOPs integral doubles below 2^53 written "{:.0f}", and
  // the made-up seconds have at most the 6 significant digits the writer keeps ("{:.6g}"), each
  // the double nearest a decimal i·10⁻⁶, which strtod gives back.
  KernelCaseOptions o;
  o.models = {load_model("llama3.2-1b")};
  o.tokens = {1024, 2048, 4096, 8192, 16384, 32768};
  o.seq_lens = {1024, 2048, 4096, 8192, 16384};
  std::vector<KernelRow> rows = kernel_cases(o);
  ASSERT_GT(rows.size(), 50u);
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i].seconds = std::strtod(fmt::format("{}e-6", 7 * i + 13).c_str(), nullptr);
  const KernelTableHeader h{"synthetic GPU", "0", "0", "0", "2026-11-24", "shardcast-train microbench --gpu"};
  const KernelTableFile t = parse_kernel_csv(format_kernel_csv(h, rows), "roundtrip.csv");
  for (const KernelHeaderKey& k : kKernelHeaderKeys) EXPECT_EQ(t.header.*k.field, h.*k.field) << k.key;
  ASSERT_EQ(t.rows.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(t.rows[i], rows[i]) << "row " << i;
}

}  // namespace
}  // namespace shardcast::trainer
