#include "planner/model/kernel_rates.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <map>
#include <queue>
#include <sstream>

#include <fmt/format.h>

#include "shared/config_io.h"
#include "shared/config_table.h"
#include "shared/csv_fields.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {
double one_orientation(double m, double n, double k, double rate, int sms, double tm, double tn, double tk) {
  const double tiles = std::ceil(m / tm) * std::ceil(n / tn);
  const double waves = std::ceil(tiles / sms);
  const double tile_flop = 2.0 * tm * tn * std::ceil(k / tk) * tk;
  return waves * tile_flop / (rate / sms);
}
}  // namespace

double gemm_time_tiled(double m, double n, double k, double rate, const GemmGrid& g) {
  assert(g.sm_count > 0 && g.tile_m > 0 && g.tile_n > 0 && g.tile_k > 0 && rate > 0);
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  return std::min(one_orientation(m, n, k, rate, g.sm_count, g.tile_m, g.tile_n, g.tile_k),
                  one_orientation(m, n, k, rate, g.sm_count, g.tile_n, g.tile_m, g.tile_k));
}

double gemm_time_reference(double m, double n, double k, double rate, const GemmGrid& g) {
  assert(g.sm_count > 0 && g.tile_m > 0 && g.tile_n > 0 && g.tile_k > 0 && rate > 0);
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  double best = 0;
  for (int orient = 0; orient < 2; ++orient) {
    const double tm = orient ? g.tile_n : g.tile_m, tn = orient ? g.tile_m : g.tile_n;
    // Padded K: the main loop runs whole K steps.
    double k_pad = 0;
    while (k_pad < k) k_pad += g.tile_k;
    const double per_tile = 2.0 * tm * tn * k_pad / (rate / g.sm_count);
    const long tiles_m = long(std::ceil(m / tm)), tiles_n = long(std::ceil(n / tn));
    // Every SM takes the next tile when it is free (a persistent-kernel schedule).
    std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
    for (int s = 0; s < g.sm_count; ++s) free_at.push(0.0);
    double end = 0;
    for (long i = 0; i < tiles_m * tiles_n; ++i) {
      const double t = free_at.top() + per_tile;
      free_at.pop();
      free_at.push(t);
      end = std::max(end, t);
    }
    best = orient == 0 ? end : std::min(best, end);
  }
  return best;
}

// The largest head dimension the table may state: kMaxHeadDim (shared/model_spec.h).

std::vector<AttentionPoint> parse_attention_table(const std::string& text, const std::string& file) {
  static const char* kColumns[] = {"gpu", "kernel", "head_dim", "causal", "seq_len", "tflops", "mamf_tflops"};
  std::vector<AttentionPoint> out;
  for_each_csv_row(text, kColumns, file, [&](const std::vector<std::string>& f, int line_no) {
    auto number = [&](size_t col) { return positive_csv_number(f[col], kColumns[col], file, line_no); };
    AttentionPoint p;
    p.gpu = f[0];
    p.kernel = f[1];
    if (p.kernel != "flash2" && p.kernel != "flash_triton")
      throw InputError(fmt::format("{}:{}: column 'kernel': '{}' is not flash2 | flash_triton", file, line_no, p.kernel));
    p.head_dim = positive_csv_integer(f[2], kColumns[2], file, line_no, kMaxHeadDim);
    if (f[3] != "0" && f[3] != "1")
      throw InputError(fmt::format("{}:{}: column 'causal': '{}' is not 0 | 1", file, line_no, f[3]));
    p.causal = f[3] == "1";
    p.seq_len = number(4);
    p.flops = number(5) * 1e12;
    p.mamf_flops = number(6) * 1e12;
    p.line = line_no;
    out.push_back(p);
  });
  return out;
}

const std::vector<AttentionPoint>& attention_table() {
  return config_file_table<std::vector<AttentionPoint>>("kernels/flash_attention.csv", parse_attention_table);
}

double interpolate_clamped(const std::vector<std::pair<double, double>>& pts, double x) {
  if (pts.empty()) return 0;
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second;
  for (size_t i = 1; i < pts.size(); ++i)
    if (x <= pts[i].first) {
      const double w = (x - pts[i - 1].first) / (pts[i].first - pts[i - 1].first);
      return pts[i - 1].second + w * (pts[i].second - pts[i - 1].second);
    }
  return pts.back().second;
}

namespace {
// Rate of (gpu, kernel) at one head_dim, interpolated in log2(seq_len); 0 when no rows.
double rate_at_head_dim(const std::vector<AttentionPoint>& t, const std::string& gpu, const std::string& kernel,
                        int head_dim, bool causal, double seq_len) {
  std::vector<std::pair<double, double>> pts;  // (log2 seq, rate)
  for (const AttentionPoint& p : t)
    if (p.gpu == gpu && p.kernel == kernel && p.head_dim == head_dim && p.causal == causal)
      pts.emplace_back(std::log2(p.seq_len), p.flops);
  std::sort(pts.begin(), pts.end());
  return interpolate_clamped(pts, std::log2(seq_len));
}

// Rate of (gpu, kernel), interpolated in head_dim between the table's head dims; 0 when none.
double rate_on(const std::vector<AttentionPoint>& t, const std::string& gpu, const std::string& kernel, double head_dim,
               bool causal, double seq_len) {
  std::vector<int> dims;
  for (const AttentionPoint& p : t)
    if (p.gpu == gpu && p.kernel == kernel && p.causal == causal &&
        std::find(dims.begin(), dims.end(), p.head_dim) == dims.end())
      dims.push_back(p.head_dim);
  if (dims.empty()) return 0;
  std::sort(dims.begin(), dims.end());
  if (head_dim <= dims.front()) return rate_at_head_dim(t, gpu, kernel, dims.front(), causal, seq_len);
  if (head_dim >= dims.back()) return rate_at_head_dim(t, gpu, kernel, dims.back(), causal, seq_len);
  for (size_t i = 1; i < dims.size(); ++i)
    if (head_dim <= dims[i]) {
      const double lo = rate_at_head_dim(t, gpu, kernel, dims[i - 1], causal, seq_len);
      const double hi = rate_at_head_dim(t, gpu, kernel, dims[i], causal, seq_len);
      const double w = (head_dim - dims[i - 1]) / double(dims[i] - dims[i - 1]);
      return lo + w * (hi - lo);
    }
  return 0;
}

double mamf_of(const std::vector<AttentionPoint>& t, const std::string& gpu) {
  for (const AttentionPoint& p : t)
    if (p.gpu == gpu) return p.mamf_flops;
  return 0;
}
}  // namespace

double attention_rate(const std::vector<AttentionPoint>& table, const std::string& bench_gpu, const std::string& kernel,
                      double head_dim, bool causal, double seq_len, double target_mamf) {
  const double bench_mamf = mamf_of(table, bench_gpu);
  if (bench_mamf <= 0)
    throw ConfigError("configs/kernels/flash_attention.csv", "gpu.attention_benchmark",
                      fmt::format("no rows for GPU '{}'", bench_gpu));
  double r = rate_on(table, bench_gpu, kernel, head_dim, causal, seq_len);
  if (r <= 0) {
    // The kernel's ratio to flash2 on a GPU that has both, times flash2 here.
    const double here = rate_on(table, bench_gpu, "flash2", head_dim, causal, seq_len);
    for (const AttentionPoint& p : table) {
      if (p.gpu == bench_gpu || p.kernel != kernel) continue;
      const double k_other = rate_on(table, p.gpu, kernel, head_dim, causal, seq_len);
      const double f_other = rate_on(table, p.gpu, "flash2", head_dim, causal, seq_len);
      if (k_other > 0 && f_other > 0 && here > 0) {
        r = here * k_other / f_other;
        break;
      }
    }
  }
  if (r <= 0)
    throw ConfigError("configs/kernels/flash_attention.csv", "gpu.attention_benchmark",
                      fmt::format("no rate for kernel '{}' on '{}' (causal {}) nor a flash2 ratio to carry it", kernel,
                                  bench_gpu, causal ? 1 : 0));
  return r * target_mamf / bench_mamf;
}

}  // namespace shardcast::planner
