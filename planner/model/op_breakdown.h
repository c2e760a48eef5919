// The planner's breakdown of one predicted optimizer step by op category
// (shared/op_category.h): what `shardcast plan --json` prints as time.ops_s and what
// `shardcast-train profile --plan` compares its measurement with.
//
// What it is: each unit's forward, backward and recompute time split over its ops (ops.h)
// and mapped to categories (op_category_of), times the micro-steps; the optimizer task;
// exposed communication as `communication`, with a mesh's TP and CP collectives (the part of a
// unit's time beyond its ops); unit host overhead (unit_overhead_s) and the
// step's host time (step_overhead_s) as `other` (a plan a measured kernel table times has
// neither in series: plan() adds the host's time beyond the device's, Prediction::host_bound_s). The simulator slows compute while a
// collective runs (overlap_compute_slowdown): that stretch is spread over the units'
// categories in proportion to their time, as the simulator spreads it. The categories add up
// to Prediction::step_time_s; without the stretch the compute categories + optimizer add up
// to the simulator's compute-stream busy time (tests/planner/op_breakdown_test.cpp).
// What it is not: a second cost model — every time comes from ops.h, ac_policy.h and the
// simulator's result. FSDP's copies (`copy`) are those plan() put on the compute stream
// (SimUnit::copy_s: FSDP2's, in plans a measured kernel table times); 0 elsewhere.
// Pure functions, thread-safe.
#pragma once

#include <array>
#include <vector>

#include "planner/model/ops.h"
#include "planner/model/plan_options.h"
#include "planner/model/simulator.h"
#include "shared/op_category.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// Category of a planner op by its name (ops.h): attention_norm / ffn_norm / final_norm ->
// norm, GEMMs -> matmul, attention -> attention, embedding, cross_entropy -> loss, rope /
// residual_add / silu_mul / gelu -> elementwise. Throws std::logic_error for an op it does not
// know (a new op must be given its category here).
OpCategory op_category_of(const Op& op);

// The op lists plan() costed its units with (ops.h), not copied: an embedding, one block, the
// head with its loss.
struct UnitOps {
  const std::vector<Op>& embedding;
  const std::vector<Op>& block;
  const std::vector<Op>& head;
};

// The units' part of one optimizer step in closed form (all micro-steps, time_share applied,
// no overlap slowdown): per category (a mesh's collectives in series as communication), and the
// unit host overhead (unit_overhead_s, twice per unit per micro-step).  // s
struct UnitOpSeconds {
  std::array<double, kOpCategories> compute{};  // s
  double unit_overhead_s = 0;                   // s
  double total() const;                         // s
};
UnitOpSeconds unit_op_seconds(const TrainConfig& cfg, const PlanOptions& opt, const ComputeContext& cc,
                              const UnitOps& ops, const SimInput& in, double time_share, double unit_overhead_s);

// Seconds per category of one optimizer step, indexed by OpCategory. `ops`, `in` and `sim` are
// the op lists, the simulator's input and its result plan() built; cc, time_share and
// unit_overhead_s as plan() used them for in.units.
std::array<double, kOpCategories> op_breakdown(const TrainConfig& cfg, const PlanOptions& opt, const ComputeContext& cc,
                                               const UnitOps& ops, const SimInput& in, const SimResult& sim,
                                               double time_share, double unit_overhead_s);

}  // namespace shardcast::planner
