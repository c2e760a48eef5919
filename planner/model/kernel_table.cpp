#include "planner/model/kernel_table.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "planner/model/kernel_rates.h"
#include "shared/config_io.h"
#include "shared/config_table.h"
#include "shared/runtime_spec.h"

namespace shardcast::planner {

KernelTable parse_kernel_table(const std::string& text, const std::string& file) {
  KernelTable t;
  static_cast<KernelTableFile&>(t) = parse_kernel_csv(text, file);
  for (const KernelRow& r : t.rows) {
    if (r.op == "gemm") t.gemm_index[{r.dtype, double(r.m), double(r.n), double(r.k)}] = r.seconds;
    if (is_rows_by_width_op(r.op))
      t.shape_index[r.op][double(r.n)].emplace_back(std::log2(double(r.m)),  // m, n > 0: the shared reader
                                                    r.seconds / (double(r.m) * double(r.n)));
    if (r.op == "adamw_fused_clip")  // the shared reader checked m, k > 0
      t.adamw_index[r.dtype].emplace_back(std::log2(double(r.m) / double(r.k)), r.seconds / double(r.m));
  }
  for (auto& [op, by_width] : t.shape_index)
    for (auto& [width, pts] : by_width) std::sort(pts.begin(), pts.end());
  for (auto& [dtype, pts] : t.adamw_index) std::sort(pts.begin(), pts.end());
  return t;
}

double KernelTable::best_gemm_rate(const std::string& dtype) const {
  double best = 0;
  for (const KernelRow& r : rows)
    if (r.op == "gemm" && r.dtype == dtype) best = std::max(best, r.flop / r.seconds);
  return best;
}

double KernelTable::gemm_seconds(const std::string& dtype, double m, double n, double k) const {
  auto it = gemm_index.find({dtype, m, n, k});
  return it == gemm_index.end() ? 0.0 : it->second;
}

double KernelTable::sdpa_rate(double head_dim, double seq_len) const {
  // Nearest measured head dim, then fwd + bwd per measured sequence length.
  double hd = 0;
  for (const KernelRow& r : rows)
    if ((r.op == "sdpa_fwd" || r.op == "sdpa_bwd") && (hd == 0 || std::fabs(r.head_dim - head_dim) < std::fabs(hd - head_dim)))
      hd = r.head_dim;
  if (hd == 0) return 0;
  std::map<double, std::pair<double, double>> by_len;  // seq_len -> (flop, seconds) of fwd + bwd
  for (const KernelRow& r : rows)
    if ((r.op == "sdpa_fwd" || r.op == "sdpa_bwd") && r.head_dim == hd) {
      auto& p = by_len[r.seq_len];
      p.first += r.flop;
      p.second += r.seconds;
    }
  std::vector<std::pair<double, double>> pts;  // (log2 seq_len, rate)
  for (auto& [len, p] : by_len) pts.emplace_back(std::log2(len), p.first / p.second);
  return interpolate_clamped(pts, std::log2(seq_len));
}

double KernelTable::shape_seconds(const std::string& op, double m, double n) const {
  auto it = shape_index.find(op);
  if (it == shape_index.end()) return 0;
  std::vector<std::pair<double, double>> across;  // (log2 n, s per element at m)
  for (const auto& [width, pts] : it->second) across.emplace_back(std::log2(width), interpolate_clamped(pts, std::log2(m)));
  return m * n * interpolate_clamped(across, std::log2(n));
}

double KernelTable::rmsnorm_seconds(double m, double n, bool backward) const {
  return shape_seconds(backward ? "rmsnorm_bwd" : "rmsnorm_fwd", m, n);
}

double KernelTable::swiglu_seconds(double m, double n, bool backward) const {
  return shape_seconds(backward ? "swiglu_bwd" : "swiglu_fwd", m, n);
}

double KernelTable::adamw_fused_clip_seconds(const std::string& dtype, double elements, double tensors) const {
  auto it = adamw_index.find(dtype);
  if (it == adamw_index.end() || !(elements > 0) || !(tensors > 0)) return 0;
  return elements * interpolate_clamped(it->second, std::log2(elements / tensors));
}

double KernelTable::copy_bandwidth() const {
  double best = 0;
  for (const KernelRow& r : rows)
    if (r.op == "copy") best = std::max(best, r.bytes / r.seconds);
  return best;
}

std::string KernelTable::torch_release() const {
  const std::string& v = header.torch;
  const size_t first = v.find('.');
  if (first == std::string::npos) return "";
  const size_t end = v.find_first_not_of("0123456789", first + 1);
  const std::string release = v.substr(0, end);
  return is_torch_release(release) ? release : "";
}

const KernelTable& kernel_table_for(const std::string& name) {
  return config_file_table<KernelTable>(name, parse_kernel_table);
}

}  // namespace shardcast::planner
