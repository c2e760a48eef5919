// TOML reading and writing of TrainConfig, ModelSpec and HardwareSpec, and preset lookup.
//
// What it is: strict parsers (unknown keys are errors with the closest valid key suggested,
// wrong types and out-of-range values name the file and key path) and a writer whose output
// reads back to an equal config. What it is not: cross-field validation (train_config.h) or
// planner logic. Functions are reentrant; no global state except the environment variable
// SHARDCAST_CONFIG_DIR read by config_dir().
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "shared/closest_match.h"
#include "shared/hardware_spec.h"
#include "shared/model_spec.h"
#include "shared/train_config.h"

namespace shardcast {

struct TrainConfigKey;  // shared/config_schema.h

// The presets folder: $SHARDCAST_CONFIG_DIR, else <exe>/../configs or the source tree's.
std::filesystem::path config_dir();

// Presets by name (file stem in configs/models or configs/hardware), or a path to a .toml.
ModelSpec load_model(const std::string& name_or_file);
HardwareSpec load_hardware(const std::string& name_or_file);
std::vector<std::string> list_model_presets();     // sorted names
std::vector<std::string> list_hardware_presets();  // sorted names

// TrainConfig from a file or from text (file_label names it in errors). Throws ConfigError
// for the first structural problem (syntax, unknown key, wrong type) and ConfigErrors listing
// every cross-field problem (validate()).
TrainConfig read_train_config(const std::string& path);
TrainConfig parse_train_config(const std::string& toml_text, const std::string& file_label);
// Which of `dotted_keys` (e.g. "precision.reduce_dtype") the run.toml text sets, one flag per
// key. A precision key it leaves out takes the runtime's own value (planner/model/runtime.h
// take_runtime_precision).
std::vector<bool> train_config_text_sets(const std::string& toml_text, const std::string& file_label,
                                         const std::vector<std::string>& dotted_keys);
// ModelSpec from a TOML table body (the keys of configs/models/*.toml).
ModelSpec parse_model_toml(const std::string& toml_text, const std::string& file_label);
HardwareSpec parse_hardware_toml(const std::string& toml_text, const std::string& file_label);

// TOML text of a hardware profile in the layout of configs/hardware/*.toml, key by key from
// hardware_schema() then [efficiency]; parse_hardware_toml(write_hardware_toml(h)) equals h.
std::string write_hardware_toml(const HardwareSpec& h);
// Serialise; parse_train_config(write_train_config(c)) == c field by field.
std::string write_train_config(const TrainConfig& cfg);
// Write atomically so a crash never leaves half a file: a temporary in the target's directory
// under a private, unpredictable name (".NAME.<64 random bits>", created O_CREAT|O_EXCL|
// O_NOFOLLOW, so a planted file or link at any name is never written through), fsync, rename
// over `path` (a link at `path` is replaced, not followed), fsync of its directory. ConfigError naming `path` when it is
// a directory or cannot be created (exit 2); InputError when a write, sync or rename fails.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// Several files written as one (emit's set): add() writes each to its private temporary as
// write_file_atomic does (the same errors; executable: mode 0755), commit() renames them all
// into place. Until commit() no target has changed, and the destructor removes the temporaries
// of an uncommitted set, so a failure while staging leaves the directory as it was. Not
// thread-safe; one owner.
class StagedFiles {
 public:
  StagedFiles() = default;
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  ~StagedFiles();
  void add(const std::filesystem::path& path, const std::string& content, bool executable = false);
  void commit();

 private:
  struct Staged {
    std::filesystem::path path, tmp;
  };
  std::vector<Staged> staged_;
};

// Preset lookup shared by every preset kind ("models", "hardware", "runtimes", "reliability"):
// a value with a '/' or ending in ".toml" is a path and must name a .toml file (read as given,
// said to be a path in errors); any other value is a name, [A-Za-z0-9._-]+ without "..", looked
// up as config_dir()/KIND/NAME.toml. ConfigError for a value that is neither (so
// "../../../../etc/passwd" is refused, not read) and for an unknown name, listing the allowed
// ones and the closest. `what` names the kind in messages ("model", "runtime", ...).
std::filesystem::path resolve_preset(const std::string& name_or_file, const std::string& kind,
                                     const std::string& what);
// Why `value` is neither a preset name nor a path to a .toml file (the rule above), or nullopt
// when it is one of them. parse_train_config checks `runtime` and `cluster.hardware` with it.
std::optional<std::string> preset_ref_problem(const std::string& value);
// Whether a preset reference is a path (a '/' in it or a ".toml" ending), by the rule above.
bool preset_ref_is_file(const std::string& value);
std::vector<std::string> list_presets_in(const std::string& kind);  // sorted names
// Inputs are bounded: every reader below refuses, by name and before reading, a path that is
// not a regular file (a directory, /dev/zero, a FIFO) and a file over its limit (bytes).
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t(16) << 20;  // TOML: run.toml, presets, profiles
inline constexpr uint64_t kMaxInputFileBytes = uint64_t(256) << 20;  // logs, CSVs, traces (import, validate)
// A whole file; ConfigError naming it when it cannot be opened, is not a regular file or is over
// `max_bytes`. The rule of every command: a file that is missing or cannot be opened exits 2
// (bad usage or config), whatever it holds; a file that opens but is malformed exits 2 for a
// config and 1 for data (CSV, reports).
std::string read_text(const std::filesystem::path& p, uint64_t max_bytes = kMaxInputFileBytes);
// read_text with the TOML limit (kMaxConfigFileBytes).
std::string read_config_text(const std::filesystem::path& p);


}  // namespace shardcast
