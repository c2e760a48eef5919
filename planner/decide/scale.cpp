#include "planner/decide/scale.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "planner/model/runtime.h"
#include "shared/errors.h"

namespace shardcast::planner {

// The most GPUs one data-parallel rank spans in the space: the largest tp · cp · pp among the
// mesh layouts the runtime runs on `gpus` GPUs (1 = pure FSDP).
int max_mesh_ranks(const SearchSpace& space, const HardwareSpec& hw, int gpus) {
  SearchSpace s = space;
  s.gpus = gpus;
  const TrainConfig base = search_base_config(s, hw);
  std::vector<Layout> layouts;
  add_mesh_layouts(s, runtime_preset(base.runtime).terms_for(is_gpu(hw)), gpus, base.cluster.gpus_per_node,
                   base.training.seq_len, &layouts);
  int most = 1;
  for (const Layout& l : layouts) most = std::max(most, l.mesh.tp * l.mesh.cp * l.mesh.pp);
  return most;
}

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

std::vector<ScalePoint> scale(const ScaleOptions& opt, const HardwareSpec& hw,
                              const std::function<void(double)>& progress) {
  const int gpn = opt.space.gpus_per_node > 0 ? opt.space.gpus_per_node : hw.node.gpus_per_node;
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
  if (!(opt.tokens > 0)) throw UsageError(fmt::format("scale: --tokens {} must be > 0", opt.tokens));
  const int seq = opt.space.seq_len > 0 ? opt.space.seq_len : opt.space.model.max_seq_len;
  const double tol = opt.space.batch_tolerance;

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
    // The smallest batch this count can run: one sequence per data-parallel rank, no
    // accumulation. Pure FSDP has a rank per GPU (the batch wall); a mesh the runtime runs
    // divides the GPUs by tp · cp · pp (the search keeps the layouts that meet the batch).
    const double min_batch_1d = double(gpus) * seq;
    const double min_batch = double(gpus) / max_mesh_ranks(opt.space, hw, gpus) * seq;
    const bool wall_1d = opt.global_batch_tokens > 0 && min_batch_1d > double(opt.global_batch_tokens) * (1 + tol);
    const bool batch_possible =
        opt.global_batch_tokens <= 0 || min_batch <= double(opt.global_batch_tokens) * (1 + tol);
    if (!batch_possible) {
      space.global_batch_tokens = 0;
      space.micro_batches = {1};
      space.grad_accums = {1};
      pt.batch_met = false;
    }
    SearchResult r = search(space, hw, sub);
    pt.n_candidates = r.n_candidates;
    std::vector<std::string> flags;
    if (r.ranked.empty()) {
      flags.push_back("no-fit");
    } else {
      pt.feasible = true;
      pt.best = std::move(r.ranked.front());
      const Prediction& p = pt.best.prediction;
      pt.total_tokens_per_s = p.tokens_per_s_per_gpu * gpus;
      const double seconds = opt.tokens / pt.total_tokens_per_s;
      pt.days = seconds / 86400.0;
      pt.gpu_hours = seconds / 3600.0 * gpus;
      pt.exposed_fraction = p.step_time_s > 0 ? p.exposed_comm_s / p.step_time_s : 0;
      pt.comm_exposed = pt.exposed_fraction > opt.exposed_threshold;
      pt.global_batch_tokens = pt.best.config.tokens_per_step();
      pt.goodput.effective_tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
      pt.goodput.mtbf_s = std::numeric_limits<double>::infinity();
      if (opt.reliability) pt.goodput = goodput(pt.best.config, p, *opt.reliability);
      pt.days_with_failures = pt.days / pt.goodput.goodput;
      pt.gpu_hours_with_failures = pt.gpu_hours / pt.goodput.goodput;
      pt.goodput_low = opt.reliability && pt.goodput.goodput < opt.goodput_threshold;
    }
    if (!pt.batch_met) {
      flags.push_back("batch>target");
    } else if (opt.global_batch_tokens > 0 && pt.feasible) {
      // Sequences per data-parallel rank of the chosen mesh the target leaves: below 2, only
      // micro-batch 1 meets it (on pure FSDP a rank is a GPU).
      const double dp_batch = double(pt.best.config.dp_size()) * seq;
      const double seqs_per_rank = double(opt.global_batch_tokens) * (1 + tol) / dp_batch;
      if (seqs_per_rank < 2) flags.push_back("mb1");
    }
    if (pt.feasible && !points.empty() && points.back().feasible) {
      const int prev = points.back().best.config.training.grad_accum;
      const int now = pt.best.config.training.grad_accum;
      if (prev != now) flags.push_back(fmt::format("ga:{}->{}", prev, now));
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
    for (size_t i = 0; i < flags.size(); ++i) pt.flags += (i ? " " : "") + flags[i];
    points.push_back(std::move(pt));
  }
  // Scaling efficiency against the smallest feasible count.
  const ScalePoint* ref = nullptr;
  for (const auto& p : points)
    if (p.feasible) {
      ref = &p;
      break;
    }
  if (ref) {
    const double base = ref->best.prediction.tokens_per_s_per_gpu;
    for (auto& p : points)
      if (p.feasible) p.scaling_efficiency = p.best.prediction.tokens_per_s_per_gpu / base;
  }
  if (progress) progress(1.0);
  return points;
}

}  // namespace shardcast::planner
