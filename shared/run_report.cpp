#include "shared/run_report.h"

#include <nlohmann/json.hpp>

#include "shared/json_int.h"

namespace shardcast {

void to_json(nlohmann::json& j, const StepMetrics& s) {
  j = {{"step", s.step}, {"loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm}, {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu},
       {"mfu", s.mfu}, {"hfu", s.hfu}, {"step_time_s", s.step_time_s}, {"mem_peak_bytes", s.mem_peak_bytes}};
  if (s.mem_reserved_peak_bytes) j["mem_reserved_peak_bytes"] = *s.mem_reserved_peak_bytes;
  if (s.alloc_retries) j["alloc_retries"] = *s.alloc_retries;
}

namespace {
void get_optional(const nlohmann::json& j, const char* key, std::optional<double>& out) {
  out.reset();
  if (j.contains(key)) out = j.at(key).get<double>();
}
}  // namespace

void from_json(const nlohmann::json& j, StepMetrics& s) {
  s.step = json_int(j.at("step"));
  j.at("loss").get_to(s.loss);
  j.at("lr").get_to(s.lr);
  j.at("grad_norm").get_to(s.grad_norm);
  j.at("tokens_per_s_per_gpu").get_to(s.tokens_per_s_per_gpu);
  j.at("mfu").get_to(s.mfu);
  j.at("hfu").get_to(s.hfu);
  j.at("step_time_s").get_to(s.step_time_s);
  j.at("mem_peak_bytes").get_to(s.mem_peak_bytes);
  get_optional(j, "mem_reserved_peak_bytes", s.mem_reserved_peak_bytes);
  get_optional(j, "alloc_retries", s.alloc_retries);
}

void to_json(nlohmann::json& j, const RunReport& r) {
  nlohmann::json comps = nlohmann::json::object();
  for (const auto& [k, v] : r.mem_components) comps[k] = v;
  j = {{"schema", r.schema},
       {"config_file", r.config_file},
       {"hardware", r.hardware},
       {"world_size", r.world_size},
       {"sharding_strategy", r.sharding_strategy},
       {"summary", {{"median_step_time_s", r.median_step_time_s},
                    {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                    {"mfu", r.mfu},
                    {"hfu", r.hfu},
                    {"mem_peak_bytes", r.mem_peak_bytes},
                    {"mem_components_bytes", comps}}},
       {"steps", r.steps}};
  if (r.mem_reserved_peak_bytes) j["summary"]["mem_reserved_peak_bytes"] = *r.mem_reserved_peak_bytes;
  if (r.alloc_retries) j["summary"]["alloc_retries"] = *r.alloc_retries;
  if (!r.path.empty()) {
    nlohmann::json path = nlohmann::json::object();
    for (const auto& [k, v] : r.path) path[k] = v;
    j["path"] = path;
  }
}

void from_json(const nlohmann::json& j, RunReport& r) {
  r.schema = json_int(j.at("schema"));
  j.at("config_file").get_to(r.config_file);
  j.at("hardware").get_to(r.hardware);
  r.world_size = json_int(j.at("world_size"));
  j.at("sharding_strategy").get_to(r.sharding_strategy);
  const auto& s = j.at("summary");
  s.at("median_step_time_s").get_to(r.median_step_time_s);
  s.at("tokens_per_s_per_gpu").get_to(r.tokens_per_s_per_gpu);
  s.at("mfu").get_to(r.mfu);
  s.at("hfu").get_to(r.hfu);
  s.at("mem_peak_bytes").get_to(r.mem_peak_bytes);
  get_optional(s, "mem_reserved_peak_bytes", r.mem_reserved_peak_bytes);
  get_optional(s, "alloc_retries", r.alloc_retries);
  r.mem_components.clear();
  if (s.contains("mem_components_bytes"))
    for (auto it = s["mem_components_bytes"].begin(); it != s["mem_components_bytes"].end(); ++it)
      r.mem_components.emplace_back(it.key(), it.value().get<double>());
  j.at("steps").get_to(r.steps);
  r.path.clear();
  if (j.contains("path"))
    for (auto it = j["path"].begin(); it != j["path"].end(); ++it)
      r.path.emplace_back(it.key(), it.value().get<std::string>());
}

double ValidationEntry::error_pct() const {
  return measured != 0 ? 100.0 * (predicted - measured) / measured : 0.0;
}

void to_json(nlohmann::json& j, const ValidationReport& v) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& e : v.entries)
    rows.push_back({{"quantity", e.quantity}, {"predicted", e.predicted}, {"measured", e.measured},
                    {"error_pct", e.error_pct()}});
  j = {{"schema", v.schema}, {"run_dir", v.run_dir}, {"hardware", v.hardware}, {"runtime", v.runtime}, {"entries", rows}};
}

void from_json(const nlohmann::json& j, ValidationReport& v) {
  v.schema = json_int(j.at("schema"));
  j.at("run_dir").get_to(v.run_dir);
  j.at("hardware").get_to(v.hardware);
  if (j.contains("runtime")) j.at("runtime").get_to(v.runtime);
  v.entries.clear();
  for (const auto& e : j.at("entries"))
    v.entries.push_back({e.at("quantity").get<std::string>(), e.at("predicted").get<double>(),
                         e.at("measured").get<double>()});
}

}  // namespace shardcast
