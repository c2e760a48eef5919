// Session files: JSON <-> TrainConfig through run.toml's own tables and keys (see session.h).
#include "shared/session.h"

#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::session {
namespace {

using nlohmann::json;

// TOML -> JSON, keeping integers and floats apart so the strict reader sees the same types.
json to_json_node(const toml::node& n) {
  if (auto* t = n.as_table()) {
    json o = json::object();
    for (auto&& [k, v] : *t) o[std::string(k.str())] = to_json_node(v);
    return o;
  }
  if (auto* a = n.as_array()) {
    json arr = json::array();
    for (auto&& v : *a) arr.push_back(to_json_node(v));
    return arr;
  }
  if (auto* s = n.as_string()) return s->get();
  if (auto* i = n.as_integer()) return i->get();
  if (auto* f = n.as_floating_point()) return f->get();
  if (auto* b = n.as_boolean()) return b->get();
  return nullptr;  // dates and times: not used by any Shardcast file
}

void put(toml::table& t, const std::string& key, const json& v, const std::string& label,
         const std::string& path);

// A JSON integer as TOML's 64-bit signed integer; a larger unsigned one is refused rather than
// wrapped to a negative value the file does not hold.
int64_t toml_integer(const json& v, const std::string& label, const std::string& path) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw ConfigError(label, path,
                      std::to_string(v.get<uint64_t>()) + " is not allowed: integers above " +
                          std::to_string(std::numeric_limits<int64_t>::max()) + " (TOML's 64-bit range)");
  return v.get<int64_t>();
}

toml::array to_toml_array(const json& a, const std::string& label, const std::string& path) {
  toml::array out;
  for (size_t i = 0; i < a.size(); ++i) {
    const json& v = a[i];
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (v.is_string()) out.push_back(v.get<std::string>());
    else if (v.is_boolean()) out.push_back(v.get<bool>());
    else if (v.is_number_integer()) out.push_back(toml_integer(v, label, p));
    else if (v.is_number_float()) out.push_back(v.get<double>());
    else if (v.is_array()) out.push_back(to_toml_array(v, label, p));
    else if (v.is_object()) {
      toml::table t;
      for (auto it = v.begin(); it != v.end(); ++it) put(t, it.key(), it.value(), label, p + "." + it.key());
      out.push_back(std::move(t));
    } else {
      throw ConfigError(label, p, "null is not allowed");
    }
  }
  return out;
}

void put(toml::table& t, const std::string& key, const json& v, const std::string& label,
         const std::string& path) {
  if (v.is_string()) t.insert_or_assign(key, v.get<std::string>());
  else if (v.is_boolean()) t.insert_or_assign(key, v.get<bool>());
  else if (v.is_number_integer()) t.insert_or_assign(key, toml_integer(v, label, path));
  else if (v.is_number_float()) t.insert_or_assign(key, v.get<double>());
  else if (v.is_array()) t.insert_or_assign(key, to_toml_array(v, label, path));
  else if (v.is_object()) {
    toml::table sub;
    for (auto it = v.begin(); it != v.end(); ++it)
      put(sub, it.key(), it.value(), label, path + "." + it.key());
    t.insert_or_assign(key, std::move(sub));
  } else {
    throw ConfigError(label, path, "null is not allowed");
  }
}

// JSON object -> TOML text, for the strict shared parsers.
std::string json_to_toml_text(const json& o, const std::string& label, const std::string& what) {
  if (!o.is_object()) throw InputError(label + ": " + what + ": expected a JSON object");
  toml::table t;
  for (auto it = o.begin(); it != o.end(); ++it) put(t, it.key(), it.value(), label, it.key());
  std::ostringstream os;
  os << t;
  return os.str();
}

json toml_text_to_json(const std::string& text) {
  return to_json_node(toml::parse(text));
}

}  // namespace


std::string write_session(const Session& s) {
  json j = json::object();
  j["format"] = kFormat;
  j["schema"] = kSchema;
#ifdef SHARDCAST_VERSION
  j["app_version"] = SHARDCAST_VERSION;
#endif
  j["config"] = toml_text_to_json(write_train_config(s.config));
  if (s.custom_hardware) j["custom_hardware"] = toml_text_to_json(write_hardware_toml(*s.custom_hardware));
  j["validation_sources"] = s.validation_sources;
  if (!s.reference_run.empty()) j["reference_run"] = s.reference_run;
  if (s.prediction) {
    Prediction p = *s.prediction;
    p.timeline.clear();  // a summary for readers, not the simulated events
    j["prediction"] = p;
  }
  return j.dump(2) + "\n";
}

Session parse_session(const std::string& text, const std::string& label) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw InputError(label + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw InputError(label + ": a session file is a JSON object");
  if (!j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != kFormat)
    throw InputError(label + ": format: expected \"" + std::string(kFormat) +
                     "\" (this is not a Shardcast session file)");
  if (!j.contains("schema") || !j["schema"].is_number_integer())
    throw InputError(label + ": schema: missing or not an integer");
  const int64_t schema = j["schema"].get<int64_t>();  // is_number_integer() checked above
  if (schema > kSchema)
    throw InputError(label + ": schema: " + std::to_string(schema) +
                     " is newer than this program reads (" + std::to_string(kSchema) +
                     "); update Shardcast");
  if (schema < 1) throw InputError(label + ": schema: " + std::to_string(schema) + " is not allowed");
  static const std::set<std::string> known = {"format", "schema", "app_version", "config",
                                              "custom_hardware", "validation_sources", "reference_run",
                                              "prediction"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) {
      std::vector<std::string> names(known.begin(), known.end());
      std::string hint = closest_match(it.key(), names);
      throw InputError(label + ": " + it.key() + ": unknown key" +
                       (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
    }
  if (!j.contains("config")) throw InputError(label + ": config: missing");

  if (schema == 1 && j["config"].is_object() && j["config"].contains("precision")) {
    json& pr = j["config"]["precision"];  // precision.fp8 was a boolean (session.h)
    if (pr.is_object() && pr.contains("fp8") && pr["fp8"].is_boolean())
      pr["fp8"] = pr["fp8"].get<bool>() ? "tensorwise" : "none";
  }
  Session s;
  const std::string cfg_label = label + " (config)";
  s.config = parse_train_config(json_to_toml_text(j["config"], cfg_label, "config"), cfg_label);
  s.config.source_file.clear();
  if (j.contains("custom_hardware")) {
    const std::string hw_label = label + " (custom_hardware)";
    HardwareSpec h = parse_hardware_toml(json_to_toml_text(j["custom_hardware"], hw_label, "custom_hardware"),
                                         hw_label);
    h.file.clear();
    if (h.name != s.config.cluster.hardware)
      throw ConfigError(hw_label, "name", "\"" + h.name + "\" differs from config.cluster.hardware = \"" +
                                              s.config.cluster.hardware + "\"");
    s.custom_hardware = std::move(h);
  }
  if (j.contains("validation_sources")) {
    const json& v = j["validation_sources"];
    if (!v.is_array()) throw InputError(label + ": validation_sources: expected an array of paths");
    for (const auto& e : v) {
      if (!e.is_string()) throw InputError(label + ": validation_sources: expected strings");
      s.validation_sources.push_back(e.get<std::string>());
    }
  }
  if (j.contains("reference_run")) {
    if (!j["reference_run"].is_string()) throw InputError(label + ": reference_run: expected a run directory's path");
    s.reference_run = j["reference_run"].get<std::string>();
  }
  return s;
}

Session read_session(const std::string& path) {
  return parse_session(read_text(path), path);
}

HardwareSpec session_hardware(const Session& s) {
  if (s.custom_hardware) return *s.custom_hardware;
  return load_hardware(s.config.cluster.hardware);
}

}  // namespace shardcast::session
