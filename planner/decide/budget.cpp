#include "planner/decide/budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/decimal_text.h"

namespace shardcast::planner {

double budget_criterion(const BudgetRow& r, bool by_cost) { return by_cost ? r.cost : r.gpu_hours; }

std::map<std::string, double> parse_prices(const std::vector<std::string>& items, const std::string& what) {
  std::map<std::string, double> out;
  for (const std::string& it : items) {
    const size_t eq = it.find('=');
    const std::string num = eq == std::string::npos ? "" : it.substr(eq + 1);
    const std::optional<double> parsed = parse_decimal(num);
    const double v = parsed.value_or(0);
    if (eq == 0 || eq == std::string::npos || !parsed)
      throw UsageError(fmt::format("{} '{}' is not TYPE=PRICE (price per GPU-hour, e.g. H100-80GB-SXM=2.5)", what, it));
    if (!out.emplace(it.substr(0, eq), v).second)
      throw UsageError(fmt::format("{} names {} twice", what, it.substr(0, eq)));
  }
  return out;
}


namespace {

void check_options(const BudgetOptions& opt) {
  if (opt.gpu_types.empty()) throw UsageError("scale: no GPU type to search (--gpu-types)");
  for (size_t i = 0; i < opt.gpu_types.size(); ++i)
    if (std::find(opt.gpu_types.begin(), opt.gpu_types.begin() + long(i), opt.gpu_types[i]) !=
        opt.gpu_types.begin() + long(i))
      throw UsageError(fmt::format("scale: --gpu-types names {} twice", opt.gpu_types[i]));
  if (!(opt.deadline_days > 0) || !std::isfinite(opt.deadline_days))
    throw UsageError(fmt::format("scale: --deadline {} days must be > 0", opt.deadline_days));
  for (const auto& [type, price] : opt.price_per_gpu_hour) {
    if (std::find(opt.gpu_types.begin(), opt.gpu_types.end(), type) == opt.gpu_types.end())
      throw UsageError(fmt::format("scale: --price names {}, which is not in --gpu-types", type));
    if (!(price > 0) || !std::isfinite(price))
      throw UsageError(fmt::format("scale: --price {}={} must be > 0", type, price));
  }
  if (!opt.price_per_gpu_hour.empty())
    for (const auto& t : opt.gpu_types)
      if (!opt.price_per_gpu_hour.count(t))
        throw UsageError(fmt::format(
            "scale: --price has no price for {}: give a price per GPU-hour for every GPU type or none "
            "(then plans are ranked by GPU-hours)",
            t));
}

}  // namespace

BudgetResult budget(const BudgetOptions& opt, const std::function<void(double)>& progress) {
  check_options(opt);
  std::vector<HardwareSpec> hw;
  for (const auto& t : opt.gpu_types) hw.push_back(load_hardware(t));
  return budget(opt, hw, progress);
}

BudgetResult budget(const BudgetOptions& opt, const std::vector<HardwareSpec>& hws,
                    const std::function<void(double)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  check_options(opt);
  if (hws.size() != opt.gpu_types.size())
    throw UsageError(fmt::format("budget: {} hardware profiles for {} GPU types", hws.size(), opt.gpu_types.size()));
  BudgetResult r;
  r.by_cost = !opt.price_per_gpu_hour.empty();
  const double deadline = opt.deadline_days;
  const size_t T = opt.gpu_types.size();
  for (size_t k = 0; k < T; ++k) {
    const std::string& type = opt.gpu_types[k];
    const HardwareSpec& hw = hws[k];
    ScaleOptions so = opt.scale;
    so.space.hardware = type;
    auto sub = [&](double f) {
      if (progress) progress((double(k) + f) / double(T));
    };
    const std::vector<ScalePoint> pts = scale(so, hw, sub);
    BudgetBreaks br;
    br.gpu_type = type;
    for (const ScalePoint& p : pts) {
      r.n_candidates += p.n_candidates;
      const bool mb1 = (" " + p.flags + " ").find(" mb1 ") != std::string::npos;
      if (mb1 && !br.mb1_at) br.mb1_at = p.gpus;
      if (!p.batch_met && !br.batch_over_at) br.batch_over_at = p.gpus;
      if (p.comm_exposed && !br.comm_exposed_at) br.comm_exposed_at = p.gpus;
      if (p.goodput_low && !br.goodput_low_at) br.goodput_low_at = p.gpus;
      BudgetRow row;
      row.gpu_type = type;
      row.point = p;
      if (p.feasible) {
        row.days_ideal = p.days;
        row.days = p.days_with_failures;
        // tokens/s within ±e (1σ) => days within [d/(1+e), d/(1−e)].
        const double e = p.best.prediction.error_band_rel;
        row.days_lo = row.days / (1.0 + e);
        row.days_hi = e < 1.0 ? row.days / (1.0 - e) : std::numeric_limits<double>::infinity();
        row.gpu_hours = p.gpu_hours_with_failures;
        if (r.by_cost) row.cost = row.gpu_hours * opt.price_per_gpu_hour.at(type);
        row.meets_deadline = row.days <= deadline;
        row.meets_at_1sigma = row.days_hi <= deadline;
      }
      r.rows.push_back(std::move(row));
    }
    r.breaks.push_back(br);
  }
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const BudgetRow& row = r.rows[i];
    if (!row.point.feasible) continue;
    if (r.fastest < 0 || row.days < r.rows[size_t(r.fastest)].days) r.fastest = long(i);
    if (row.meets_deadline) r.ranked.push_back(i);
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [&](size_t a, size_t b) {
    const double ca = budget_criterion(r.rows[a], r.by_cost), cb = budget_criterion(r.rows[b], r.by_cost);
    if (ca != cb) return ca < cb;
    return r.rows[a].days < r.rows[b].days;
  });
  for (size_t i : r.ranked) {
    const BudgetRow& row = r.rows[i];
    if (r.smallest < 0) {
      r.smallest = long(i);
      continue;
    }
    const BudgetRow& s = r.rows[size_t(r.smallest)];
    // `ranked` is cheapest first, so on equal GPU counts the first one seen is the cheaper.
    if (row.point.gpus < s.point.gpus) r.smallest = long(i);
  }
  r.cheapest_per_type.assign(T, -1);
  for (size_t i : r.ranked) {  // cheapest first, so the first row of each type is its cheapest
    const size_t k = size_t(std::find(opt.gpu_types.begin(), opt.gpu_types.end(), r.rows[i].gpu_type) -
                            opt.gpu_types.begin());
    if (r.cheapest_per_type[k] < 0) r.cheapest_per_type[k] = long(i);
  }
  if (r.ranked.empty() && r.fastest >= 0) r.shortfall_days = r.rows[size_t(r.fastest)].days - deadline;
  if (opt.top > 0 && r.ranked.size() > opt.top) r.ranked.resize(opt.top);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (progress) progress(1.0);
  return r;
}

}  // namespace shardcast::planner
