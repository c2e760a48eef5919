// One step's time by op category. See op_breakdown.h.
#include "planner/model/op_breakdown.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "planner/model/ac_policy.h"

namespace shardcast::planner {

OpCategory op_category_of(const Op& op) {
  if (op.kind == OpKind::matmul) return OpCategory::matmul;
  if (op.kind == OpKind::attention) return OpCategory::attention;
  const char* n = op.name;
  for (const char* norm : {"attention_norm", "qk_norm", "ffn_norm", "final_norm"})
    if (std::strcmp(n, norm) == 0) return OpCategory::norm;
  if (std::strcmp(n, "embedding") == 0) return OpCategory::embedding;
  if (std::strcmp(n, "cross_entropy") == 0) return OpCategory::loss;
  for (const char* e : {"rope", "residual_add", "silu_mul", "gelu"})
    if (std::strcmp(n, e) == 0) return OpCategory::elementwise;
  throw std::logic_error(std::string("op_category_of: planner op '") + n + "' has no op category (op_breakdown.cpp)");
}

namespace {

using Seconds = std::array<double, kOpCategories>;

void add_ops(Seconds& out, const std::vector<Op>& ops, const ComputeContext& cc, bool forward, bool backward,
             const std::vector<double>& recompute_share) {
  for (size_t i = 0; i < ops.size(); ++i) {
    double t = 0;
    if (forward) t += op_forward_time(ops[i], cc);
    if (backward) t += op_backward_time(ops[i], cc);
    if (!recompute_share.empty()) t += recompute_share[i] * op_forward_time(ops[i], cc);
    out[size_t(op_category_of(ops[i]))] += t;
  }
}

}  // namespace

double UnitOpSeconds::total() const {
  double t = unit_overhead_s;
  for (double c : compute) t += c;
  return t;
}

UnitOpSeconds unit_op_seconds(const TrainConfig& cfg, const PlanOptions& opt, const ComputeContext& cc,
                              const UnitOps& ops, const SimInput& in, double time_share, double unit_overhead_s) {
  const ModelSpec& m = cfg.model;
  const std::vector<Op>& block_ops = ops.block;
  // Recompute shares per block op: checkpointed blocks recompute ops [0, end), op-SAC blocks
  // their selective_op_recompute_shares.
  std::vector<double> ckpt_share(block_ops.size(), 0.0);
  for (int i = 0; i < checkpointed_recompute_end(block_ops, opt.recompute_early_stop); ++i) ckpt_share[size_t(i)] = 1.0;
  const std::vector<double> sac_share = selective_op_recompute_shares(m, block_ops, opt.sac_attention_saved());
  const AcMode ac = cfg.activation_checkpointing.mode;

  // Each kind of unit costed once (plan() may run inside a search): embedding, head, and a
  // block plain, checkpointed or with op-SAC.
  Seconds embed{}, head{}, plain{}, checkpointed{}, sac{};
  add_ops(embed, ops.embedding, cc, true, true, {});
  add_ops(head, ops.head, cc, true, true, {});
  add_ops(plain, block_ops, cc, true, true, {});
  if (ac == AcMode::full || ac == AcMode::selective) add_ops(checkpointed, block_ops, cc, true, true, ckpt_share);
  if (ac == AcMode::selective_op) add_ops(sac, block_ops, cc, true, true, sac_share);

  const int U = int(in.units.size());
  Seconds units{};      // one micro-step, all units, before time_share  // s
  double overhead = 0;  // unit host overhead of one micro-step  // s
  for (int i = 0; i < U; ++i) {
    const bool is_block = i > 0 && i < U - 1;
    const int blk = i - 1;
    const bool ckpt = is_block && (ac == AcMode::full ||
                                   (ac == AcMode::selective && cfg.activation_checkpointing.block_checkpointed(blk)));
    const bool op_sac = is_block && ac == AcMode::selective_op;
    const Seconds& u = i == 0 ? embed : (i == U - 1 ? head : (ckpt ? checkpointed : (op_sac ? sac : plain)));
    // The same unit as plan() built it (its forward, backward, recompute, FSDP's copies and
    // overhead).
    const SimUnit& su = in.units[size_t(i)];
    double u_total = 2.0 * unit_overhead_s + su.copy_s;
    for (int c = 0; c < kOpCategories; ++c) {
      units[size_t(c)] += u[size_t(c)];
      u_total += u[size_t(c)];
    }
    units[size_t(OpCategory::copy)] += su.copy_s;
    overhead += 2.0 * unit_overhead_s;
    // What the unit takes beyond its ops is its mesh's collectives in series with them (TP's and
    // CP's exposed time, mesh_stage.cpp, time_share applied there as to the ops): communication,
    // as the trainer's profile counts its TP collectives. 0 in 1-D.
    // Below the summation's rounding (1-D units) it is 0, so 1-D breakdowns keep their bits.
    const double mesh = (su.fwd_s + su.bwd_s) / time_share - u_total;  // s
    const double rounding = 1e-9 * (su.fwd_s + su.bwd_s) + 1e-15;     // s
    assert(mesh >= -rounding);
    if (mesh > rounding) units[size_t(OpCategory::communication)] += mesh;
  }
  const double k = in.grad_accum * time_share;
  UnitOpSeconds r;
  for (int c = 0; c < kOpCategories; ++c) r.compute[size_t(c)] = k * units[size_t(c)];
  r.unit_overhead_s = k * overhead;
  return r;
}

std::array<double, kOpCategories> op_breakdown(const TrainConfig& cfg, const PlanOptions& opt, const ComputeContext& cc,
                                               const UnitOps& ops, const SimInput& in, const SimResult& sim,
                                               double time_share, double unit_overhead_s) {
  const UnitOpSeconds u = unit_op_seconds(cfg, opt, cc, ops, in, time_share, unit_overhead_s);
  // The compute the simulator ran on the units beyond their cost: the overlap slowdown,
  // spread in proportion (the simulator slows every compute task alike).
  const double unit_busy = sim.compute_s - sim.optimizer_s;  // s
  const double stretch = u.total() > 0 ? unit_busy / u.total() : 1.0;
  Seconds out{};
  for (int c = 0; c < kOpCategories; ++c) out[size_t(c)] = u.compute[size_t(c)] * stretch;
  out[size_t(OpCategory::optimizer)] += sim.optimizer_s;
  out[size_t(OpCategory::communication)] += sim.exposed_comm_s;
  out[size_t(OpCategory::other)] += u.unit_overhead_s * stretch + in.step_overhead_s;
  return out;
}

}  // namespace shardcast::planner
