// The allowed range of every numeric flag of `shardcast`, in one table, and no empty text value.
//
// What it is: check_numeric_ranges(app) walks every subcommand of the CLI11 app after the
// register_* functions have run and attaches to each numeric option (INT, UINT, FLOAT, ...)
// the range validator (shared/cli_ranges.h) its name has in the table of validators.cpp. One
// flag name has one range in every command (`--gpus` is (0,inf) in plan, search and emit).
// A numeric flag missing from the table gets no range; the CLI range test
// (tests/shared/cli_ranges_test.sh) then fails naming it, so a new flag must be added here.
// What it is not: parsing or defaults. CLI setup only, single-threaded.
#pragma once

#include <CLI/CLI.hpp>

namespace shardcast::cli {

void check_numeric_ranges(CLI::App& app);
// Every text option with a long name (--runtime, --timeline, --deadline, ...) refuses "".
void check_non_empty_text(CLI::App& app);

}  // namespace shardcast::cli
