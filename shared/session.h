// Session files: a planning session saved as JSON ("format": "shardcast-session", "schema": 1).
//
// What it is: the Qt-free reader and writer of session files, so both shardcast-gui and the
// `shardcast` CLI can plan from one. A session holds the inputs — the whole TrainConfig under
// "config", with exactly the tables and keys of run.toml (read back through the same strict
// parser, so errors name the key path) — an optional custom hardware profile under
// "custom_hardware" (the keys of a configs/hardware/*.toml preset), the validation sources
// opened in the GUI, and, for people reading the file, the prediction made when it was saved
// (an output: written, ignored on reading).
// What it is not: file writing (the GUI writes through QSaveFile, the CLI through
// write_file_atomic) nor planning. Functions are reentrant; no Qt types, no global state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "shared/hardware_spec.h"
#include "shared/prediction.h"
#include "shared/train_config.h"

namespace shardcast::session {

inline constexpr const char* kFormat = "shardcast-session";
// Schema 2: config.precision.fp8 is a recipe name. Schema 1 files, written when it was a
// boolean, are read with true = "tensorwise" (the one fp8 scaling the planner then modelled)
// and false = "none"; a boolean in a schema-2 file is an error, as in run.toml.
inline constexpr int kSchema = 2;

struct Session {
  TrainConfig config;                           // config.cluster.hardware names the hardware
  std::optional<HardwareSpec> custom_hardware;  // set when the hardware is not a preset;
                                                // its name equals config.cluster.hardware
  std::vector<std::string> validation_sources;  // run directories / published CSVs
  std::string reference_run;                    // --reference-run's run directory ("" = none)
  std::optional<Prediction> prediction;         // output only: written, never read back
};

// JSON text of a session (indented, keys in a stable order).
std::string write_session(const Session& s);
// Parse session text; `label` names the file in errors. Throws InputError for a file that is
// not a session (bad JSON, wrong "format", newer "schema", unknown top-level key) and
// ConfigError / ConfigErrors (shared/errors.h) for a bad config, with key paths.
Session parse_session(const std::string& text, const std::string& label);
// Read a session file. Throws InputError if it cannot be read, else as parse_session.
Session read_session(const std::string& path);

// The hardware the session plans on: its custom profile, or the preset it names.
HardwareSpec session_hardware(const Session& s);


}  // namespace shardcast::session
