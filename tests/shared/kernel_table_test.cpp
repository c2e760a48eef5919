// The measured kernel table's format (shared/kernel_table.h): the exact CSV the writer gives,
// the reader taking it back, and the reader's errors naming file, line and column.
#include "shared/kernel_table.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "shared/errors.h"

namespace shardcast {
// gtest prints a KernelRow that differs field by field, in shortest round-trip digits.
void PrintTo(const KernelRow& r, std::ostream* os) {
  *os << fmt::format("{{op={} dtype={} m={} n={} k={} batch={} seq_len={} heads={} kv_heads={} head_dim={} "
                     "bytes={} flop={} seconds={}}}",
                     r.op, r.dtype, r.m, r.n, r.k, r.batch, r.seq_len, r.heads, r.kv_heads, r.head_dim, r.bytes,
                     r.flop, r.seconds);
}

namespace {

const std::string kHead = "# gpu: g\n# driver: d\n# torch: t\n# cuda: c\n# date: x\n# command: y\n";
const std::string kCols = "op,dtype,m,n,k,batch,seq_len,heads,kv_heads,head_dim,bytes,flop,seconds\n";

// The InputError message of parsing `text` as t.csv; "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_kernel_csv(text, "t.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelCsv, WriterGivesTheFormatThePlannerReads) {
  KernelTableHeader h{"NVIDIA H100 80GB HBM3", "580.159.04", "2.11.0", "13.0", "2026-11-24",
                      "shardcast-train microbench --gpu --out k.csv"};
  KernelRow g;
  g.op = "gemm", g.m = 8192, g.n = 4096, g.k = 4096, g.flop = 2.0 * 8192 * 4096 * 4096, g.seconds = 0.000345;
  KernelRow a;
  a.op = "sdpa_fwd", a.batch = 1, a.seq_len = 8192, a.heads = 32, a.kv_heads = 8, a.head_dim = 128;
  a.flop = 4.0 * 32 * 8192.0 * 8192 * 128 / 2, a.seconds = 0.0021;  // causal: 4·b·h·s²·d / 2
  KernelRow c;
  c.op = "copy", c.bytes = 2.0 * (1 << 30), c.seconds = 0.0007;
  const std::string csv = format_kernel_csv(h, {g, a, c});
  EXPECT_EQ(csv,
            "# gpu: NVIDIA H100 80GB HBM3\n"
            "# driver: 580.159.04\n"
            "# torch: 2.11.0\n"
            "# cuda: 13.0\n"
            "# date: 2026-11-24\n"
            "# command: shardcast-train microbench --gpu --out k.csv\n"
            "op,dtype,m,n,k,batch,seq_len,heads,kv_heads,head_dim,bytes,flop,seconds\n"
            "gemm,bf16,8192,4096,4096,,,,,,,274877906944,0.000345\n"
            "sdpa_fwd,bf16,,,,1,8192,32,8,128,,549755813888,0.0021\n"
            "copy,bf16,,,,,,,,,2147483648,,0.0007\n");
  // Read back: the same header and rows (every value here is exact in the CSV's digits).
  const KernelTableFile t = parse_kernel_csv(csv, "k.csv");
  EXPECT_EQ(t.file, "k.csv");
  for (const KernelHeaderKey& k : kKernelHeaderKeys) EXPECT_EQ(t.header.*k.field, h.*k.field) << k.key;
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0], g);
  EXPECT_EQ(t.rows[1], a);
  EXPECT_EQ(t.rows[2], c);
}

TEST(KernelCsv, UntimedRowsWriteEmptySeconds) {
  KernelRow r;
  r.op = "rmsnorm_fwd", r.m = 8, r.n = 16, r.bytes = 2.0 * (2 * 8 * 16 + 16);
  EXPECT_EQ(format_kernel_csv({}, {r}), "# gpu: \n# driver: \n# torch: \n# cuda: \n# date: \n# command: \n" + kCols +
                                            "rmsnorm_fwd,bf16,8,16,,,,,,,544,,\n");
}

TEST(KernelCsv, ReaderToleratesBlankLinesCrlfAndHeaderOrder) {
  const std::string text = "# command: y\r\n# date: x\n\n# cuda: c\n# torch: t\n# driver: d\n# gpu: g\n" + kCols +
                           "\ncopy,bf16,,,,,,,,,100,,0.5\r\n";
  const KernelTableFile t = parse_kernel_csv(text, "t.csv");
  EXPECT_EQ(t.header.gpu, "g");
  EXPECT_EQ(t.header.command, "y");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].bytes, 100);
  EXPECT_EQ(t.rows[0].flop, -1);  // empty cell
  EXPECT_EQ(t.rows[0].m, 0);
}

TEST(KernelCsv, MalformedTablesNameFileLineAndColumn) {
  EXPECT_NE(error_of(kCols).find("missing header comment '# gpu"), std::string::npos);
  EXPECT_NE(error_of("# gpu: g\n# gpu: h\n").find("t.csv:2: header key 'gpu' given twice"), std::string::npos);
  EXPECT_NE(error_of("# gpus: g\n").find("t.csv:1: header key 'gpus' is not one of gpu, driver, torch, cuda, date, "
                                         "command"),
            std::string::npos);
  EXPECT_NE(error_of("# just a note\n").find("t.csv:1: header comment must be '# key: value'"), std::string::npos);
  EXPECT_NE(error_of(kHead + "op,dtype\n").find("t.csv:7: 2 columns, expected 13"), std::string::npos);
  EXPECT_NE(error_of(kHead + "op,dtype,m,n,k,batch,seq_len,heads,kv_heads,head_dim,bytes,flops,seconds\n")
                .find("t.csv:7: column 12 is 'flops', expected 'flop'"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "# gpu: g\n").find("t.csv:8: a '# key: value' line after"), std::string::npos);
  EXPECT_NE(error_of(kHead).find("t.csv: no column header"), std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "gemm,bf16,1,1,1\n").find("t.csv:8: 5 fields, expected 13"), std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "matmul,bf16,1,1,1,,,,,,,2,1\n").find("t.csv:8: column 'op': 'matmul' is not gemm"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "gemm,,1,1,1,,,,,,,2,1\n").find("t.csv:8: column 'dtype' is empty"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "gemm,bf16,1,1,1,,,,,,,2,0\n").find("t.csv:8: column 'seconds' must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "gemm,bf16,1,1,1,,,,,,,2,\n").find("t.csv:8: column 'seconds' must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "copy,bf16,,,,,,,,,x,,1\n").find("t.csv:8: column 'bytes': 'x' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "gemm,bf16,1.5,1,1,,,,,,,3,1\n").find("t.csv:8: column 'm': '1.5' is not an integer"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "gemm,bf16,1,-1,1,,,,,,,2,1\n").find("t.csv:8: column 'n': '-1' is not an integer"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "gemm,bf16,1,1,,,,,,,,2,1\n").find("t.csv:8: column 'm': a gemm row needs"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "gemm,bf16,1,1,1,,,,,,,3,1\n").find("t.csv:8: column 'flop': 3 is not 2·m·n·k"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "sdpa_fwd,bf16,,,,1,,1,1,64,,5,1\n").find("t.csv:8: column 'seq_len'"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "copy,bf16,,,,,,,,,,,1\n").find("t.csv:8: column 'bytes': a copy row needs"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "rmsnorm_fwd,bf16,,4096,,,,,,,1,,1\n").find("t.csv:8: column 'm': an rmsnorm_fwd row needs"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + kCols + "swiglu_bwd,bf16,8192,,,,,,,,1,,1\n").find("t.csv:8: column 'm': an swiglu_bwd row needs"),
            std::string::npos);
  EXPECT_EQ(error_of(kHead + kCols + "gemm,bf16,1,1,1,,,,,,,2,1\n"), "");
}

}  // namespace
}  // namespace shardcast
