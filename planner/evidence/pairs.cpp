#include "planner/evidence/pairs.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/evidence/crossval.h"
#include "planner/model/ops.h"
#include "shared/config_io.h"
#include "shared/config_schema.h"

namespace shardcast::planner {

namespace {

// Tables and keys of run.toml that no prediction reads (the trainer's own settings).
bool ignored(const TrainConfigKey& k) {
  static const std::set<std::string> tables = {"optimizer", "lr_schedule", "data", "checkpoint", "metrics", "comm",
                                               "prediction"};
  static const std::set<std::string> keys = {"training.steps", "training.seed", "training.max_grad_norm"};
  return tables.count(k.table()) || keys.count(k.path);
}

// The model's shape: what the planner reads of [model] (its name and the numerics of RoPE and
// the norm do not change a prediction; max_seq_len follows training.seq_len).
std::string model_shape(const ModelSpec& m) {
  return fmt::format("{} layers, d {}, {}/{} heads, ffn {}, vocab {}, {}{}", m.n_layers, m.d_model, m.n_heads,
                     m.n_kv_heads, m.ffn_dim, m.vocab, to_string(m.mlp_type), m.tied_embeddings ? ", tied" : "");
}

// GPU count: nodes and GPUs per node together (a run of 4 GPUs is one partial node).
constexpr const char* kClusterSetting = "cluster.nodes x cluster.gpus_per_node";

// Which setting a key belongs to: the terms that only act with another one are counted with it.
std::string setting_of(const std::string& key) {
  if (key == "activation_checkpointing.ratio") return "activation_checkpointing.mode";
  if (key == "parallelism.hsdp_shard_size") return "parallelism.sharding_strategy";
  if (key == "fp8_all_gather" || key == "fp8_weight_saved") return "precision.fp8";
  if (key == "cluster.nodes" || key == "cluster.gpus_per_node") return kClusterSetting;
  return key;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> row_settings(const TrainConfig& resolved) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TrainConfigKey& k : train_config_schema()) {
    if (ignored(k)) continue;
    if (k.special()) {
      if (std::string(k.path) == "model.preset") out.emplace_back("model", model_shape(resolved.model));
      continue;  // the other [model] keys are in the shape
    }
    out.emplace_back(k.path, train_config_value(k, resolved).value_or(""));
  }
  return out;
}

namespace {

// The settings (setting_of) whose keys hold different values in `a` and `b` (the same keys).
std::set<std::string> differing(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  std::set<std::string> out;
  for (const auto& [k, v] : a)
    if (b.at(k) != v) out.insert(setting_of(k));
  return out;
}

std::map<std::string, std::string> as_map(const std::vector<std::pair<std::string, std::string>>& v) {
  return {v.begin(), v.end()};
}

}  // namespace

std::set<std::string> settings_differing(const TrainConfig& a, const TrainConfig& b) {
  return differing(as_map(row_settings(a)), as_map(row_settings(b)));
}

namespace {

// The settings a pair compares: row_settings plus the row's resolved runtime terms (its own
// columns override its runtime profile's: validate.cpp resolve_cases).
std::map<std::string, std::string> settings_of(const ValidationCase& c) {
  std::map<std::string, std::string> s = as_map(row_settings(c.cfg));
  s["cross_entropy"] = to_string(c.options.cross_entropy);
  s["rmsnorm"] = to_string(c.options.rmsnorm);
  s["cudnn_attention"] = c.options.attention_cudnn ? "cuDNN attention" : "";
  s["adamw_update"] = to_string(c.options.adamw_update);
  const bool fp8 = c.cfg.precision.fp8 != Fp8Recipe::none;
  s["fp8_all_gather"] = fp8 && c.options.fp8_all_gather ? "fp8 all-gather" : "";
  s["fp8_weight_saved"] = fp8 ? (c.options.fp8_weight_saved ? "fp8 weight saved" : "fp8 weight recomputed") : "";
  return s;
}

// The value of a setting: its keys' values, the setting's own key first.
std::string joined(const std::map<std::string, std::string>& s, const std::string& setting) {
  if (setting == kClusterSetting) return s.at("cluster.nodes") + " x " + s.at("cluster.gpus_per_node");
  std::string v = s.count(setting) ? s.at(setting) : "";
  for (const auto& [k, x] : s)
    if (k != setting && setting_of(k) == setting && !x.empty()) v += (v.empty() ? "" : ", ") + x;
  return v;
}

}  // namespace

namespace {

struct PairEntry {
  size_t row;  // index into the rows
  std::vector<std::string> values;  // the settings' values, in the key order of `keys`
  double measured, predicted;
};

// The pairs (i, j), i < j, of one source's entries that differ in at most one setting, in
// O(settings · n · keys + pairs) rather than comparing every two entries: for each setting X, the
// entries are bucketed by every value outside X (a bucket holds entries that differ in X alone
// or not at all) and, inside a bucket, by X's values; only entries of different X values pair
// under X. Entries equal in every key pair once, under "none" (setting ""), from one bucket of
// the full values.
void source_pairs(const std::vector<PairEntry>& e, const std::vector<size_t>& members,
                  const std::vector<std::string>& keys, std::vector<std::tuple<size_t, size_t, std::string>>& out) {
  std::map<std::string, std::vector<size_t>> of_setting;  // setting -> its keys' positions
  for (size_t k = 0; k < keys.size(); ++k) of_setting[setting_of(keys[k])].push_back(k);
  auto joined_values = [&](size_t i, const std::vector<bool>& take) {
    std::string key;
    for (size_t k = 0; k < keys.size(); ++k)
      if (take[k]) key += e[i].values[k] + '\x1f';
    return key;
  };
  std::vector<bool> all(keys.size(), true);
  std::map<std::string, std::vector<size_t>> same;  // every value -> entries
  for (size_t i : members) same[joined_values(i, all)].push_back(i);
  for (const auto& [v, group] : same)
    for (size_t a = 0; a < group.size(); ++a)
      for (size_t b = a + 1; b < group.size(); ++b) out.emplace_back(group[a], group[b], "");
  for (const auto& [setting, positions] : of_setting) {
    std::vector<bool> outside(keys.size(), true), inside(keys.size(), false);
    for (size_t k : positions) outside[k] = false, inside[k] = true;
    std::map<std::string, std::map<std::string, std::vector<size_t>>> buckets;  // outside X -> X's values -> entries
    for (size_t i : members) buckets[joined_values(i, outside)][joined_values(i, inside)].push_back(i);
    for (const auto& [rest, by_value] : buckets)
      for (auto x = by_value.begin(); x != by_value.end(); ++x)
        for (auto y = std::next(x); y != by_value.end(); ++y)
          for (size_t a : x->second)
            for (size_t b : y->second) out.emplace_back(std::min(a, b), std::max(a, b), setting);
  }
}

}  // namespace

std::vector<ConfigPair> find_pairs(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                                   const ValidationResult& result) {
  // Entries in the order of `cases` (a pair's a comes first); rows by index, not by row_id.
  std::vector<PairEntry> entries;
  std::vector<std::string> keys;
  std::vector<std::string> source_order;
  std::map<std::string, std::vector<size_t>> by_source;  // source_key -> entries
  for (const auto& c : cases) {
    const ValidationRowResult& r = result.rows.at(c.row);
    if (!(r.skip_reason.empty() && r.has_tps && r.measured_tps > 0 && r.predicted_tps > 0)) continue;
    const std::map<std::string, std::string> settings = settings_of(c);
    if (keys.empty())
      for (const auto& [k, v] : settings) keys.push_back(k);
    PairEntry e{c.row, {}, r.measured_tps, r.predicted_tps};
    for (const std::string& k : keys) e.values.push_back(settings.at(k));  // every case has the same keys
    const std::string source = source_key(rows[c.row]);
    if (!by_source.count(source)) source_order.push_back(source);
    by_source[source].push_back(entries.size());
    entries.push_back(std::move(e));
  }
  std::vector<std::tuple<size_t, size_t, std::string>> found;  // entry a < entry b, setting ("" = none)
  for (const std::string& source : source_order) source_pairs(entries, by_source.at(source), keys, found);
  std::sort(found.begin(), found.end());
  std::vector<ConfigPair> out;
  out.reserve(found.size());
  for (const auto& [i, j, setting] : found) {
    const PairEntry& a = entries[i];
    const PairEntry& b = entries[j];
    ConfigPair p;
    p.source = source_key(rows[a.row]);
    p.setting = setting.empty() ? "none" : setting;
    p.row_a = rows[a.row].row_id;
    p.row_b = rows[b.row].row_id;
    if (!setting.empty()) {
      std::map<std::string, std::string> sa, sb;
      for (size_t k = 0; k < keys.size(); ++k) sa[keys[k]] = a.values[k], sb[keys[k]] = b.values[k];
      p.value_a = joined(sa, p.setting);
      p.value_b = joined(sb, p.setting);
    }
    p.measured_ratio = b.measured / a.measured;
    p.predicted_ratio = b.predicted / a.predicted;
    p.err = p.predicted_ratio / p.measured_ratio - 1.0;
    p.decided = std::fabs(p.measured_ratio - 1.0) >= kPairTie;
    // A predicted ratio of exactly 1 (no setting the planner sees differs) ranks nothing.
    p.order_right = p.decided && (p.measured_ratio > 1.0 ? p.predicted_ratio > 1.0 : p.predicted_ratio < 1.0);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<PairSummary> summarize_pairs(const std::vector<ConfigPair>& pairs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ConfigPair*>> by;
  for (const auto& p : pairs) {
    if (!by.count(p.setting)) order.push_back(p.setting);
    by[p.setting].push_back(&p);
  }
  auto summarize = [](const std::string& name, const std::vector<const ConfigPair*>& ps) {
    PairSummary s;
    s.setting = name;
    s.n = int(ps.size());
    for (const ConfigPair* p : ps) {
      s.mape += 100 * std::fabs(p->err);
      s.bias += 100 * p->err;
      s.max_abs = std::max(s.max_abs, 100 * std::fabs(p->err));
      s.mape_no_difference += 100 * std::fabs(1.0 / p->measured_ratio - 1.0);
      s.decided += p->decided;
      s.order_right += p->order_right;
    }
    if (s.n > 0) {
      s.mape /= s.n;
      s.bias /= s.n;
      s.mape_no_difference /= s.n;
    }
    return s;
  };
  std::vector<PairSummary> out;
  std::vector<const ConfigPair*> all;
  for (const auto& name : order) out.push_back(summarize(name, by.at(name)));
  for (const auto& p : pairs) all.push_back(&p);
  out.push_back(summarize(kEveryPair, all));
  return out;
}

SourceLevelSplit source_level_split(const std::vector<PublishedRow>& rows, const ValidationResult& result) {
  std::map<std::string, std::string> source_of;  // row_id -> source_key
  for (const PublishedRow& r : rows) source_of[r.row_id] = source_key(r);
  std::map<std::string, std::vector<double>> errors;  // source_key -> the rows' errors, %
  for (const ValidationRowResult& r : result.rows) {
    if (!r.skip_reason.empty() || !r.has_tps) continue;
    const auto it = source_of.find(r.row_id);
    if (it != source_of.end()) errors[it->second].push_back(r.err_tps_pct);
  }
  SourceLevelSplit s;
  for (const auto& [source, e] : errors) {
    if (e.size() < 2) continue;
    double mean = 0;
    for (double x : e) mean += x;
    mean /= double(e.size());
    const double dof = std::sqrt(double(e.size()) / double(e.size() - 1));
    for (double x : e) {
      s.mape += std::fabs(x);
      s.level += std::fabs(mean);
      s.within += std::fabs(x - mean) * dof;
    }
    ++s.sources;
    s.rows += int(e.size());
  }
  if (s.rows > 0) {
    s.mape /= s.rows;
    s.level /= s.rows;
    s.within /= s.rows;
  }
  return s;
}

std::vector<ReferenceRow> reference_rows(const std::vector<PublishedRow>& rows, const ValidationResult& result) {
  std::map<std::string, std::string> source_of;  // row_id -> source_key
  for (const PublishedRow& r : rows) source_of[r.row_id] = source_key(r);
  std::vector<ReferenceRow> out;
  for (const ValidationRowResult& r : result.rows) {
    if (!r.skip_reason.empty() || !r.has_tps) continue;
    const auto it = source_of.find(r.row_id);
    if (it != source_of.end()) out.push_back({it->second, r.hardware, r.runtime, r.predicted_tps, r.measured_tps});
  }
  return out;
}

void to_json(nlohmann::json& j, const ConfigPair& p) {
  j = {{"source", p.source},
       {"setting", p.setting},
       {"row_a", p.row_a},
       {"row_b", p.row_b},
       {"value_a", p.value_a},
       {"value_b", p.value_b},
       {"measured_ratio", p.measured_ratio},
       {"predicted_ratio", p.predicted_ratio},
       {"err_ratio_pct", 100 * p.err},
       {"decided", p.decided},
       {"order_right", p.order_right}};
}

void to_json(nlohmann::json& j, const PairSummary& s) {
  j = {{"setting", s.setting}, {"n", s.n},           {"mape_ratio_pct", s.mape}, {"bias_ratio_pct", s.bias},
       {"max_abs_ratio_pct", s.max_abs}, {"mape_no_difference_pct", s.mape_no_difference},
       {"decided", s.decided}, {"order_right", s.order_right}};
}

}  // namespace shardcast::planner
