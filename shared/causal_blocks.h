// Query blocks of shardcast-train's eager causal attention (trainer/model/llama.cpp
// causal_attention; the runtime term attention = "eager_causal_blocks").
//
// What it is: the rule that splits a sequence's T queries into blocks of consecutive rows, each
// block scoring only the keys up to its last row, and the number of score elements that
// leaves per (sequence, head) — the trainer computes with the first, the planner counts the
// kept fp32 softmax output with the second, so both read one rule.
// What it is not: flash attention (each block's scores are materialized whole, the diagonal
// block's upper triangle included) and not used on the SDPA path. Pure functions.
//
// With n blocks of c rows (T = n·c) the scores hold c²·n(n+1)/2 = T²·(n+1)/(2n) elements
// instead of T²: 5/8 of them at n = 4, 9/16 at n = 8 (→ 1/2, the causal half, as n grows).
#pragma once

#include <algorithm>
#include <cstdint>

namespace shardcast {

// Rows per query block: at least 64 (fewer rows make each block's GEMMs too small to run at
// speed), at most 8 blocks per sequence (each block adds a handful of kernels and their
// backward). T ≤ 64 is one block: the whole T×T square.
inline int64_t causal_query_block_rows(int64_t T) { return std::max<int64_t>(64, (T + 7) / 8); }

// Score elements per (sequence, head): Σ over blocks of rows × keys up to the block's last row.
inline double causal_block_score_elements(int64_t T) {
  const int64_t c = causal_query_block_rows(T);
  double n = 0;
  for (int64_t r0 = 0; r0 < T; r0 += c) {
    const int64_t rows = std::min(c, T - r0);
    n += double(rows) * double(r0 + rows);
  }
  return n;
}

}  // namespace shardcast
