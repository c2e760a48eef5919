// Subcommands of the `shardcast` CLI, one registration function per file in planner/cli/.
//
// What it is: the list main.cpp wires into CLI11. Each register_* adds its subcommand and the
// callback that runs it; callbacks throw shardcast errors (main maps them to exit codes).
// What it is not: planner logic (that lives in planner/). Not thread-safe (CLI setup only).
#pragma once

#include <CLI/CLI.hpp>

namespace shardcast::cli {

// Thrown by a subcommand that has printed its result and must end with a specific exit code
// (e.g. kExitNoFit when a plan does not fit). main() returns `code`.
struct ExitCode {
  int code;
};

void register_check(CLI::App& app);        // cmd_check.cpp
void register_presets(CLI::App& app);      // cmd_presets.cpp
void register_show_model(CLI::App& app);   // cmd_show_model.cpp
void register_plan(CLI::App& app);         // cmd_plan.cpp
void register_validate(CLI::App& app);     // cmd_validate.cpp
void register_search(CLI::App& app);       // cmd_search.cpp
void register_scale(CLI::App& app);        // cmd_scale.cpp
void register_emit(CLI::App& app);         // cmd_emit.cpp
void register_calibrate(CLI::App& app);    // cmd_calibrate.cpp
void register_import(CLI::App& app);       // cmd_import.cpp
void register_replay_allocator(CLI::App& app);  // cmd_replay_allocator.cpp

}  // namespace shardcast::cli
