#include "planner/evidence/run_dir.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    throw ConfigError(p.string(), "", "cannot open file (not a shardcast-train run directory?)");
  const std::string text = read_text(p);  // bounded (kMaxInputFileBytes)
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", p.string(), e.what()));
  }
}

template <class T>
T json_as(const nlohmann::json& j, const fs::path& p) {
  try {
    return j.get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: unexpected content: {}", p.string(), e.what()));
  }
}

}  // namespace

RunDir read_run_dir(const std::string& dir) {
  RunDir r;
  r.dir = dir;
  const fs::path d(dir);
  std::error_code ec;  // a path the file system refuses is "not a directory", not a filesystem_error
  if (!fs::is_directory(d, ec)) throw ConfigError(dir, "", "not a directory (a shardcast-train run directory)");  // missing = exit 2
  r.cfg = read_train_config((d / "run.toml").string());
  const fs::path rp = d / "run_report.json";
  r.report = json_as<RunReport>(read_json(rp), rp);
  if (r.report.steps.empty() || !(r.report.median_step_time_s > 0))
    throw InputError(fmt::format("{}: no measured steps", rp.string()));
  const fs::path vp = d / "validation.json";
  if (fs::exists(vp, ec)) {
    r.validation = json_as<ValidationReport>(read_json(vp), vp);
    r.has_validation = true;
  }
  return r;
}

}  // namespace shardcast::planner
