// op_profile.json, the table and the plan reader. See op_profile_report.h.
#include "trainer/profile/op_profile_report.h"

#include <algorithm>
#include <fstream>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shared/errors.h"
#include "shared/config_io.h"

namespace shardcast::trainer {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

constexpr int kOther = int(OpCategory::other);

}  // namespace

double StepOpTimes::counted_s() const {
  double s = 0;
  for (int c = 0; c < kOpCategories; ++c)
    if (c != kOther) s += seconds[size_t(c)];
  return s;
}

OpProfileSummary summarize(const OpProfile& p) {
  if (p.steps.empty()) throw std::invalid_argument("op profile: no profiled steps");
  OpProfileSummary s;
  std::vector<double> step;
  for (const auto& st : p.steps) step.push_back(st.step_s);
  s.step_s = median(step);
  std::array<std::map<std::string, double>, kOpCategories> by_name;
  for (int c = 0; c < kOpCategories; ++c) {
    std::vector<double> t, n;
    for (const auto& st : p.steps) {
      t.push_back(c == kOther ? st.step_s - st.counted_s() : st.seconds[size_t(c)]);
      n.push_back(double(st.count[size_t(c)]));
    }
    s.seconds[size_t(c)] = median(t);
    s.count[size_t(c)] = median(n);
  }
  for (const auto& st : p.steps)
    for (const auto& [key, o] : st.ops) by_name[size_t(key.first)][key.second] += o.seconds / double(p.steps.size());
  for (int c = 0; c < kOpCategories; ++c) {
    auto& v = s.top_ops[size_t(c)];
    v.assign(by_name[size_t(c)].begin(), by_name[size_t(c)].end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  return s;
}

nlohmann::json op_profile_json(const OpProfile& p) {
  const OpProfileSummary s = summarize(p);
  nlohmann::json cats = nlohmann::json::object();
  for (const auto& info : op_categories()) {
    const size_t c = size_t(info.category);
    nlohmann::json per_step = nlohmann::json::array(), counts = nlohmann::json::array();
    for (const auto& st : p.steps) {
      per_step.push_back(int(c) == kOther ? st.step_s - st.counted_s() : st.seconds[c]);
      counts.push_back(st.count[c]);
    }
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [name, sec] : s.top_ops[c]) top.push_back({{"name", name}, {"mean_s", sec}});
    nlohmann::json e = {{"median_s", s.seconds[c]}, {"per_step_s", per_step}, {"ops_per_step", counts}, {"ops", top}};
    if (p.planned) {
      e["planned_s"] = (*p.planned)[c];
      if ((*p.planned)[c] > 0) e["measured_over_planned"] = s.seconds[c] / (*p.planned)[c];
    }
    cats[std::string(info.name)] = e;
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& st : p.steps) steps.push_back(st.step_s);
  nlohmann::json j = {{"schema", 1},
                      {"config", p.config_file},
                      {"model", p.model},
                      {"device", p.device},
                      {"timing", p.timing},
                      {"world_size", p.world_size},
                      {"micro_batch", p.micro_batch},
                      {"seq_len", p.seq_len},
                      {"grad_accum", p.grad_accum},
                      {"warmup_steps", p.warmup_steps},
                      {"profiled_steps", p.steps.size()},
                      {"step_s", {{"median_s", s.step_s}, {"per_step_s", steps}}},
                      {"categories", cats}};
  if (p.planned) j["planned_source"] = p.planned_source;
  return j;
}

std::string format_op_profile(const OpProfile& p, int top_ops) {
  const OpProfileSummary s = summarize(p);
  std::string o = fmt::format(
      "op profile: {} (model {}, {} rank(s), micro_batch {}, seq_len {}, grad_accum {}), device {}, {}; rank 0, "
      "median over {} step(s) after {} warm-up\n",
      p.config_file, p.model, p.world_size, p.micro_batch, p.seq_len, p.grad_accum, p.device, p.timing,
      p.steps.size(), p.warmup_steps);
  o += fmt::format("{:<14} {:>12} {:>11} {:>9} {:>9}  {}\n", "category", "measured ms", "planned ms", "meas/plan",
                   "ops/step", "top ops (mean ms per step)");
  double planned_sum = 0;
  for (const auto& info : op_categories()) {
    const size_t c = size_t(info.category);
    std::string plan = "-", ratio = "-";
    if (p.planned) {
      planned_sum += (*p.planned)[c];
      plan = fmt::format("{:.2f}", 1e3 * (*p.planned)[c]);
      if ((*p.planned)[c] > 0) ratio = fmt::format("{:.2f}", s.seconds[c] / (*p.planned)[c]);
    }
    std::string tops;
    for (int k = 0; k < top_ops && k < int(s.top_ops[c].size()); ++k)
      tops += fmt::format("{}{} {:.2f}", k ? ", " : "", s.top_ops[c][size_t(k)].first, 1e3 * s.top_ops[c][size_t(k)].second);
    o += fmt::format("{:<14} {:>12.2f} {:>11} {:>9} {:>9.0f}  {}\n", info.name, 1e3 * s.seconds[c], plan, ratio,
                     s.count[c], tops);
  }
  const std::string plan_step = p.planned ? fmt::format("{:.2f}", 1e3 * planned_sum) : "-";
  const std::string ratio_step = p.planned && planned_sum > 0 ? fmt::format("{:.2f}", s.step_s / planned_sum) : "-";
  o += fmt::format("{:<14} {:>12.2f} {:>11} {:>9}\n", "step", 1e3 * s.step_s, plan_step, ratio_step);
  o += "(medians per category need not add up to the median step; other = step − counted ops, per step)\n";
  return o;
}

std::array<double, kOpCategories> read_planned_ops(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(fmt::format("--plan {}: cannot read the file", path));
  const std::string text = read_text(path);  // bounded (kMaxInputFileBytes)
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("--plan {}: not JSON ({}); write it with `shardcast plan RUN.toml --json > {}`", path,
                                 e.what(), path));
  }
  if (!j.is_object() || !j.contains("time") || !j["time"].is_object() || !j["time"].contains("ops_s"))
    throw InputError(fmt::format("--plan {}: no key time.ops_s (the per-category breakdown of `shardcast plan "
                                 "--json`; a plan written before it existed must be made again)",
                                 path));
  const auto& ops = j["time"]["ops_s"];
  std::array<double, kOpCategories> out{};
  for (const auto& info : op_categories()) {
    const std::string key(info.name);
    if (!ops.contains(key) || !ops[key].is_number())
      throw InputError(fmt::format("--plan {}: time.ops_s.{} is missing or not a number", path, key));
    out[size_t(info.category)] = ops[key].get<double>();
  }
  return out;
}

}  // namespace shardcast::trainer
