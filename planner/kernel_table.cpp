#include "planner/kernel_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {
const char* kColumns[] = {"op", "dtype", "m", "n", "k", "batch", "seq_len", "heads", "kv_heads",
                          "head_dim", "bytes", "flop", "seconds"};
const char* kOps[] = {"gemm", "sdpa_fwd", "sdpa_bwd", "rmsnorm_fwd", "rmsnorm_bwd",
                      "cross_entropy_fwd", "cross_entropy_bwd", "copy"};
const char* kHeaderKeys[] = {"gpu", "driver", "torch", "cuda", "date", "command"};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}
}  // namespace

KernelTable parse_kernel_table(const std::string& text, const std::string& file) {
  KernelTable t;
  t.file = file;
  std::istringstream in(text);
  std::string line;
  int no = 0;
  bool have_columns = false;
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    if (line[0] == '#') {
      if (have_columns) throw InputError(fmt::format("{}:{}: a '# key: value' line after the column header", file, no));
      const size_t colon = line.find(':');
      if (colon == std::string::npos)
        throw InputError(fmt::format("{}:{}: header comment must be '# key: value'", file, no));
      t.header[trim(line.substr(1, colon - 1))] = trim(line.substr(colon + 1));
      continue;
    }
    std::vector<std::string> f;
    std::string cur;
    for (char ch : line) {
      if (ch == ',') {
        f.push_back(trim(cur));
        cur.clear();
      } else {
        cur += ch;
      }
    }
    f.push_back(trim(cur));
    if (!have_columns) {
      for (const char* key : kHeaderKeys)
        if (!t.header.count(key))
          throw InputError(fmt::format("{}: missing header comment '# {}: ...' (required: gpu, driver, torch, cuda, date, command)",
                                       file, key));
      if (f.size() != std::size(kColumns))
        throw InputError(fmt::format("{}:{}: {} columns, expected {} (op,dtype,m,n,k,batch,seq_len,heads,kv_heads,head_dim,bytes,flop,seconds)",
                                     file, no, f.size(), std::size(kColumns)));
      for (size_t i = 0; i < f.size(); ++i)
        if (f[i] != kColumns[i])
          throw InputError(fmt::format("{}:{}: column {} is '{}', expected '{}'", file, no, i + 1, f[i], kColumns[i]));
      have_columns = true;
      continue;
    }
    if (f.size() != std::size(kColumns))
      throw InputError(fmt::format("{}:{}: {} fields, expected {}", file, no, f.size(), std::size(kColumns)));
    KernelRow r;
    r.line = no;
    r.op = f[0];
    if (std::find_if(std::begin(kOps), std::end(kOps), [&](const char* o) { return r.op == o; }) == std::end(kOps))
      throw InputError(fmt::format("{}:{}: column 'op': '{}' is not gemm | sdpa_fwd | sdpa_bwd | rmsnorm_fwd | "
                                   "rmsnorm_bwd | cross_entropy_fwd | cross_entropy_bwd | copy",
                                   file, no, r.op));
    r.dtype = f[1];
    if (r.dtype.empty()) throw InputError(fmt::format("{}:{}: column 'dtype' is empty", file, no));
    double* num[] = {&r.m, &r.n, &r.k, &r.batch, &r.seq_len, &r.heads, &r.kv_heads, &r.head_dim,
                     &r.bytes, &r.flop, &r.seconds};
    for (size_t c = 2; c < f.size(); ++c) {
      if (f[c].empty()) continue;  // a column the op does not use
      char* end = nullptr;
      const double x = std::strtod(f[c].c_str(), &end);
      if (end != f[c].c_str() + f[c].size() || !std::isfinite(x) || x < 0)
        throw InputError(fmt::format("{}:{}: column '{}': '{}' is not a number >= 0", file, no, kColumns[c], f[c]));
      *num[c - 2] = x;
    }
    if (!(r.seconds > 0)) throw InputError(fmt::format("{}:{}: column 'seconds' must be > 0", file, no));
    if (r.op == "gemm") {
      if (!(r.m > 0 && r.n > 0 && r.k > 0))
        throw InputError(fmt::format("{}:{}: column 'm': a gemm row needs m, n, k > 0", file, no));
      const double want = 2.0 * r.m * r.n * r.k;
      if (std::fabs(r.flop - want) > 1e-9 * want)
        throw InputError(fmt::format("{}:{}: column 'flop': {} is not 2·m·n·k = {}", file, no, r.flop, want));
      t.gemm_index[{r.dtype, r.m, r.n, r.k}] = r.seconds;
    } else if (r.op == "sdpa_fwd" || r.op == "sdpa_bwd") {
      if (!(r.seq_len > 0 && r.head_dim > 0 && r.flop > 0))
        throw InputError(fmt::format("{}:{}: column 'seq_len': an sdpa row needs seq_len, head_dim and flop > 0", file, no));
    } else if (r.op == "copy") {
      if (!(r.bytes > 0)) throw InputError(fmt::format("{}:{}: column 'bytes': a copy row needs bytes > 0", file, no));
    }
    t.rows.push_back(r);
  }
  if (!have_columns) throw InputError(file + ": no column header (op,dtype,m,n,k,...)");
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
  const double x = std::log2(seq_len);
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second;
  for (size_t i = 1; i < pts.size(); ++i)
    if (x <= pts[i].first) {
      const double w = (x - pts[i - 1].first) / (pts[i].first - pts[i - 1].first);
      return pts[i - 1].second + w * (pts[i].second - pts[i - 1].second);
    }
  return pts.back().second;
}

double KernelTable::copy_bandwidth() const {
  double best = 0;
  for (const KernelRow& r : rows)
    if (r.op == "copy") best = std::max(best, r.bytes / r.seconds);
  return best;
}

const KernelTable& kernel_table_for(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<KernelTable>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it == cache.end()) {
    const std::filesystem::path p = std::filesystem::path(name).is_absolute() ? std::filesystem::path(name)
                                                                               : config_dir() / name;
    it = cache.emplace(name, std::make_unique<KernelTable>(parse_kernel_table(read_text(p), p.string()))).first;
  }
  return *it->second;
}

}  // namespace shardcast::planner
