#include "planner/evidence/decision_error.h"

#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "shared/config_io.h"
#include "shared/config_table.h"
#include "shared/errors.h"
#include "shared/toml_reader.h"

namespace shardcast::planner {

const DecisionBand* DecisionTable::band_for(const std::string& setting) const {
  const DecisionBand* every = nullptr;
  for (const auto& b : bands) {
    if (b.setting == setting) return &b;
    if (b.setting == kEveryPair) every = &b;
  }
  return every;
}

DecisionTable build_decision_table(const std::vector<ConfigPair>& pairs, int min_pairs) {
  DecisionTable t;
  t.min_pairs = min_pairs;
  t.method = fmt::format(
      "pairs of published runs of one source one setting apart (planner/evidence/pairs.h); rel_1sigma = rms of "
      "predicted/measured throughput ratio - 1; a setting with fewer than {} pairs counts only in '{}'",
      min_pairs, kEveryPair);
  auto band = [](const std::string& name, const std::vector<const ConfigPair*>& ps) {
    DecisionBand b;
    b.setting = name;
    b.n_pairs = int(ps.size());
    double ss = 0;
    for (const ConfigPair* p : ps) {
      ss += p->err * p->err;
      b.pairs.push_back(p->row_a + " / " + p->row_b);
    }
    b.rel_1sigma = std::sqrt(ss / double(ps.size()));
    return b;
  };
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ConfigPair*>> by;
  std::vector<const ConfigPair*> all;
  for (const auto& p : pairs) {
    if (!by.count(p.setting)) order.push_back(p.setting);
    by[p.setting].push_back(&p);
    all.push_back(&p);
  }
  for (const auto& name : order)
    if (int(by.at(name).size()) >= min_pairs) t.bands.push_back(band(name, by.at(name)));
  if (!all.empty()) t.bands.push_back(band(kEveryPair, all));
  return t;
}

DecisionTable parse_decisions_toml(const std::string& text, const std::string& file) {
  const toml::table t = parse_toml(text, file);
  TableReader r(t, file, "");
  DecisionTable out;
  r.get("method", out.method);
  r.get("command", out.command);
  if (!r.get("min_pairs", out.min_pairs) || out.min_pairs < 1)
    throw ConfigError(file, "min_pairs", "must be given and >= 1");
  r.allow("band");
  r.finish();
  const toml::array* bands = t["band"].as_array();
  if (!bands) {
    if (t.contains("band")) throw ConfigError(file, "band", "expected [[band]] tables");
    return out;
  }
  for (size_t i = 0; i < bands->size(); ++i) {
    const toml::table* bt = (*bands)[i].as_table();
    const std::string where = fmt::format("band[{}].", i);
    if (!bt) throw ConfigError(file, where, "expected a table");
    TableReader br(*bt, file, where);
    DecisionBand b;
    if (!br.get("setting", b.setting) || b.setting.empty()) throw ConfigError(file, where + "setting", "must be given");
    br.get("rel_1sigma", b.rel_1sigma);
    br.get("n_pairs", b.n_pairs);
    if (!br.get("pairs", b.pairs)) throw ConfigError(file, where + "pairs", "expected an array of strings");
    br.finish();
    if (!(b.rel_1sigma > 0)) throw ConfigError(file, where + "rel_1sigma", "must be > 0");
    if (b.n_pairs != int(b.pairs.size()))
      throw ConfigError(file, where + "n_pairs", fmt::format("is {} but pairs lists {}", b.n_pairs, b.pairs.size()));
    out.bands.push_back(std::move(b));
  }
  return out;
}

std::string write_decisions_toml(const DecisionTable& t) {
  std::ostringstream os;
  os << "# The planner's measured decision error (planner/evidence/decision_error.h, docs/validation.md\n"
     << "# \"Decisions: pairs within a source\"). Written by the command below; do not edit by hand.\n";
  toml::table head{{"method", t.method}, {"command", t.command}, {"min_pairs", int64_t(t.min_pairs)}};
  os << head << "\n";
  for (const DecisionBand& b : t.bands) {
    toml::array ps;
    for (const auto& p : b.pairs) ps.push_back(p);
    toml::table bt{{"setting", b.setting}, {"rel_1sigma", b.rel_1sigma}, {"n_pairs", int64_t(b.n_pairs)}, {"pairs", ps}};
    os << "\n[[band]]\n" << bt << "\n";
  }
  return os.str();
}

const DecisionTable& shipped_decisions() {
  return config_file_table<DecisionTable>("decisions.toml", parse_decisions_toml);
}

}  // namespace shardcast::planner
