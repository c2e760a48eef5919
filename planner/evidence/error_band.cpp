#include "planner/evidence/error_band.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "shared/config_io.h"
#include "shared/config_table.h"
#include "shared/errors.h"
#include "shared/toml_reader.h"

namespace shardcast::planner {

std::string checkpointing_regime(AcMode mode) {
  switch (mode) {
    case AcMode::none: return "none";
    case AcMode::full: return "full";
    case AcMode::selective:
    case AcMode::selective_op: return "selective";
  }
  return "none";
}

std::string scale_regime(int nodes) { return nodes <= 1 ? "single-node" : "multi-node"; }

BandRegime band_regime(const TrainConfig& cfg, const std::string& hardware, const std::string& framework) {
  return {hardware, framework, checkpointing_regime(cfg.activation_checkpointing.mode), scale_regime(cfg.cluster.nodes)};
}

namespace {

bool covers(const ErrorBand& b, const std::string& hw) {
  return std::find(b.hardware.begin(), b.hardware.end(), hw) != b.hardware.end();
}

std::string pct(double rel) { return fmt::format("±{:.0f}%", 100.0 * rel); }

std::string prior_note(double rel, double runs, const std::string& hw) {
  if (runs >= 1) return fmt::format("{} (1σ over {:.0f} measured runs)", pct(rel), runs);
  return fmt::format("{} (prior only: no published run on {})", pct(rel), hw);
}

}  // namespace

std::string band_verdict(double rel_err, double band_rel) {
  if (!(band_rel > 0)) return "no band stated";
  if (std::fabs(rel_err) <= band_rel) return fmt::format("inside the stated 1σ band ({})", pct(band_rel));
  return fmt::format("outside the stated 1σ band ({}): {:+.1f}σ", pct(band_rel), rel_err / band_rel);
}

std::string band_verdict_short(double rel_err, double band_rel) {
  if (!(band_rel > 0)) return "-";
  if (std::fabs(rel_err) <= band_rel) return "in 1σ";
  return fmt::format("out {:+.1f}σ", rel_err / band_rel);
}

BandChoice choose_band(const BandTable& t, const BandRegime& r, double prior_rel, double prior_runs) {
  const ErrorBand* overall = nullptr;
  const ErrorBand* widest = nullptr;
  const ErrorBand* widest_runtime = nullptr;  // over every runtime of the family
  bool runtime_measured = false;
  for (const ErrorBand& b : t.bands) {
    if (!covers(b, r.hardware)) continue;
    bool match = false;
    if (b.dimension == kBandAll) {
      overall = &b;
      match = true;
    } else if (b.dimension == kBandRuntime) {
      if (!widest_runtime || b.rel_1sigma > widest_runtime->rel_1sigma) widest_runtime = &b;
      match = b.value == r.runtime;
      runtime_measured |= match;
    } else if (b.dimension == kBandCheckpointing) {
      match = b.value == r.checkpointing;
    } else if (b.dimension == kBandScale) {
      match = b.value == r.scale;
    }
    if (match && (!widest || b.rel_1sigma > widest->rel_1sigma)) widest = &b;
  }
  BandChoice c;
  if (!overall) {
    c.rel_1sigma = prior_rel;
    c.note = prior_note(prior_rel, prior_runs, r.hardware);
    c.prior_only = prior_runs < 1;
    return c;
  }
  if (!runtime_measured && widest_runtime && widest_runtime->rel_1sigma > widest->rel_1sigma) widest = widest_runtime;
  c.rel_1sigma = widest->rel_1sigma;
  const std::string regime =
      widest->dimension == kBandAll ? widest->family : widest->family + ", " + widest->dimension + " " + widest->value;
  c.note = fmt::format("{} (1σ leave-one-source-out: {}, {} runs of {} sources)", pct(c.rel_1sigma), regime,
                       widest->n_rows, widest->sources.size());
  if (!runtime_measured) {
    c.prior_only = true;
    c.note += fmt::format("; prior only for runtime {}: no published run of it on {}", r.runtime.empty() ? "(none)" : r.runtime,
                          widest->family);
  }
  return c;
}

BandTable parse_bands_toml(const std::string& text, const std::string& file) {
  const toml::table t = parse_toml(text, file);
  TableReader r(t, file, "");
  BandTable out;
  r.get("method", out.method);
  r.get("command", out.command);
  if (!r.get("min_rows", out.min_rows) || out.min_rows < 1)
    throw ConfigError(file, "min_rows", "must be given and >= 1");
  r.allow("band");
  r.allow("reference_run");
  r.finish();
  if (t.contains("reference_run")) {
    const toml::table* rt = t["reference_run"].as_table();
    if (!rt) throw ConfigError(file, "reference_run", "expected a table");
    TableReader rr(*rt, file, "reference_run.");
    rr.get("rel_1sigma", out.reference.rel_1sigma);
    rr.get("n_pairs", out.reference.n_pairs);
    rr.get("n_groups", out.reference.n_groups);
    rr.finish();
    if (!(out.reference.rel_1sigma > 0)) throw ConfigError(file, "reference_run.rel_1sigma", "must be > 0");
    if (out.reference.n_pairs < 1 || out.reference.n_groups < 1)
      throw ConfigError(file, "reference_run", "n_pairs and n_groups must be >= 1");
  }
  const toml::array* bands = t["band"].as_array();
  if (!bands) {
    if (t.contains("band")) throw ConfigError(file, "band", "expected [[band]] tables");
    return out;  // no measured bands: every prediction states its preset's prior
  }
  for (size_t i = 0; i < bands->size(); ++i) {
    const toml::table* bt = (*bands)[i].as_table();
    const std::string where = fmt::format("band[{}].", i);
    if (!bt) throw ConfigError(file, where, "expected a table");
    TableReader br(*bt, file, where);
    ErrorBand b;
    br.get("family", b.family);
    br.get("dimension", b.dimension);
    br.get("value", b.value);
    br.get("rel_1sigma", b.rel_1sigma);
    br.get("n_rows", b.n_rows);
    for (auto [key, list] : {std::pair{"hardware", &b.hardware}, {"sources", &b.sources}, {"rows", &b.rows}})
      if (!br.get(key, *list)) throw ConfigError(file, where + key, "expected an array of strings");
    br.finish();
    const std::vector<std::string> dims = {kBandAll, kBandRuntime, kBandCheckpointing, kBandScale};
    if (std::find(dims.begin(), dims.end(), b.dimension) == dims.end())
      throw ConfigError(file, where + "dimension", "\"" + b.dimension + "\" is not all | runtime | checkpointing | scale");
    if (!(b.rel_1sigma > 0)) throw ConfigError(file, where + "rel_1sigma", "must be > 0");
    if (b.n_rows != int(b.rows.size()))
      throw ConfigError(file, where + "n_rows", fmt::format("is {} but rows lists {}", b.n_rows, b.rows.size()));
    out.bands.push_back(std::move(b));
  }
  return out;
}

std::string write_bands_toml(const BandTable& t) {
  std::ostringstream os;
  os << "# Cross-validated error bands of tokens/s (docs/validation.md, docs/cost-model.md §8).\n"
     << "# Written by the command below; do not edit by hand.\n";
  toml::table head{{"method", t.method}, {"command", t.command}, {"min_rows", int64_t(t.min_rows)}};
  os << head << "\n";
  if (t.reference.rel_1sigma > 0) {
    toml::table rt{{"rel_1sigma", t.reference.rel_1sigma},
                   {"n_pairs", int64_t(t.reference.n_pairs)},
                   {"n_groups", int64_t(t.reference.n_groups)}};
    os << "\n[reference_run]\n" << rt << "\n";
  }
  for (const ErrorBand& b : t.bands) {
    auto arr = [](const std::vector<std::string>& v) {
      toml::array a;
      for (const auto& s : v) a.push_back(s);
      return a;
    };
    toml::table bt{{"family", b.family},   {"hardware", arr(b.hardware)}, {"dimension", b.dimension},
                   {"value", b.value},     {"rel_1sigma", b.rel_1sigma},  {"n_rows", int64_t(b.n_rows)},
                   {"sources", arr(b.sources)}, {"rows", arr(b.rows)}};
    os << "\n[[band]]\n" << bt << "\n";
  }
  return os.str();
}

const BandTable& shipped_bands() { return config_file_table<BandTable>("bands.toml", parse_bands_toml); }

}  // namespace shardcast::planner
