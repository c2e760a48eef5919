// SHARDCAST_RUNTIME and the default runtime. See runtime_default.h.
#include "shared/runtime_default.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "shared/errors.h"
#include "shared/runtime_spec.h"

namespace shardcast {

std::string env_runtime() {
  const char* v = std::getenv(kRuntimeEnv);
  if (!v || !*v) return "";
  const std::string name = v;
  const std::vector<std::string> names = list_runtime_presets();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw UsageError(fmt::format("environment variable {}='{}' is not a runtime preset (allowed: {}; unset it for "
                                 "{})",
                                 kRuntimeEnv, name, fmt::join(names, ", "), kBuiltinRuntime));
  return name;
}

std::string runtime_origin(bool flag_given, bool file_gave_it) {
  if (flag_given) return "--runtime";
  if (file_gave_it) return "run.toml";
  if (!env_runtime().empty()) return kRuntimeEnv;
  return fmt::format("default; set {} to change it", kRuntimeEnv);
}

std::string default_runtime(std::string* origin) {
  if (origin) *origin = runtime_origin(false, false);
  const std::string env = env_runtime();
  return env.empty() ? kBuiltinRuntime : env;
}

}  // namespace shardcast
