#include "planner/decide/scale.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "shared/errors.h"

namespace shardcast::planner {

std::vector<int> scale_counts(int from, int to, int gpn) {
  if (from < 1 || to < from)
    throw UsageError(fmt::format("scale: --from {} --to {} is not a range of GPU counts >= 1", from, to));
  if (gpn < 1) throw UsageError(fmt::format("scale: gpus per node {} must be >= 1", gpn));
  std::set<int> counts;
  for (int64_t p = 1; p < gpn && p <= to; p *= 2)
    if (p >= from) counts.insert(int(p));
  for (int64_t c = gpn; c <= to; c *= 2)
    if (c >= from) counts.insert(int(c));
  for (int c : {from, to})
    if (c < gpn || c % gpn == 0) counts.insert(c);
  return {counts.begin(), counts.end()};
}

namespace {

// The counts scale plans: the given ones (sorted, once each), or scale_counts' range.
std::vector<int> resolve_counts(const ScaleOptions& opt, int gpn) {
  std::vector<int> counts = opt.counts;
  if (counts.empty()) {
    counts = scale_counts(opt.from, opt.to, gpn);
  } else {
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  }
  if (counts.empty())
    throw UsageError(fmt::format("scale: no GPU count between {} and {} is a whole number of nodes of {}",
                                 opt.from, opt.to, gpn));
  return counts;
}

// The batch wall: no pure-FSDP layout (a data-parallel rank per GPU) meets the target within
// tolerance for any micro-batch (search's own rule, grad_accum_for_batch): the target is below
// one sequence per GPU, or falls between the batches whole sequences per GPU give.
bool batch_wall_1d(const SearchSpace& space, int seq, int gpus) {
  if (space.global_batch_tokens <= 0) return false;
  bool wall = true;
  for (int mb : space.micro_batches) wall = wall && !grad_accum_for_batch(space, mb, seq, gpus);
  return wall;
}

// No layout the runtime runs meets the batch (or none that does fits): the plans whose batch is
// nearest the target, the fastest of them (each layout and micro-batch at its nearest
// grad_accum, grad_accum_for_batch with no tolerance). Their candidates are added to *n.
SearchResult nearest_batch(const SearchSpace& space, const HardwareSpec& hw, const std::function<void(double)>& sub,
                           int64_t* n) {
  SearchSpace nearest = space;
  nearest.batch_tolerance = std::numeric_limits<double>::infinity();
  SearchResult any = search(nearest, hw, sub);
  const double target = double(space.global_batch_tokens);
  auto distance = [&](const Candidate& c) { return std::abs(std::log(double(c.config.tokens_per_step()) / target)); };
  double best = std::numeric_limits<double>::infinity();
  for (const Candidate& c : any.ranked) best = std::min(best, distance(c));
  std::vector<Candidate> kept;
  for (Candidate& c : any.ranked)
    if (distance(c) <= best + 1e-12) kept.push_back(std::move(c));
  any.ranked = std::move(kept);  // still fastest first
  *n += any.n_candidates;
  return any;
}

// The point's answer from its best candidate: throughput, time to train, exposed communication
// and goodput under failures.
void read_best(const ScaleOptions& opt, Candidate best, ScalePoint* pt) {
  pt->feasible = true;
  pt->best = std::move(best);
  const Prediction& p = pt->best.prediction;
  pt->total_tokens_per_s = p.tokens_per_s_per_gpu * pt->gpus;
  const double seconds = opt.tokens / pt->total_tokens_per_s;
  pt->days = seconds / 86400.0;
  pt->gpu_hours = seconds / 3600.0 * pt->gpus;
  pt->exposed_fraction = p.step_time_s > 0 ? exposed_communication_s(p) / p.step_time_s : 0;
  pt->comm_exposed = pt->exposed_fraction > opt.exposed_threshold;
  pt->global_batch_tokens = pt->best.config.tokens_per_step();
  pt->goodput.effective_tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
  pt->goodput.mtbf_s = std::numeric_limits<double>::infinity();
  if (opt.reliability) pt->goodput = goodput(pt->best.config, p, *opt.reliability);
  pt->days_with_failures = pt->days / pt->goodput.goodput;
  pt->gpu_hours_with_failures = pt->gpu_hours / pt->goodput.goodput;
  pt->goodput_low = opt.reliability && pt->goodput.goodput < opt.goodput_threshold;
}

// The point's flags (scale.h ScalePoint::flags), space-separated; `prev`: the point before it.
std::string point_flags(const ScaleOptions& opt, const ScalePoint& pt, const ScalePoint* prev, int seq, bool wall_1d) {
  std::vector<std::string> flags;
  if (!pt.feasible) flags.push_back("no-fit");
  if (!pt.batch_met) {
    flags.push_back(pt.global_batch_tokens > opt.global_batch_tokens ? "batch>target" : "batch<target");
  } else if (opt.global_batch_tokens > 0 && pt.feasible) {
    // Sequences per data-parallel rank of the chosen mesh the target leaves: below 2, only
    // micro-batch 1 meets it (on pure FSDP a rank is a GPU).
    const double dp_batch = double(pt.best.config.dp_size()) * seq;
    const double seqs_per_rank = double(opt.global_batch_tokens) * (1 + opt.space.batch_tolerance) / dp_batch;
    if (seqs_per_rank < 2) flags.push_back("mb1");
  }
  if (pt.feasible && prev && prev->feasible) {
    const int before = prev->best.config.training.grad_accum;
    const int now = pt.best.config.training.grad_accum;
    if (before != now) flags.push_back(fmt::format("ga:{}->{}", before, now));
  }
  if (pt.feasible) {  // the mesh the winner uses, and why: the batch wall, or its speed
    const ParallelismConfig& par = pt.best.config.parallelism;
    std::string mesh;
    if (par.tp > 1) mesh += fmt::format("tp{}", par.tp);
    if (par.cp > 1) mesh += fmt::format("{}cp{}", mesh.empty() ? "" : ",", par.cp);
    if (par.pp > 1) mesh += fmt::format("{}pp{}", mesh.empty() ? "" : ",", par.pp);
    if (!mesh.empty()) flags.push_back((wall_1d && pt.batch_met ? "batch-wall:" : "mesh:") + mesh);
  }
  if (pt.comm_exposed) flags.push_back("comm-exposed");
  if (pt.goodput_low) flags.push_back(fmt::format("goodput<{:g}", opt.goodput_threshold));
  std::string out;
  for (size_t i = 0; i < flags.size(); ++i) out += (i ? " " : "") + flags[i];
  return out;
}

// Scaling efficiency against the smallest feasible count.
void scaling_efficiency(std::vector<ScalePoint>* points) {
  const ScalePoint* ref = nullptr;
  for (const auto& p : *points)
    if (p.feasible) {
      ref = &p;
      break;
    }
  if (!ref) return;
  const double base = ref->best.prediction.tokens_per_s_per_gpu;
  for (auto& p : *points)
    if (p.feasible) p.scaling_efficiency = p.best.prediction.tokens_per_s_per_gpu / base;
}

}  // namespace

std::vector<ScalePoint> scale(const ScaleOptions& opt, const HardwareSpec& hw,
                              const std::function<void(double)>& progress) {
  const int gpn = opt.space.gpus_per_node > 0 ? opt.space.gpus_per_node : hw.node.gpus_per_node;
  const std::vector<int> counts = resolve_counts(opt, gpn);
  if (!(opt.tokens > 0)) throw UsageError(fmt::format("scale: --tokens {} must be > 0", opt.tokens));
  const int seq = opt.space.seq_len > 0 ? opt.space.seq_len : opt.space.model.max_seq_len;

  std::vector<ScalePoint> points;
  const size_t K = counts.size();
  for (size_t k = 0; k < K; ++k) {
    const int gpus = counts[k];
    ScalePoint pt;
    pt.gpus = gpus;
    pt.nodes = gpus < gpn ? 1 : gpus / gpn;
    SearchSpace space = opt.space;
    space.gpus = gpus;
    space.global_batch_tokens = opt.global_batch_tokens;
    auto sub = [&](double f) {
      if (progress) progress((double(k) + f) / double(K));
    };
    const bool wall_1d = batch_wall_1d(space, seq, gpus);
    SearchResult r = search(space, hw, sub);
    pt.n_candidates = r.n_candidates;
    if (r.ranked.empty() && opt.global_batch_tokens > 0) {
      // Nothing meets the batch: the nearest batches, flagged batch>target or batch<target;
      // nothing fits at any batch: no-fit.
      r = nearest_batch(space, hw, sub, &pt.n_candidates);
      if (!r.ranked.empty()) pt.batch_met = false;
    }
    if (!r.ranked.empty()) read_best(opt, std::move(r.ranked.front()), &pt);
    pt.flags = point_flags(opt, pt, points.empty() ? nullptr : &points.back(), seq, wall_1d);
    points.push_back(std::move(pt));
  }
  scaling_efficiency(&points);
  if (progress) progress(1.0);
  return points;
}

}  // namespace shardcast::planner
