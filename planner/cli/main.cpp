// `shardcast`: the planner CLI. Each subcommand lives in its own cmd_*.cpp (commands.h).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "planner/cli/commands.h"
#include "planner/cli/config_flags.h"
#include "planner/cli/validators.h"
#include "shared/errors.h"

int main(int argc, char** argv) {
  using namespace shardcast;
  CLI::App app{"shardcast: plan fully sharded data parallel (FSDP) training of Llama-family models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "shardcast 0.1.0");
  cli::register_check(app);
  cli::register_presets(app);
  cli::register_show_model(app);
  cli::register_plan(app);
  cli::register_validate(app);
  cli::register_search(app);
  cli::register_scale(app);
  cli::register_emit(app);
  cli::register_calibrate(app);
  cli::register_import(app);
  cli::register_replay_allocator(app);
  cli::check_numeric_ranges(app);  // after every register_*: ranges of all numeric flags
  cli::check_non_empty_text(app);   // and no empty text values
  try {
    std::vector<std::string> args = cli::with_current_flag_names(std::vector<std::string>(argv, argv + argc));
    if (!args.empty()) {
      app.name(args.front());    // as parse(argc, argv) names it (the usage lines)
      args.erase(args.begin());  // CLI11 takes the arguments without the program,
    }
    std::reverse(args.begin(), args.end());  // last first
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  } catch (const cli::ExitCode& e) {
    return e.code;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitUsage;
  } catch (const ConfigErrors& e) {
    fmt::print(stderr, "error: invalid config:\n{}\n", e.what());
    return kExitUsage;
  } catch (const UsageError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitUsage;
  } catch (const InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitFailure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitFailure;
  }
  return kExitOk;
}
