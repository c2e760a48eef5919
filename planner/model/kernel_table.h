// KernelTable: a GPU's measured kernel times (a CSV written by the GPU microbenchmark), read
// by the planner in place of the anchored per-shape model where a hardware preset names one
// (`[gpu] kernel_table = "kernels/NAME.csv"`, relative to the configs directory) and the
// runtime runs the torch release the table was measured with (runtime term torch; plan.cpp).
//
// The format, its row type and its strict reader are shared/kernel_table.h; this adds what
// the planner takes from a table (planner/model/plan.cpp): the best measured GEMM rate per dtype as
// the anchor of the SM-grid model, the measured time of a GEMM of exactly a measured shape,
// the forward + backward SDPA rate by sequence length (nearest head dim), the eager RMSNorm,
// the eager SwiGLU product and the optimizer step (clip_grad_norm_ then the fused AdamW) by
// shape, and the best copy bandwidth for memory-bound ops. What it is not: the writer (the microbenchmark is) or the
// parser (shared/kernel_table.cpp).
// Plain value type; kernel_table_for() caches files behind a mutex (thread-safe).
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "shared/kernel_table.h"

namespace shardcast::planner {

// file, header and rows as shared/kernel_table.h parsed them.
struct KernelTable : KernelTableFile {
  // Best measured GEMM rate of `dtype`; 0 when none.  // FLOP/s
  double best_gemm_rate(const std::string& dtype) const;
  // Measured seconds of the GEMM (m, n, k) in `dtype`; 0 when that shape was not measured.
  double gemm_seconds(const std::string& dtype, double m, double n, double k) const;
  // (flop_fwd + flop_bwd) / (seconds_fwd + seconds_bwd) of the sdpa rows of the head dim
  // nearest `head_dim`, linear in log2(seq_len) between measured lengths, clamped; 0 when none.
  double sdpa_rate(double head_dim, double seq_len) const;
  // Measured seconds of the eager RMSNorm (the fp32 up-cast composite of trainer/model's
  // rms_norm: x.float(), pow, mean, rsqrt, mul, down-cast, · weight) over m rows of width n, its
  // forward (backward = false) or its backward alone: the rows' seconds per element, linear in
  // log2(m) between measured row counts and then in log2(n) between measured widths, clamped to
  // the table's range, times m·n; 0 when the table has no such rows.  // s
  double rmsnorm_seconds(double m, double n, bool backward) const;
  // The same for SwiGLU's element-wise part, silu(gate) · up over m rows of width n (the FFN
  // width), from the swiglu_fwd / swiglu_bwd rows; 0 when the table has none.  // s
  double swiglu_seconds(double m, double n, bool backward) const;
  // Measured seconds of one optimizer step as torch runs clip_grad_norm_ then AdamW(fused=True)
  // (the microbenchmark's adamw_fused_clip rows) over `elements` elements of `dtype` in
  // `tensors` tensors: the rows' seconds per element, linear in log2 of the mean tensor size
  // (elements / tensors: the multi-tensor kernels' efficiency depends on it) between measured
  // sizes, clamped to the table's range, times `elements`; 0 when the table has no such rows.  // s
  double adamw_fused_clip_seconds(const std::string& dtype, double elements, double tensors) const;
  // Best measured copy bandwidth (bytes read + written / s); 0 when none.
  double copy_bandwidth() const;
  // The torch release it was measured with: the header's `# torch:` as "MAJOR.MINOR"
  // ("2.11.0" -> "2.11", "2.11.0+cu130" -> "2.11"); "" when the header names none.
  std::string torch_release() const;

  std::map<std::tuple<std::string, double, double, double>, double> gemm_index;  // built by the parser
  // Rows of m rows × width n (rmsnorm_fwd, rmsnorm_bwd, swiglu_fwd, swiglu_bwd) by op and width:
  // (log2 m, seconds per element), m ascending; built by the parser.
  std::map<std::string, std::map<double, std::vector<std::pair<double, double>>>> shape_index;
  // seconds of `op`'s rows at (m, n) as rmsnorm_seconds says; 0 when there are none.  // s
  double shape_seconds(const std::string& op, double m, double n) const;
  // adamw_fused_clip rows by dtype: (log2 mean tensor size, seconds per element), size
  // ascending; built by the parser.
  std::map<std::string, std::vector<std::pair<double, double>>> adamw_index;
};

// parse_kernel_csv (InputError naming the file, the line and the column for anything
// malformed), then the GEMM and RMSNorm indexes.
KernelTable parse_kernel_table(const std::string& text, const std::string& file);
// The table a preset names (path relative to the configs directory, or absolute), read once.
const KernelTable& kernel_table_for(const std::string& name);

}  // namespace shardcast::planner
