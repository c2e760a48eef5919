#include "planner/evidence/predict.h"
#include "planner/evidence/crossval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "planner/model/efficiency.h"
#include "planner/evidence/published_csv.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {

std::vector<FitGroup> shipped_fit_groups() {
  // What no source states for these rows: one GEMM factor over the measured MAMF (training
  // shapes and software against mamf-finder's best shape, after tile and wave quantization),
  // the attention rate (the published flash-attention tables, used as they are, miss these
  // rows: docs/validation.md "Attention kernels"), and the host overheads. Memory-bound ops run
  // at the preset's HBM ceiling (hbm_eff = 1: the measured copy bandwidth, a source states it)
  // and torch.compile's fusion at its ideal (compile_elementwise_factor = 1); both families
  // had fitted each to or near that bound (docs/validation.md "Memory-bound ops at the
  // measured bandwidth").
  const std::vector<std::string> base = {"matmul_eff", "attention_eff", "unit_overhead_s", "step_overhead_s"};
  std::vector<std::string> h100 = base;
  h100.push_back("fp8_matmul_eff");
  // Priors, the same for every GPU (fractions of its ceilings; docs/cost-model.md §7): GEMMs of
  // training shapes below the best-shape MAMF, attention at 0.3 of the GEMM ceiling (as a
  // fraction of the family's attention ceiling: 0.3 · matmul_ceiling / attention_ceiling), host
  // overheads of a millisecond per unit and tens of milliseconds per step. Only fitted keys
  // take their prior (fit_groups); a key outside the group keeps its preset value.
  auto prior_of = [](const std::string& preset) {
    const EfficiencyParams e = read_efficiency(load_hardware(preset));
    return std::map<std::string, double>{{"matmul_eff", 0.85},        {"fp8_matmul_eff", 0.85},
                                         {"attention_eff", 0.3 * e.matmul_ceiling / e.attention_ceiling},
                                         {"unit_overhead_s", 0.001},  {"step_overhead_s", 0.03}};
  };
  const double w = kShippedPriorWeight;
  return {
      {"A100 (GA100)", {"A100-80GB-SXM", "A100-40GB-SXM", "A800-80GB-SXM"}, base, prior_of("A100-80GB-SXM"), w},
      {"H100/H200 (GH100)", {"H100-80GB-SXM", "H100-96GB-HBM2e", "H100-unspecified", "H200-141GB-SXM", "H800-80GB-SXM"}, h100,
       prior_of("H100-80GB-SXM"), w},
  };
}

std::string source_key(const PublishedRow& row) {
  std::string s = row.source;
  const size_t paren = s.find(" (");
  if (paren != std::string::npos) s = s.substr(0, paren);
  while (!s.empty() && (s.back() == ' ' || s.back() == ',')) s.pop_back();
  return s;
}

namespace {

const FitGroup* group_of(const std::vector<FitGroup>& groups, const std::string& hw) {
  for (const auto& g : groups)
    if (std::find(g.hardware.begin(), g.hardware.end(), hw) != g.hardware.end()) return &g;
  return nullptr;
}

bool has_tps(const PublishedRow& r) { return r.tokens_per_s_per_gpu && *r.tokens_per_s_per_gpu > 0; }

// The out-of-sample row of case `c` predicted on `hw`; false when the planner refuses the
// configuration (validate reports such a row as unpredictable).
bool predict_row(const std::vector<PublishedRow>& rows, const ValidationCase& c, const HardwareSet& hw,
                 const std::string& source, CrossvalRow& r) {
  const PublishedRow& row = rows[c.row];
  Prediction p;
  try {
    p = predict(c.cfg, hw.at(c.hardware), c.options);
  } catch (const ConfigError&) {
    return false;
  }
  r = CrossvalRow{};
  r.row = c.row;
  r.row_id = row.row_id;
  r.source = source;
  r.hardware = c.hardware;
  r.runtime = c.options.runtime;
  r.regime = band_regime(c.cfg, c.hardware, c.options.framework);
  r.predicted_tps = p.tokens_per_s_per_gpu;
  r.measured_tps = *row.tokens_per_s_per_gpu;
  r.rel_err = r.predicted_tps / r.measured_tps - 1.0;
  return true;
}

}  // namespace

std::vector<std::string> fit_groups(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                                    HardwareSet& hw, const std::vector<FitGroup>& groups, const LmOptions& lm) {
  std::vector<std::string> notes;
  for (const FitGroup& g : groups) {
    std::vector<std::string> present;
    for (const auto& h : g.hardware)
      if (hw.count(h)) present.push_back(h);
    int n = 0;
    for (const auto& c : cases)
      if (std::find(present.begin(), present.end(), c.hardware) != present.end() && has_tps(rows[c.row])) ++n;
    if (n == 0) {
      notes.push_back(g.family + ": no rows, preset values");
      continue;
    }
    for (const auto& h : present)
      for (const auto& k : g.params) hw.at(h).efficiency[k] = g.prior.at(k);
    FitSpec spec;
    spec.hardware = present;
    spec.params = g.params;
    spec.prior_weight = g.prior_weight;
    spec.lm = lm;
    const FitResult f = fit_efficiency(rows, cases, hw, spec);
    std::string values;
    for (const auto& k : g.params) values += fmt::format(" {} = {:.4g}", k, f.values.at(k));
    notes.push_back(fmt::format("{}: refitted on {} rows:{}", g.family, f.n_runs, values));
  }
  return notes;
}

CrossvalResult leave_one_source_out(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                                    const HardwareSet& hardware, const std::vector<FitGroup>& groups,
                                    const LmOptions& lm) {
  std::vector<std::string> sources;
  for (const auto& c : cases) {
    const std::string k = source_key(rows[c.row]);
    if (has_tps(rows[c.row]) && std::find(sources.begin(), sources.end(), k) == sources.end()) sources.push_back(k);
  }
  CrossvalResult out;
  for (const std::string& left_out : sources) {
    CrossvalFold fold;
    fold.source = left_out;
    HardwareSet hw = hardware;
    std::vector<ValidationCase> train;
    for (const auto& c : cases)
      if (source_key(rows[c.row]) != left_out) train.push_back(c);
    fold.notes = fit_groups(rows, train, hw, groups, lm);
    for (const auto& c : cases) {
      if (source_key(rows[c.row]) != left_out || !has_tps(rows[c.row])) continue;
      CrossvalRow r;
      if (predict_row(rows, c, hw, left_out, r)) {
        out.rows.push_back(r);
        ++fold.n_rows;
      }
    }
    out.folds.push_back(std::move(fold));
  }
  return out;
}

CrossvalResult carry_across_families(const std::vector<PublishedRow>& rows, const std::vector<ValidationCase>& cases,
                                     const HardwareSet& hardware, const std::vector<FitGroup>& groups,
                                     const LmOptions& lm) {
  auto in = [](const FitGroup& g, const std::string& hw) {
    return std::find(g.hardware.begin(), g.hardware.end(), hw) != g.hardware.end();
  };
  CrossvalResult out;
  for (const FitGroup& from : groups)
    for (const FitGroup& to : groups) {
      if (&from == &to) continue;
      CrossvalFold fold;
      fold.source = from.family + " → " + to.family;
      HardwareSet hw = hardware;
      fold.notes = fit_groups(rows, cases, hw, {from}, lm);
      const bool has_rows = std::any_of(cases.begin(), cases.end(),
                                        [&](const ValidationCase& c) { return has_tps(rows[c.row]) && in(from, c.hardware); });
      const auto fitted = std::find_if(from.hardware.begin(), from.hardware.end(),
                                       [&](const std::string& h) { return hw.count(h) > 0; });
      if (has_rows && fitted != from.hardware.end()) {
        for (const auto& h : to.hardware) {
          if (!hw.count(h)) continue;
          for (const auto& k : to.params) hw.at(h).efficiency[k] = to.prior.at(k);
          for (const auto& k : from.params) hw.at(h).efficiency[k] = hw.at(*fitted).efficiency.at(k);
        }
        for (const auto& c : cases) {
          if (!has_tps(rows[c.row]) || !in(to, c.hardware)) continue;
          CrossvalRow r;
          if (predict_row(rows, c, hw, fold.source, r)) {
            out.rows.push_back(r);
            ++fold.n_rows;
          }
        }
      }
      out.folds.push_back(std::move(fold));
    }
  return out;
}

std::string out_of_sample_csv(const CrossvalResult& cv) {
  std::string out =
      "row_id,source,hardware,runtime,checkpointing,scale,predicted_tokens_per_s_per_gpu,"
      "measured_tokens_per_s_per_gpu,err_tokens_per_s_pct\n";
  for (const CrossvalRow& r : cv.rows)
    out += fmt::format("{},{},{},{},{},{},{:.1f},{:.1f},{:.2f}\n", csv_field(r.row_id), csv_field(r.source),
                       csv_field(r.hardware), csv_field(r.regime.runtime), csv_field(r.regime.checkpointing),
                       csv_field(r.regime.scale), r.predicted_tps, r.measured_tps, 100 * r.rel_err);
  return out;
}

BandTable build_bands(const std::vector<CrossvalRow>& rows, const std::vector<FitGroup>& groups, int min_rows) {
  BandTable t;
  t.min_rows = min_rows;
  for (const FitGroup& g : groups) {
    // (dimension, value) -> rows, in first-seen order.
    std::vector<std::pair<std::string, std::string>> order;
    std::map<std::pair<std::string, std::string>, std::vector<const CrossvalRow*>> by;
    auto add = [&](const std::string& dim, const std::string& val, const CrossvalRow* r) {
      const auto key = std::make_pair(dim, val);
      if (!by.count(key)) order.push_back(key);
      by[key].push_back(r);
    };
    for (const auto& r : rows) {
      if (group_of(groups, r.hardware) != &g) continue;
      add(kBandAll, "", &r);
      add(kBandRuntime, r.regime.runtime, &r);
      add(kBandCheckpointing, r.regime.checkpointing, &r);
      add(kBandScale, r.regime.scale, &r);
    }
    for (const auto& key : order) {
      const auto& rs = by[key];
      if (int(rs.size()) < min_rows) continue;
      ErrorBand b;
      b.family = g.family;
      b.hardware = g.hardware;
      b.dimension = key.first;
      b.value = key.second;
      double sq = 0;
      std::set<std::string> srcs;
      for (const CrossvalRow* r : rs) {
        sq += r->rel_err * r->rel_err;
        b.rows.push_back(r->row_id);
        if (srcs.insert(r->source).second) b.sources.push_back(r->source);
      }
      b.rel_1sigma = std::sqrt(sq / rs.size());
      b.n_rows = int(rs.size());
      t.bands.push_back(std::move(b));
    }
  }
  const ReferencePairs rp = reference_pairs(reference_rows(rows));
  t.reference = {rp.rel_1sigma, rp.n_pairs, rp.n_groups};
  return t;
}

std::vector<ReferenceRow> reference_rows(const std::vector<CrossvalRow>& rows) {
  std::vector<ReferenceRow> out;
  for (const CrossvalRow& r : rows) out.push_back({r.source, r.hardware, r.runtime, r.predicted_tps, r.measured_tps});
  return out;
}

namespace {
void count(Coverage& c, double rel_err, const BandChoice& b) {
  ++c.n;
  c.within_1sigma += std::fabs(rel_err) <= b.rel_1sigma;
  c.within_2sigma += std::fabs(rel_err) <= 2 * b.rel_1sigma;
  c.prior_only += b.prior_only;
}
double prior(const HardwareSet& hw, const std::string& name, const char* key) {
  auto it = hw.find(name);
  return it == hw.end() ? 0.0 : it->second.efficiency_param(key);
}
}  // namespace

Coverage coverage(const std::vector<CrossvalRow>& rows, const BandTable& t, const HardwareSet& hardware) {
  Coverage c;
  for (const auto& r : rows)
    count(c, r.rel_err,
          choose_band(t, r.regime, prior(hardware, r.hardware, "error_band_rel"),
                      prior(hardware, r.hardware, "error_band_runs")));
  return c;
}

Coverage nested_coverage(const std::vector<CrossvalRow>& rows, const std::vector<FitGroup>& groups, int min_rows,
                         const HardwareSet& hardware) {
  Coverage c;
  std::vector<std::string> sources;
  for (const auto& r : rows)
    if (std::find(sources.begin(), sources.end(), r.source) == sources.end()) sources.push_back(r.source);
  for (const auto& s : sources) {
    std::vector<CrossvalRow> others, mine;
    for (const auto& r : rows) (r.source == s ? mine : others).push_back(r);
    const Coverage part = coverage(mine, build_bands(others, groups, min_rows), hardware);
    c.n += part.n;
    c.within_1sigma += part.within_1sigma;
    c.within_2sigma += part.within_2sigma;
    c.prior_only += part.prior_only;
  }
  return c;
}

}  // namespace shardcast::planner
