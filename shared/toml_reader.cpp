#include "shared/toml_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "shared/closest_match.h"
#include "shared/errors.h"

namespace shardcast {

namespace {
const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date/time";
  }
}
std::string show(const toml::node& n) {
  std::ostringstream os;
  n.visit([&](auto&& v) { os << v; });
  return os.str();
}
}  // namespace

toml::table parse_toml(const std::string& text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ConfigError(file, "", fmt::format("TOML syntax error at line {}, column {}: {}", b.line, b.column,
                                            std::string(e.description())));
  }
}

TableReader::TableReader(const toml::table& table, std::string file, std::string prefix)
    : table_(table), file_(std::move(file)), prefix_(std::move(prefix)) {}

const toml::node* TableReader::lookup(const std::string& key) {
  known_.push_back(key);
  return table_.get(key);
}

void TableReader::type_error(const std::string& key, const char* want, const toml::node& n) const {
  throw ConfigError(file_, path(key),
                    std::string("expected ") + want + ", got " + type_name(n) + " (" + show(n) + ")");
}

bool TableReader::get(const std::string& key, int64_t& out) {
  const toml::node* n = lookup(key);
  if (!n) return false;
  if (!n->is_integer()) type_error(key, "an integer", *n);
  out = n->as_integer()->get();
  return true;
}

bool TableReader::get(const std::string& key, int& out) {
  int64_t v = out;
  if (!get(key, v)) return false;
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw ConfigError(file_, path(key), std::to_string(v) + " is out of range for a 32-bit integer");
  out = int(v);
  return true;
}

bool TableReader::get(const std::string& key, uint64_t& out) {
  int64_t v = int64_t(out);
  if (!get(key, v)) return false;
  if (v < 0) throw ConfigError(file_, path(key), std::to_string(v) + " is not allowed: must be >= 0");
  out = uint64_t(v);
  return true;
}

bool TableReader::get(const std::string& key, double& out) {
  const toml::node* n = lookup(key);
  if (!n) return false;
  if (n->is_integer()) out = double(n->as_integer()->get());
  else if (n->is_floating_point()) out = n->as_floating_point()->get();
  else type_error(key, "a number", *n);
  // No key of ours means anything by nan or inf (TOML allows both literals).
  if (!std::isfinite(out)) throw ConfigError(file_, path(key), fmt::format("{} is not allowed: must be a finite number", out));
  return true;
}

bool TableReader::get(const std::string& key, bool& out) {
  const toml::node* n = lookup(key);
  if (!n) return false;
  if (!n->is_boolean()) type_error(key, "a boolean (true | false)", *n);
  out = n->as_boolean()->get();
  return true;
}

bool TableReader::get(const std::string& key, std::string& out) {
  const toml::node* n = lookup(key);
  if (!n) return false;
  if (!n->is_string()) type_error(key, "a string", *n);
  out = n->as_string()->get();
  return true;
}

bool TableReader::get(const std::string& key, std::vector<std::string>& out) {
  const toml::node* n = lookup(key);
  if (!n) return false;
  const toml::array* a = n->as_array();
  if (!a) type_error(key, "an array of strings", *n);
  std::vector<std::string> v;
  for (const toml::node& e : *a) {
    if (!e.is_string()) type_error(key, "an array of strings", e);
    v.push_back(e.as_string()->get());
  }
  out = std::move(v);
  return true;
}

const toml::table* TableReader::table(const std::string& key) {
  const toml::node* n = lookup(key);
  if (!n) return nullptr;
  if (!n->is_table()) type_error(key, "a table", *n);
  return n->as_table();
}

void TableReader::finish() const {
  for (auto&& [k, v] : table_) {
    const std::string key(k.str());
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string detail = "unknown key";
    const auto alias = std::find_if(aliases_.begin(), aliases_.end(), [&](const Alias& a) { return a.foreign == key; });
    const std::string best = alias != aliases_.end() ? alias->key : closest_match(key, known_);
    if (alias != aliases_.end())
      detail += "; that is " + alias->tool + "'s name: this file's key is '" + path(alias->key) + "'";
    else if (!best.empty())
      detail += "; did you mean '" + path(best) + "'?";
    std::vector<std::string> sorted = known_;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    detail += " (allowed:";
    for (const auto& s : sorted) detail += " " + s;
    detail += ")";
    throw ConfigError(file_, path(key), detail);
  }
}

}  // namespace shardcast
