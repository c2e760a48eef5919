// Text that Shardcast writes into files other programs read: shell words, and the check that a
// configuration's strings can appear in such files at all.
//
// What it is: shell_quote(), the one shell quoting function of every emitted script and
// argument list (planner/emit*.cpp, shared/slurm_script.cpp); require_one_line(), the refusal
// of a string with a line break (or another control character) or invalid UTF-8, which no
// comment line, #SBATCH line or file name can hold; require_emittable_strings(), that refusal
// applied to every string of a TrainConfig that an emitted file carries (model name, paths,
// preset names), run before any file is written.
// What it is not: the TOML or Python writers (toml++ does TOML, shared/toml_text.h;
// nlohmann::json Python literals, in the emitters) or a validator of what the strings mean (shared/train_config.h validate()).
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "shared/train_config.h"

namespace shardcast {

// A POSIX shell word that reads back as `s` (bash, sh, Python's shlex.split): `s` unchanged when
// it is non-empty and made only of A-Z a-z 0-9 and @ % + = : , . / _ -, otherwise `s` in single
// quotes with each ' written as '\''. Precondition: no NUL byte (require_one_line refuses it).
std::string shell_quote(std::string_view s);

// The line an emitted launcher starts with to run in its own folder: CDPATH emptied (an exported
// CDPATH would make cd search it and print the folder), `--` so a folder starting with '-' is a
// folder, and cd fails the script under set -e when dirname cannot name the folder.
inline constexpr const char* kCdToScriptFolder = "folder=\"$(dirname -- \"$0\")\"\nCDPATH= cd -- \"$folder\"\n";

// Why `value` cannot be written into an emitted file ("" = it can): a control character
// (newline, carriage return, tab, NUL, DEL, ...) or bytes that are not UTF-8.
std::string one_line_problem(const std::string& value);
// ConfigError(file, key, one_line_problem(value)) naming what is allowed when `value` holds a control character
// (newline, carriage return, tab, NUL, DEL, ...) or is not valid UTF-8.
void require_one_line(const std::string& file, const std::string& key, const std::string& value);

// require_one_line for every string of `cfg` that an emitted file or a launcher carries: the
// string keys of run.toml (runtime, cluster.hardware, data.path, checkpoint.dir, ...),
// model.name, model.preset, [prediction]'s hardware and runtime and the keys of
// [prediction.mem_components]. write_train_config (config_io.h) runs it before writing. `file` names the config in
// the error (cfg.source_file when empty).
void require_emittable_strings(const TrainConfig& cfg, const std::string& file = "");

}  // namespace shardcast
