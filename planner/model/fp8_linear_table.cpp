#include "planner/model/fp8_linear_table.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "shared/config_io.h"
#include "shared/config_table.h"
#include "shared/csv_fields.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {
constexpr const char* kColumns[] = {"gpu", "recipe", "m", "k", "n", "speedup"};
}  // namespace

Fp8LinearTable parse_fp8_linear_table(const std::string& text, const std::string& file) {
  std::vector<Fp8LinearPoint> out;
  for_each_csv_row(text, kColumns, file, [&](const std::vector<std::string>& f, int line_no) {
    auto number = [&](size_t col) { return positive_csv_number(f[col], kColumns[col], file, line_no); };
    Fp8LinearPoint p;
    p.gpu = f[0];
    if (p.gpu.empty()) throw InputError(fmt::format("{}:{}: column 'gpu' is empty", file, line_no));
    const auto recipe = parse_fp8_recipe(f[1]);
    if (!recipe || *recipe == Fp8Recipe::none)
      throw InputError(fmt::format("{}:{}: column 'recipe': '{}' is not a float8 recipe (tensorwise | rowwise | "
                                   "rowwise_with_gw_hp)", file, line_no, f[1]));
    p.recipe = *recipe;
    p.m = number(2);
    p.k = number(3);
    p.n = number(4);
    p.speedup = number(5);
    p.line = line_no;
    out.push_back(p);
  });

  // Each (gpu, recipe) is a full grid: every (M, K, N) of its distinct values exactly once.
  std::vector<std::pair<std::string, Fp8Recipe>> order;
  std::map<std::pair<std::string, Fp8Recipe>, std::vector<const Fp8LinearPoint*>> groups;
  for (const Fp8LinearPoint& p : out) {
    const auto key = std::make_pair(p.gpu, p.recipe);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&p);
  }
  Fp8LinearTable table;
  for (const auto& key : order) {
    const auto& pts = groups[key];
    std::set<double> ms, ks, ns;
    std::map<std::tuple<double, double, double>, int> seen;
    for (const Fp8LinearPoint* p : pts) {
      ms.insert(p->m);
      ks.insert(p->k);
      ns.insert(p->n);
      const auto [it, fresh] = seen.emplace(std::make_tuple(p->m, p->k, p->n), p->line);
      if (!fresh)
        throw InputError(fmt::format("{}:{}: ({}, {}) shape M={} K={} N={} is already on line {}", file, p->line,
                                     key.first, to_string(key.second), p->m, p->k, p->n, it->second));
    }
    if (seen.size() != ms.size() * ks.size() * ns.size())
      throw InputError(fmt::format("{}: ({}, {}) has {} shapes, not the full grid of {} M × {} K × {} N = {}", file,
                                   key.first, to_string(key.second), seen.size(), ms.size(), ks.size(), ns.size(),
                                   ms.size() * ks.size() * ns.size()));
    Fp8LinearGrid g;
    g.gpu = key.first;
    g.recipe = key.second;
    for (double m : ms) g.log2_m.push_back(std::log2(m));
    for (double k : ks) g.log2_k.push_back(std::log2(k));
    for (double n : ns) g.log2_n.push_back(std::log2(n));
    g.speedup.resize(seen.size());
    auto index = [](const std::set<double>& axis, double x) { return size_t(std::distance(axis.begin(), axis.find(x))); };
    for (const Fp8LinearPoint* p : pts)
      g.speedup[(index(ms, p->m) * ks.size() + index(ks, p->k)) * ns.size() + index(ns, p->n)] = p->speedup;
    table.grids.push_back(std::move(g));
  }
  table.points = std::move(out);
  return table;
}

const Fp8LinearTable& fp8_linear_table() {
  return config_file_table<Fp8LinearTable>("kernels/float8_linear.csv", parse_fp8_linear_table);
}

const Fp8LinearGrid* fp8_linear_grid(const Fp8LinearTable& t, Fp8Recipe recipe, const std::string& gpu) {
  const Fp8LinearGrid* first = nullptr;
  for (const Fp8LinearGrid& g : t.grids) {
    if (g.recipe != recipe) continue;
    if (gpu.compare(0, g.gpu.size(), g.gpu) == 0 && (gpu.size() == g.gpu.size() || gpu[g.gpu.size()] == '-')) return &g;
    if (first == nullptr) first = &g;
  }
  return first;
}

const Fp8LinearGrid* fp8_linear_grid_for(Fp8Recipe recipe, bool compile, int sm_count, const std::string& gpu) {
  if (recipe == Fp8Recipe::none || !compile || sm_count <= 0) return nullptr;
  return fp8_linear_grid(fp8_linear_table(), recipe, gpu);
}

namespace {
// The bracketing indices of x on a sorted axis and the weight of the upper one, clamped.
struct Bracket {
  size_t lo = 0, hi = 0;
  double w = 0;
};
Bracket bracket(const std::vector<double>& axis, double x) {
  if (axis.size() == 1 || x <= axis.front()) return {0, 0, 0};
  if (x >= axis.back()) return {axis.size() - 1, axis.size() - 1, 0};
  const size_t hi = size_t(std::upper_bound(axis.begin(), axis.end(), x) - axis.begin());
  return {hi - 1, hi, (x - axis[hi - 1]) / (axis[hi] - axis[hi - 1])};
}
}  // namespace

double fp8_linear_speedup(const Fp8LinearGrid& g, double M, double K, double N) {
  const Bracket bm = bracket(g.log2_m, std::log2(M)), bk = bracket(g.log2_k, std::log2(K)),
                bn = bracket(g.log2_n, std::log2(N));
  const size_t nk = g.log2_k.size(), nn = g.log2_n.size();
  auto at = [&](size_t i, size_t j, size_t l) { return g.speedup[(i * nk + j) * nn + l]; };
  auto along_n = [&](size_t i, size_t j) { return (1 - bn.w) * at(i, j, bn.lo) + bn.w * at(i, j, bn.hi); };
  auto along_k = [&](size_t i) { return (1 - bk.w) * along_n(i, bk.lo) + bk.w * along_n(i, bk.hi); };
  return (1 - bm.w) * along_k(bm.lo) + bm.w * along_k(bm.hi);
}

double measured_fp8_linear_s(double s, double bf16_linear_s, double other_s, double floor_s) {
  assert(s > 0 && bf16_linear_s >= 0 && other_s >= 0);
  return std::max((bf16_linear_s + other_s) / s - other_s, floor_s);
}

double fp8_benchmark_other_bytes(double M, double K, double N, int act_bytes) {
  const double A = act_bytes;
  return (2.0 * A + 3.0 * A) * M * K + (2.0 * A + 3.0 * A) * M * N;
}

}  // namespace shardcast::planner
