#include "planner/cli/validators.h"

#include <functional>
#include <string>

#include "shared/cli_ranges.h"
#include "shared/cluster_bounds.h"

namespace shardcast::cli {

namespace {

struct Range {
  const char* flag;     // long name with dashes
  const char* command;  // "" = every command that has the flag
  CLI::Validator (*make)();
};

CLI::Validator port() { return cli_range::between(1, 65535); }
// [0.1,inf) Gb/s: the slowest network a plan may name (shared/cluster_bounds.h kMinInterNodeGbps,
// the bound run.toml's cluster.inter_node_gbps has too).
CLI::Validator inter_node_gbps() { return cli_range::interval(kMinInterNodeGbps, false, cli_range::kInf, true); }

// Every numeric flag of every command. 0 is allowed only where it means something other than
// "not given" (absent flags are std::optional or keep a documented default).
const Range kRanges[] = {
    // Cluster and batch (plan, search, scale, emit).
    {"--gpus", "", cli_range::positive},
    {"--gpus-per-node", "", cli_range::positive},
    {"--inter-node-gbps", "", inter_node_gbps},
    {"--power-limit-w", "", cli_range::positive},
    {"--seq-len", "", cli_range::positive},
    {"--micro-batch", "", cli_range::positive},
    {"--grad-accum", "", cli_range::positive},
    {"--hsdp-shard-size", "", cli_range::non_negative},  // 0 = GPUs per node
    // The mesh (shared/train_config.h): degrees >= 1; --dp-shard omitted = the rest of the world
    // (run.toml's dp_shard = -1); --pp-virtual-stages 0 = the schedule's.
    {"--tp", "", cli_range::positive},
    {"--cp", "", cli_range::positive},
    {"--pp", "", cli_range::positive},
    {"--dp-replicate", "", cli_range::positive},
    {"--dp-shard", "", cli_range::positive},
    {"--pp-microbatch", "", cli_range::positive},
    {"--pp-virtual-stages", "", cli_range::non_negative},
    {"--mean-doc-len", "", cli_range::non_negative},  // tokens; 0 = dense causal attention
    {"--ac-ratio", "", cli_range::fraction},
    {"--max-mem-frac", "", cli_range::fraction},
    {"--threads", "", cli_range::positive},
    // search, scale, emit. scale --deadline: --top 0 lists every plan that meets the deadline.
    {"--top", "scale", cli_range::non_negative},
    {"--top", "", cli_range::positive},
    {"--from", "", cli_range::positive},
    {"--to", "", cli_range::positive},
    {"--counts", "", cli_range::positive},
    {"--steps", "", cli_range::positive},
    {"--from-search", "", cli_range::positive},
    // validate, calibrate: weight of the prior (0 = no prior).
    {"--prior", "", cli_range::non_negative},
    // scale: goodput (reliability_flags.h). 0 failures or restart time are meaningful.
    {"--goodput-threshold", "", cli_range::unit_interval},
    {"--failures-per-gpu-hour", "", cli_range::non_negative},
    {"--restart-s", "", cli_range::non_negative},
    {"--storage-write-gbytes-per-s", "", cli_range::positive},
    {"--node-write-gbytes-per-s", "", cli_range::positive},
    // validate --crossval: fewest rows a regime band needs.
    {"--min-rows", "", cli_range::positive},
    // validate --write-decisions: fewest pairs a setting's band needs.
    {"--min-pairs", "", cli_range::positive},
    // import: leading steps left out of the summary (0 = none).
    {"--warmup", "", cli_range::non_negative},
    {"--master-port", "", port},
};

// The type name before any validator description ("INT:(0,inf)" -> "INT").
std::string base_type(const CLI::Option* o) {
  const std::string t = o->get_type_name();
  return t.substr(0, t.find(':'));
}

bool is_numeric(const CLI::Option* o) {
  const std::string t = base_type(o);
  return t == "INT" || t == "UINT" || t == "FLOAT" || t == "NUMBER";
}

bool is_text(const CLI::Option* o) {
  const std::string t = base_type(o);
  return t == "TEXT" || t == "FILE" || t == "DIR" || t == "PATH";
}

// Every named option of `app` and its subcommands, with the (sub)command it belongs to.
void for_each_option(CLI::App* app, const std::function<void(const CLI::App*, CLI::Option*)>& f) {
  for (CLI::Option* o : app->get_options())
    if (!o->get_lnames().empty()) f(app, o);
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) for_each_option(sub, f);
}

// A given empty string is refused: it would otherwise read as "not given" (the default), where
// the same key in a run.toml is an error.
const CLI::Validator kNonEmpty(
    [](std::string& v) { return v.empty() ? std::string("an empty value is not allowed (leave the flag out)") : std::string(); },
    "", "non-empty");

}  // namespace

void check_numeric_ranges(CLI::App& app) {
  for_each_option(&app, [](const CLI::App* cmd, CLI::Option* o) {
    if (!is_numeric(o)) return;
    const std::string flag = "--" + o->get_lnames().front();
    for (const Range& r : kRanges)
      if (flag == r.flag && (*r.command == '\0' || cmd->get_name() == r.command)) {
        o->check(r.make());
        return;
      }
  });
}

void check_non_empty_text(CLI::App& app) {
  for_each_option(&app, [](const CLI::App*, CLI::Option* o) {
    if (is_text(o) && o->get_expected_min() > 0) o->check(kNonEmpty);
  });
}

}  // namespace shardcast::cli
