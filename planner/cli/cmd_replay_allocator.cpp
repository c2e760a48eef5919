// `shardcast replay-allocator TRACE [--json]`: a CUDA caching allocator trace that
// shardcast-train recorded on a GPU (`shardcast-train run --allocator-trace PATH`), replayed
// through the planner's model of that allocator: measured and modelled reserved and allocated
// peaks side by side, with the run's expandable_segments setting and the other one.
// The check of the allocator model (planner/model/allocator/) on a user's own run.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "planner/cli/commands.h"
#include "planner/model/allocator/measured_allocator_trace.h"

namespace shardcast::cli {

void register_replay_allocator(CLI::App& app) {
  struct Opts {
    std::string trace;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "replay-allocator",
      "Replay a CUDA caching allocator trace recorded by shardcast-train (--allocator-trace) through the planner's "
      "allocator model: measured and modelled reserved peaks side by side");
  cmd->add_option("trace", o->trace, "the trace file (CSV as shardcast-train writes it; decompress an .xz first)")
      ->required();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] {
    const planner::MeasuredAllocatorTrace t = planner::read_measured_allocator_trace(o->trace);
    const planner::MeasuredCurves c = planner::measure_allocator_trace(t);
    const planner::ReplayResult same = planner::replay_measured(t, t.expandable_segments);
    const planner::ReplayResult other = planner::replay_measured(t, !t.expandable_segments);
    const double gib = double(1ull << 30);
    const double measured = double(c.peak_reserved);
    const double err_pct = measured > 0 ? 100.0 * (same.peak_reserved - measured) / measured : 0.0;
    if (o->json) {
      nlohmann::json j = {{"schema", 1},
                          {"trace", o->trace},
                          {"torch", t.torch},
                          {"complete", t.complete},
                          {"expandable_segments", t.expandable_segments},
                          {"rows", t.rows.size()},
                          {"measured", {{"max_reserved_bytes", t.max_reserved_bytes},
                                        {"max_allocated_bytes", t.max_allocated_bytes},
                                        {"reserved_curve_peak_bytes", c.peak_reserved}}},
                          {"model", {{"reserved_bytes", same.peak_reserved}, {"allocated_bytes", same.peak_allocated},
                                     {"reserved_error_pct", err_pct}}},
                          {"model_other_setting", {{"expandable_segments", !t.expandable_segments},
                                                   {"reserved_bytes", other.peak_reserved}}}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("allocator trace {}: torch {}, {} rows{}, expandable_segments {}\n", o->trace, t.torch, t.rows.size(),
               t.complete ? "" : " (incomplete: the ring buffer overflowed)", t.expandable_segments ? "on" : "off");
    fmt::print("  reserved   measured {:.3f} GiB (the run's statistics {:.3f} GiB), model {:.3f} GiB ({:+.2f}%)\n",
               measured / gib, t.max_reserved_bytes / gib, same.peak_reserved / gib, err_pct);
    fmt::print("  allocated  measured {:.3f} GiB, model {:.3f} GiB\n", t.max_allocated_bytes / gib,
               same.peak_allocated / gib);
    fmt::print("  with expandable_segments {}: model reserved {:.3f} GiB\n", t.expandable_segments ? "off" : "on",
               other.peak_reserved / gib);
  });
}

}  // namespace shardcast::cli
