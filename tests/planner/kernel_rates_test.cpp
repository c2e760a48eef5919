// Per-shape kernel rates: the GEMM tile/wave model against its tile-by-tile oracle and its
// large-GEMM limit, and the flash-attention table's interpolation.
#include "planner/model/kernel_rates.h"

#include <cmath>

#include <gtest/gtest.h>

#include "planner/model/ops.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {
namespace {

const GemmGrid kH100{132, 256, 128, 64};
const double kRate = 794.5e12;  // H100 bf16 MAMF

TEST(KernelRates, OneTileMoreThanAFullWaveCostsAWholeWave) {
  // 132 tiles of 256×128 fill one wave; one more tile starts a second, as long as the first.
  const double k = 4096;
  const double full = gemm_time_tiled(256.0 * 132, 128, k, kRate, kH100);
  const double plus_one = gemm_time_tiled(256.0 * 133, 128, k, kRate, kH100);
  EXPECT_DOUBLE_EQ(plus_one, 2.0 * full);
  // One full wave runs at the anchor rate.
  EXPECT_DOUBLE_EQ(full, 2.0 * 256.0 * 132 * 128 * k / kRate);
}

TEST(KernelRates, TileQuantizationPadsEveryDimension) {
  // 257 rows need two 256-row tiles (or, transposed, three 128-row ones): the same time as 512.
  EXPECT_DOUBLE_EQ(gemm_time_tiled(257, 128, 4096, kRate, kH100), gemm_time_tiled(512, 128, 4096, kRate, kH100));
  // K pads to the 64-element step.
  EXPECT_DOUBLE_EQ(gemm_time_tiled(4096, 4096, 65, kRate, kH100), gemm_time_tiled(4096, 4096, 128, kRate, kH100));
}

TEST(KernelRates, MonotonicInEachDimension) {
  double prev = 0;
  for (double m = 64; m <= 65536; m *= 1.37) {
    const double t = gemm_time_tiled(m, 4096, 4096, kRate, kH100);
    EXPECT_GE(t, prev) << m;
    prev = t;
  }
  prev = 0;
  for (double k = 16; k <= 65536; k *= 1.41) {
    const double t = gemm_time_tiled(8192, 11008, k, kRate, kH100);
    EXPECT_GE(t, prev) << k;
    prev = t;
  }
}

TEST(KernelRates, LargeGemmLimitIsTheAnchorRate) {
  // Rate of ever larger square GEMMs → the anchor (the MAMF of field notes §1), from below.
  for (double n : {8192.0, 32768.0, 131072.0}) {
    const double rate = 2.0 * n * n * n / gemm_time_tiled(n, n, n, kRate, kH100);
    EXPECT_LE(rate, kRate * (1 + 1e-12));
    if (n >= 131072) {
      EXPECT_NEAR(rate / kRate, 1.0, 0.01);
    }
  }
}

TEST(KernelRates, ClosedFormEqualsTileByTileSchedule) {
  // Same tiles, same per-tile time: the wave count is what a greedy schedule gives, so the two
  // agree to rounding (1e-12 relative: sums of equal terms vs one product).
  for (double m : {100.0, 4096.0, 16384.0 + 7}) {
    for (double n : {128.0, 768.0, 4096.0 + 3, 11008.0}) {
      for (double k : {64.0, 4095.0, 8192.0}) {
        const double a = gemm_time_tiled(m, n, k, kRate, kH100);
        const double b = gemm_time_reference(m, n, k, kRate, kH100);
        EXPECT_NEAR(a, b, 1e-12 * b) << m << " " << n << " " << k;
      }
    }
  }
}

TEST(KernelRates, AttentionHitsTheTablePointsAndInterpolates) {
  const auto& t = attention_table();
  const double h100 = 794.5e12, a100 = 271.2e12;
  // FlashAttention-2 paper, H100 causal head_dim 128: 2k 265, 4k 294 TFLOP/s.
  EXPECT_DOUBLE_EQ(attention_rate(t, "H100-80GB-SXM5", "flash2", 128, true, 2048, h100), 265e12);
  EXPECT_DOUBLE_EQ(attention_rate(t, "H100-80GB-SXM5", "flash2", 128, true, 4096, h100), 294e12);
  // Half-way in log2(seq_len): the mean.
  EXPECT_DOUBLE_EQ(attention_rate(t, "H100-80GB-SXM5", "flash2", 128, true, std::sqrt(2048.0 * 4096.0), h100),
                   (265e12 + 294e12) / 2);
  // Head dim 96: half-way between 64 (232) and 128 (265) at 2k.
  EXPECT_DOUBLE_EQ(attention_rate(t, "H100-80GB-SXM5", "flash2", 96, true, 2048, h100), (232e12 + 265e12) / 2);
  // Clamped beyond the table.
  EXPECT_DOUBLE_EQ(attention_rate(t, "A100-80GB-SXM4", "flash_triton", 128, true, 65536, a100), 80e12);
  EXPECT_DOUBLE_EQ(attention_rate(t, "A100-80GB-SXM4", "flash2", 128, true, 128, a100), 99e12);
  // Another GPU: scaled by its MAMF over the benchmark GPU's.
  EXPECT_DOUBLE_EQ(attention_rate(t, "H100-80GB-SXM5", "flash2", 128, true, 2048, 2 * h100), 2 * 265e12);
  // A kernel the GPU has no rows for: its A100 ratio to flash2 times flash2 here.
  EXPECT_NEAR(attention_rate(t, "H100-80GB-SXM5", "flash_triton", 128, true, 2048, h100), 265e12 * 68.0 / 155.0,
              1e-6 * 265e12);
  EXPECT_THROW(attention_rate(t, "B200-nope", "flash2", 128, true, 2048, h100), ConfigError);
}

TEST(KernelRates, MalformedAttentionTableNamesFileLineAndColumn) {
  const std::string header = "# c\ngpu,kernel,head_dim,causal,seq_len,tflops,mamf_tflops\n";
  try {
    parse_attention_table(header + "X,flash2,128,1,2048,abc,100\n", "t.csv");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("t.csv:3"), std::string::npos) << m;
    EXPECT_NE(m.find("'tflops'"), std::string::npos) << m;
  }
  EXPECT_THROW(parse_attention_table(header + "X,flash9,128,1,2048,1,100\n", "t.csv"), InputError);
  EXPECT_THROW(parse_attention_table("gpu,kernel\n", "t.csv"), InputError);
  EXPECT_EQ(parse_attention_table(header + "X,flash2,128,1,2048,1,100\n", "t.csv").size(), 1u);
  // head_dim is a whole number in 1 … 1024: a fraction, 0, a huge value (once cast to int
  // unchecked; found by tests/fuzz/fuzz_attention_table.cpp) and signs are refused.
  for (const char* hd : {"64.5", "0", "1e80", "2048", "-64", "+64", " 64", ""}) {
    try {
      parse_attention_table(header + "X,flash2," + hd + ",1,2048,1,100\n", "t.csv");
      ADD_FAILURE() << "accepted head_dim '" << hd << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("t.csv:3: column 'head_dim'"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_attention_table(header + "X,flash2,1024,1,2048,1,100\n", "t.csv").at(0).head_dim, 1024);
}

TEST(KernelRates, GpuPresetsUseTheGridAndBackwardIsTwoGemmsOfTheirShapes) {
  // wqkv of Llama-2-7B at 2×4096 tokens: backward = dX (T, d, 3d) + dW (d, 3d, T) on the grid.
  const HardwareSpec hw = load_hardware("H100-80GB-SXM");
  ASSERT_EQ(hw.gpu.sm_count, 132);
  ComputeContext c;
  c.peak_flops = hw.gpu.bf16_flops;
  c.hbm_bandwidth = hw.gpu.hbm_bandwidth;
  c.eff.matmul_eff = 0.8;
  c.eff.hbm_eff = 1;
  c.grid = GemmGrid{hw.gpu.sm_count, hw.gpu.gemm_tile_m, hw.gpu.gemm_tile_n, hw.gpu.gemm_tile_k};
  const ModelSpec m = load_model("llama2-7b");
  const Op& qkv = block_forward_ops(m, 2, 4096, 2)[1];
  ASSERT_STREQ(qkv.name, "wqkv");
  const double r = c.peak_flops * 0.8;
  EXPECT_DOUBLE_EQ(op_forward_time(qkv, c), gemm_time_tiled(qkv.m, qkv.n, qkv.k, r, c.grid));
  EXPECT_DOUBLE_EQ(op_backward_time(qkv, c),
                   gemm_time_tiled(qkv.m, qkv.k, qkv.n, r, c.grid) + gemm_time_tiled(qkv.k, qkv.n, qkv.m, r, c.grid));
}

}  // namespace
}  // namespace shardcast::planner
