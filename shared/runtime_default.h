// The runtime a prediction is for when the user names none: one resolution for the CLI
// (plan, search, scale, emit) and the GUI's form.
//
// What it is: SHARDCAST_RUNTIME (a preset name of configs/runtimes/), read and checked;
// where a command's runtime came from, in words for its headline. Precedence: --runtime (or
// the GUI's choice), then a run.toml's `runtime` key, then SHARDCAST_RUNTIME, then
// shardcast-train.
// What it is not: the runtime's terms (shared/runtime_spec.h) or the flags (planner/cli/).
// Reads the environment on every call; thread-safe as long as nobody sets it meanwhile.
#pragma once

#include <string>

namespace shardcast {

inline constexpr const char* kRuntimeEnv = "SHARDCAST_RUNTIME";
inline constexpr const char* kBuiltinRuntime = "shardcast-train";

// $SHARDCAST_RUNTIME, or "" when unset or empty. A value that is not a runtime preset's name
// throws UsageError naming the variable and the allowed names.
std::string env_runtime();
// Where the runtime a command plans for came from, for its header: "--runtime", "run.toml",
// "SHARDCAST_RUNTIME" or "default; set SHARDCAST_RUNTIME to change it".
std::string runtime_origin(bool flag_given, bool file_gave_it);
// The runtime when neither a flag nor a file names one: env_runtime(), else shardcast-train.
// `origin` (may be null) gets runtime_origin(false, false).
std::string default_runtime(std::string* origin = nullptr);

}  // namespace shardcast
