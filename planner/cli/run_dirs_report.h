// `shardcast validate RUN_DIR...`: the trainer's run directories against the planner, printed.
//
// What it is: the printing of run_validation.h's comparisons (text, Markdown or JSON) with each
// run's verdict against its stated band. What it is not: the comparison itself
// (planner/evidence/run_validation.h). CLI only; not thread-safe (prints to stdout).
#pragma once

#include <string>
#include <vector>

namespace shardcast::cli {

// `shardcast validate RUN_DIR... [--json] [--markdown] [--hardware H] [--reference-run DIR]`: each
// run's validation.json table, then the planner-vs-measured table of all runs and the summary.
// hardware "" = each run's own cluster.hardware; reference "" = the model alone.
void print_run_dirs(const std::vector<std::string>& dirs, bool json, bool markdown, const std::string& hardware,
                    const std::string& reference = "");

}  // namespace shardcast::cli
