#include "planner/evidence/predict.h"
#include "planner/decide/search.h"

#include "shared/train_config.h"

#include <algorithm>
#include <optional>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "planner/evidence/decision_error.h"
#include "planner/evidence/pairs.h"
#include "planner/decide/pareto.h"
#include "planner/model/node_placement.h"
#include "planner/model/fp8_formats.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "planner/model/zero_memory.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {

constexpr double kGiB = double(1ull << 30);

double runtime_overhead_bytes(const Prediction& p) {
  for (const auto& m : p.memory)
    if (m.name == "runtime_overhead") return m.bytes;
  return 0;
}

// Hybrid shard-group sizes worth trying: powers of two and node multiples (gpn · 2^k), from 2
// up to gpus/2, that divide gpus. gpus itself is full_shard and 1 is no_shard.
std::vector<int> default_hsdp_sizes(int gpus, int gpn) {
  std::set<int> sizes;
  for (int s = 2; s <= gpus / 2; s *= 2)
    if (gpus % s == 0) sizes.insert(s);
  for (int64_t s = gpn; s <= gpus / 2; s *= 2)
    if (s >= 2 && gpus % s == 0) sizes.insert(int(s));
  return {sizes.begin(), sizes.end()};
}

struct AcChoice {
  AcMode mode;
  double ratio;
};

// none, each selective ratio that differs from none and full for this depth, full.
std::vector<AcChoice> ac_choices(const SearchSpace& space, int n_layers) {
  std::vector<AcChoice> out{{AcMode::none, 1.0}};
  std::set<int> seen_counts;
  for (double r : space.selective_ratios) {
    if (!(r > 0 && r <= 1))
      throw UsageError(fmt::format("search: selective ratio {} is not in (0, 1]", r));
    ActivationCheckpointingConfig ac;
    ac.mode = AcMode::selective;
    ac.ratio = r;
    const int n = int(std::lround(ac.recompute_fraction(n_layers) * n_layers));
    if (n == 0 || n == n_layers || !seen_counts.insert(n).second) continue;
    out.push_back({AcMode::selective, r});
  }
  out.push_back({AcMode::full, 1.0});
  return out;
}

}  // namespace

std::string strategy_label(const TrainConfig& c) {
  const ParallelismConfig& p = c.parallelism;
  const bool one_d = p.tp <= 1 && p.cp <= 1 && p.pp <= 1;
  if (p.sharding_strategy == ShardingStrategy::hybrid_shard && one_d)
    return fmt::format("hybrid_shard/{}", p.shard_group_size(c.world_size(), c.cluster.gpus_per_node));
  return to_string(p.sharding_strategy);  // beside a mesh, mesh_words names dp_replicate
}

namespace {

std::string ac_label(const ActivationCheckpointingConfig& ac) {
  if (ac.mode == AcMode::selective) return fmt::format("selective({:g})", ac.ratio);
  return to_string(ac.mode);
}

// Cheap and exact-enough description of what separates the winner from a rival.
std::string why_line(const SearchSpace& space, const HardwareSpec& hw, const SearchResult& r) {
  if (r.ranked.empty()) return "";
  const Candidate& w = r.ranked.front();
  const Prediction& p = w.prediction;
  const double budget = memory_budget_bytes(space, hw);
  const double exposed_pct = 100.0 * exposed_communication_s(p) / p.step_time_s;
  std::string line = fmt::format(
      "{} wins: {:.1f}% of the step is exposed communication ({:.3g} s of {:.3g} s), {:.1f} GiB "
      "headroom under the {:.0f}% memory budget",
      describe_config(w.config), exposed_pct, exposed_communication_s(p), p.step_time_s,
      (budget - memory_needed_bytes(p)) / kGiB, 100 * space.max_mem_frac);
  // The best candidate with another layout: strategy, shard group or mesh (or, failing that, the
  // runner-up).
  auto layout = [](const TrainConfig& c) { return strategy_label(c) + " " + mesh_words(c); };
  const Candidate* rival = nullptr;
  for (const auto& c : r.ranked) {
    if (layout(c.config) != layout(w.config)) {
      rival = &c;
      break;
    }
  }
  if (!rival && r.ranked.size() > 1) rival = &r.ranked[1];
  if (rival) {
    const Prediction& q = rival->prediction;
    const double slower = 100.0 * (1.0 - q.tokens_per_s_per_gpu / p.tokens_per_s_per_gpu);
    line += fmt::format("; next best {} is {:.1f}% slower ({:.1f}% exposed, {:.1f} GiB headroom)",
                        describe_config(rival->config), slower,
                        100.0 * exposed_communication_s(q) / q.step_time_s,
                        (budget - memory_needed_bytes(q)) / kGiB);
    // The gap against the planner's measured error on such ratios (decision_error.h): the band
    // of the one setting that differs, else the band over every pair. Measured on GPUs' published
    // runs: not stated for a preset without an SM grid (the measured `cpu` profile).
    const std::set<std::string> differ = settings_differing(w.config, rival->config);
    const DecisionBand* band = shipped_decisions().band_for(differ.size() == 1 ? *differ.begin() : kEveryPair);
    if (band && hw.gpu.sm_count > 0) {
      const std::string what =
          band->setting == kEveryPair ? "runs one setting apart" : "runs apart in " + band->setting;
      line += fmt::format(
          "; {} the 1σ error of the planner's throughput ratios between published {} (±{:.1f}% over {} pairs, "
          "configs/decisions.toml){}",
          slower < 100 * band->rel_1sigma ? "within" : "beyond", what, 100 * band->rel_1sigma, band->n_pairs,
          slower < 100 * band->rel_1sigma ? ": measure both before choosing" : "");
    }
  }
  return line;
}

}  // namespace

double memory_needed_bytes(const Prediction& p) {
  return p.mem_reserved_bytes + runtime_overhead_bytes(p);
}

double memory_budget_bytes(const SearchSpace& space, const HardwareSpec& hw) {
  return space.max_mem_frac * hw.gpu.hbm_bytes;
}

std::string describe_config(const TrainConfig& c) {
  std::string s = fmt::format("{} mb {}x{} ac {}", strategy_label(c), c.training.micro_batch,
                              c.training.grad_accum, ac_label(c.activation_checkpointing));
  if (c.precision.reduce_dtype != "fp32") s += " reduce " + c.precision.reduce_dtype;
  if (c.precision.master_dtype != "fp32") s += " master " + c.precision.master_dtype;
  if (c.optimizer.state_dtype != "master") s += " moments " + c.optimizer.state_dtype;
  if (c.precision.compile) s += " compile";
  if (c.precision.fp8_on()) s += std::string(" fp8 ") + to_string(c.precision.fp8);
  const std::string mesh = mesh_words(c);
  return mesh.empty() ? s : s + " " + mesh;
}

std::string mesh_words(const TrainConfig& c) {
  const ParallelismConfig& p = c.parallelism;
  std::string s;
  auto add = [&](const std::string& w) { s += (s.empty() ? "" : " ") + w; };
  if (p.tp > 1 || p.cp > 1 || p.pp > 1) {
    const Mesh m = resolve_mesh(p, c.world_size(), c.cluster.gpus_per_node);
    if (m.dp_replicate > 1 && p.sharding_strategy == ShardingStrategy::hybrid_shard)
      add(fmt::format("dp_replicate {}", m.dp_replicate));
  }
  // Each setting of a dimension beside its degree where it differs from run.toml's default, by its
  // key's name: the label is how emit checks that a file says what was planned (emit.cpp).
  const ParallelismConfig d;
  if (p.tp > 1) add(fmt::format("tp {}{}", p.tp, p.tp_async ? " tp_async" : ""));
  if (p.cp > 1) add(fmt::format("cp {}{}", p.cp, p.cp_rotate != d.cp_rotate ? std::string(" cp_rotate ") + to_string(p.cp_rotate) : ""));
  if (p.pp > 1) {
    add(fmt::format("pp {} {}", p.pp, to_string(p.pp_schedule)));
    if (p.pp_virtual_stages != d.pp_virtual_stages) add(fmt::format("pp_virtual_stages {}", p.pp_virtual_stages));
    if (p.pp_microbatch != d.pp_microbatch) add(fmt::format("pp_microbatch {}", p.pp_microbatch));
  }
  return s;
}

void require_inter_node_network(const TrainConfig& c, const HardwareSpec& hw) {
  if (c.cluster.nodes > 1 && !(effective_inter_node_bandwidth(c, hw) > 0))
    throw UsageError(fmt::format(
        "{} GPUs are {} nodes of {}, but hardware preset {} has no inter-node network (inter_node_gbps = 0); "
        "use at most {} GPUs or give --inter-node-gbps",
        c.world_size(), c.cluster.nodes, c.cluster.gpus_per_node, hw.name, c.cluster.gpus_per_node));
}

TrainConfig search_base_config(const SearchSpace& space, const HardwareSpec& hw) {
  if (space.gpus < 1) throw UsageError(fmt::format("search: --gpus {} must be >= 1", space.gpus));
  if (!(space.max_mem_frac > 0 && space.max_mem_frac <= 1))
    throw UsageError(fmt::format("search: --max-mem-frac {} is not in (0, 1]", space.max_mem_frac));
  TrainConfig c = space.base;
  c.model = space.model;
  c.model_preset = space.model_preset;
  c.cluster.hardware = space.hardware.empty() ? hw.name : space.hardware;
  int gpn = 0;  // a partial node of the preset's (or the given) node when --gpus is smaller
  if (!place_on_nodes(space.gpus, space.gpus_per_node > 0 ? space.gpus_per_node : hw.node.gpus_per_node,
                      /*partial=*/true, c.cluster, &gpn))
    throw UsageError(fmt::format("search: --gpus {} is not a whole number of nodes of {} GPUs",
                                 space.gpus, gpn));
  c.cluster.inter_node_gbps = space.inter_node_gbps;
  c.cluster.power_limit_w = space.power_limit_w;
  c.training.seq_len = space.seq_len > 0 ? space.seq_len : space.model.max_seq_len;
  if (c.training.seq_len > space.model.max_seq_len)
    throw UsageError(fmt::format("search: --seq-len {} is above the model's max_seq_len {}",
                                 c.training.seq_len, space.model.max_seq_len));
  require_inter_node_network(c, hw);
  if (hw.gpu.bf16_flops <= 0) c.precision.param_dtype = "fp32";  // e.g. the CPU profile
  c.prediction = PredictionTable{};
  return c;
}

namespace {
// The (micro_batch, grad_accum) blocks of one layout from a batch block: only the micro-batches
// its pipeline schedule runs (pp_rounds_divide). A block is pruned as memory rising with the
// micro-batch; under an interleaved schedule it need not (the warm-up holds (v − 1) rounds of
// n // max(1, n // pp) micro-batches, mesh_terms.h pp_inflight_microbatches: 8 on pp 4 holds fewer
// than 6), so each micro-batch is a block of its own there (pruned over checkpointing only).
std::vector<std::vector<std::pair<int, int>>> layout_blocks(const std::vector<std::pair<int, int>>& block,
                                                            const MeshChoice& mesh, const ParallelismConfig& base) {
  std::vector<std::pair<int, int>> runnable;
  for (const auto& mg : block)
    if (mesh.pp <= 1 || pp_rounds_divide(mesh.pp_schedule, mesh.pp, pp_microbatches(base, mg.first)))
      runnable.push_back(mg);
  const bool interleaved = mesh.pp > 1 && (mesh.pp_schedule == PpSchedule::interleaved_1f1b ||
                                           mesh.pp_schedule == PpSchedule::interleaved_zero_bubble);
  std::vector<std::vector<std::pair<int, int>>> blocks;
  if (interleaved)
    for (const auto& mg : runnable) blocks.push_back({mg});
  else if (!runnable.empty())
    blocks.push_back(runnable);
  return blocks;
}
}  // namespace

std::optional<int> grad_accum_for_batch(const SearchSpace& space, int mb, int seq, int64_t dp) {
  const double per_micro_step = double(mb) * seq * double(dp);  // tokens
  const double target = double(space.global_batch_tokens);
  const int64_t ga = std::max<int64_t>(1, std::llround(target / per_micro_step));
  const double rel = std::abs(per_micro_step * double(ga) - target) / target;
  if (rel > space.batch_tolerance || ga > (1 << 20)) return std::nullopt;
  return int(ga);
}

namespace {

// Batch blocks: lists of (micro_batch, grad_accum), micro-batch ascending. Free batch: one block
// per grad_accum. Fixed global batch: one block, grad_accum derived per micro-batch over `dp`
// data-parallel ranks (micro_batch is per data-parallel rank).
std::vector<std::vector<std::pair<int, int>>> batch_blocks_for(const SearchSpace& space, const std::vector<int>& mbs,
                                                               int seq, int dp, int64_t* mismatched) {
  std::vector<std::vector<std::pair<int, int>>> batch_blocks;
  if (space.global_batch_tokens <= 0) {
    for (int ga : space.grad_accums) {
      std::vector<std::pair<int, int>> block;
      for (int mb : mbs) block.push_back({mb, ga});
      batch_blocks.push_back(std::move(block));
    }
    return batch_blocks;
  }
  std::vector<std::pair<int, int>> block;
  for (int mb : mbs) {
    const std::optional<int> ga = grad_accum_for_batch(space, mb, seq, dp);
    if (!ga) {
      ++*mismatched;
      continue;
    }
    block.push_back({mb, *ga});
  }
  if (!block.empty()) batch_blocks.push_back(std::move(block));
  return batch_blocks;
}

// A ZeRO runtime runs full_shard (stage 3), shard_grad_op (stage 2) and shard_optimizer
// (stage 1) only (zero_memory.h zero_refusal): the other strategies leave the search; UsageError when none is left.
void keep_zero_strategies(const TrainConfig& base, std::vector<Layout>& shardings) {
  std::string refused;
  shardings.erase(std::remove_if(shardings.begin(), shardings.end(),
                                 [&](const Layout& sh) {
                                   TrainConfig c = base;
                                   c.parallelism.sharding_strategy = sh.strategy;
                                   const std::string why = zero_refusal(c);
                                   if (!why.empty()) refused = why;
                                   return !why.empty();
                                 }),
                  shardings.end());
  if (shardings.empty()) throw UsageError("search: " + refused);
}

// HSDP beside a mesh (dp_replicate × dp_shard over the dp ranks, torchtitan's 3-D and 4-D
// meshes): where the space tries hybrid_shard, the shard groups of one, two and four nodes' dp
// ranks (hsdp_shard_sizes instead where given) that leave at least two replicas. HSDP keeps a
// shard group's gathers on few nodes; a group of more nodes is close to full_shard over them
// all, which is tried beside it (this bound keeps a 405B search on 1024 GPUs near its 1 s).
std::vector<int> mesh_hsdp_sizes(const SearchSpace& space, int dp, int node_dp) {
  const bool hybrid = space.strategies.empty() || std::find(space.strategies.begin(), space.strategies.end(),
                                                            ShardingStrategy::hybrid_shard) != space.strategies.end();
  std::vector<int> out;
  if (!hybrid) return out;
  std::vector<int> sizes = space.hsdp_shard_sizes;
  if (sizes.empty())
    for (int k : {1, 2, 4}) sizes.push_back(node_dp * k);
  for (int g : sizes)
    if (g >= 2 && g < dp && dp % g == 0 && std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  return out;
}

}  // namespace

void add_mesh_layouts(const SearchSpace& space, const RuntimeTerms& terms, int W, int gpn, int seq,
                      std::vector<Layout>* layouts) {
  auto runs = [&](const char* d) { return std::find(terms.mesh.begin(), terms.mesh.end(), d) != terms.mesh.end(); };
  const ModelSpec& m = space.model;
  auto degrees = [&](const std::vector<int>& list, bool allowed) {
    std::vector<int> out{1};
    if (allowed)
      for (int v : list)
        if (v > 1 && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    return out;
  };
  for (int tp : degrees(space.tps, runs("tp"))) {
    if (tp > gpn || m.n_kv_heads % tp != 0 || m.n_heads % tp != 0 || m.ffn_dim % tp != 0) continue;
    for (int cp : degrees(space.cps, runs("cp") && seq >= space.cp_min_seq_len)) {
      if (seq % sequence_pieces(tp, cp) != 0) continue;  // validate_mesh's rule (2·cp divides tp·2·cp)
      // tp and cp groups are consecutive ranks: each block of tp · cp ranks lies inside a node
      // (tp · cp divides the node) or on whole nodes (the node divides it), never across a
      // node's edge, which mesh_groups does not time.
      if (gpn % (tp * cp) != 0 && (tp * cp) % gpn != 0) continue;
      // Tied embeddings run under no pipeline (runtime_refusal).
      for (int pp : degrees(space.pps, runs("pp") && !m.tied_embeddings)) {
        if (tp == 1 && cp == 1 && pp == 1) continue;  // the 1-D layouts are listed already
        if (W % (tp * cp * pp) != 0) continue;
        // A pipeline rank keeps at least one block beside the ends (validate_mesh refuses less).
        if (pp_blocks_beside_ends(m.n_layers, pp) < 1) continue;
        const std::vector<PpSchedule> schedules =
            pp > 1 ? space.pp_schedules : std::vector<PpSchedule>{PpSchedule::one_f_one_b};
        for (PpSchedule sched : schedules) {
          if (pp > 1 && std::find(terms.pp_schedules.begin(), terms.pp_schedules.end(), to_string(sched)) ==
                            terms.pp_schedules.end())
            continue;  // a schedule the runtime does not run
          ParallelismConfig p;
          p.pp = pp;
          p.pp_schedule = sched;
          if (pp > 1 && pp * pp_stages_per_rank(p) > m.n_layers) continue;
          layouts->push_back({ShardingStrategy::full_shard, 0, {tp, cp, pp, sched}});
          if (runs("dp_replicate"))
            for (int g : mesh_hsdp_sizes(space, W / (tp * cp * pp), gpn / std::min(gpn, tp * cp)))
              layouts->push_back({ShardingStrategy::hybrid_shard, g, {tp, cp, pp, sched}});
        }
      }
    }
  }
}

namespace {

// The 1-D layouts of the space: each strategy (the space's, or every one the runtime may run:
// shard_optimizer only under a ZeRO runtime, refused by name elsewhere), hybrid_shard once per
// shard group size.
std::vector<Layout> strategy_layouts(const SearchSpace& space, const TrainConfig& base) {
  const int W = base.world_size();
  const int gpn = base.cluster.gpus_per_node;
  std::vector<ShardingStrategy> strategies = space.strategies;
  // shard_optimizer (ZeRO stage 1) only under a ZeRO runtime (zero_memory.h): tried there by
  // default, refused by name elsewhere.
  const bool zero_runtime = runtime_preset(base.runtime).zero.has_value();
  if (strategies.empty()) {
    strategies = {ShardingStrategy::full_shard, ShardingStrategy::shard_grad_op,
                  ShardingStrategy::hybrid_shard, ShardingStrategy::no_shard};
    if (zero_runtime) strategies.push_back(ShardingStrategy::shard_optimizer);
  } else if (!zero_runtime &&
             std::find(strategies.begin(), strategies.end(), ShardingStrategy::shard_optimizer) != strategies.end()) {
    throw UsageError(fmt::format("search: runtime {} cannot run sharding strategy shard_optimizer (DeepSpeed ZeRO "
                                 "stage 1: --runtime deepspeed runs it)",
                                 base.runtime));
  }
  std::vector<Layout> shardings;  // (strategy, hsdp_shard_size, mesh)
  for (auto s : strategies) {
    if (s != ShardingStrategy::hybrid_shard) {
      // With one rank every strategy is the same computation: keep no_shard only.
      if (W == 1 && s != ShardingStrategy::no_shard) continue;
      shardings.push_back({s, 0, {}});
      continue;
    }
    const std::vector<int> sizes =
        space.hsdp_shard_sizes.empty() ? default_hsdp_sizes(W, gpn) : space.hsdp_shard_sizes;
    for (int g : sizes) {
      if (g < 2 || g >= W || W % g != 0) continue;  // 1 = no_shard, W = full_shard
      shardings.push_back({s, g, {}});
    }
  }

  return shardings;
}

// The space's micro-batches, ascending and each once; its grad_accums checked.
std::vector<int> micro_batch_choices(const SearchSpace& space) {
  std::vector<int> mbs = space.micro_batches;
  std::sort(mbs.begin(), mbs.end());
  mbs.erase(std::unique(mbs.begin(), mbs.end()), mbs.end());
  for (int mb : mbs)
    if (mb < 1) throw UsageError(fmt::format("search: micro-batch {} must be >= 1", mb));
  for (int ga : space.grad_accums)
    if (ga < 1) throw UsageError(fmt::format("search: grad-accum {} must be >= 1", ga));
  return mbs;
}

// Block-level AC levels, most checkpointed first (full, selective by falling ratio, none).
std::vector<AcChoice> ac_levels(const SearchSpace& space) {
  std::vector<AcChoice> acs = ac_choices(space, space.model.n_layers);
  std::reverse(acs.begin(), acs.end());
  std::stable_sort(acs.begin(), acs.end(), [&](const AcChoice& a, const AcChoice& b) {
    ActivationCheckpointingConfig x{a.mode, a.ratio}, y{b.mode, b.ratio};
    return x.recompute_fraction(space.model.n_layers) > y.recompute_fraction(space.model.n_layers);
  });
  return acs;
}

// What the runtime runs of the space's choices (planner/model/runtime.h runtime_refusal names the
// same rules): compile, the fp8 recipes this GPU has the format of, the reduce dtypes; the
// strategies ZeRO runs; block-level selective checkpointing and op-level SAC where it runs them.
struct RuntimeChoices {
  std::vector<bool> compiles;
  std::vector<Fp8Recipe> fp8s;
  std::vector<std::string> reduce_dtypes;
  bool selective_op = false;
  const RuntimeTerms* terms = nullptr;
};
RuntimeChoices runtime_choices(const SearchSpace& space, const HardwareSpec& hw, const TrainConfig& base,
                               std::vector<Layout>* layouts, std::vector<AcChoice>* ac_levels) {
  const int W = base.world_size();
  std::vector<Layout>& shardings = *layouts;
  std::vector<AcChoice>& acs = *ac_levels;
  const bool has_fp8 = hw.gpu.fp8_flops > 0 && base.precision.param_dtype != "fp32";
  std::vector<bool> compiles{false};
  if (space.allow_compile) compiles.push_back(true);
  std::vector<Fp8Recipe> fp8s{Fp8Recipe::none};
  if (space.reduce_dtypes.empty()) throw UsageError("search: no reduce dtype to try");
  // A reduce dtype narrower than the parameters' fp32 is not a mixed-precision choice, and one
  // rank reduces nothing: fp32 only then.
  std::vector<std::string> reduce_dtypes = space.reduce_dtypes;
  if (base.precision.param_dtype == "fp32" || W == 1) reduce_dtypes = {"fp32"};

  // Only what the runtime can run (planner/model/runtime.h runtime_refusal names the same rules).
  const RuntimeSpec& runtime = runtime_preset(base.runtime);
  if (std::string why = devices_refusal(runtime, hw); !why.empty()) throw UsageError("search: " + why);
  const RuntimeTerms& terms = runtime.terms_for(is_gpu(hw));
  if (!terms.compile) compiles = {false};
  // With --allow-fp8: every recipe the runtime runs (configs/runtimes/ fp8_recipes) that this GPU
  // has the number format of (planner/model/fp8_formats.h: MXFP8 / NVFP4 on compute capability 10.0+).
  if (space.allow_fp8 && has_fp8)
    for (const std::string& name : terms.fp8_recipes) {
      const Fp8Recipe r = *parse_fp8_recipe(name);
      if (!fp8_format_refusal(base.runtime, r, hw).empty()) continue;
      if (space.fp8_recipes.empty() ||
          std::find(space.fp8_recipes.begin(), space.fp8_recipes.end(), r) != space.fp8_recipes.end())
        fp8s.push_back(r);
    }
  if (terms.reduce_dtype_is_param_dtype) {
    reduce_dtypes = {base.precision.param_dtype};
  } else {
    std::vector<std::string> ok;
    for (const auto& d : reduce_dtypes)
      if (std::find(terms.reduce_dtypes.begin(), terms.reduce_dtypes.end(), d) != terms.reduce_dtypes.end())
        ok.push_back(d);
    if (ok.empty())
      throw UsageError(fmt::format("search: runtime {} accepts reduce dtypes {}, none of those asked ({})", base.runtime,
                                   fmt::join(terms.reduce_dtypes, ", "), fmt::join(reduce_dtypes, ", ")));
    reduce_dtypes = ok;
  }
  if (std::string why = master_dtype_refusal(runtime, terms, base); !why.empty()) throw UsageError("search: " + why);
  if (std::string why = optimizer_state_dtype_refusal(runtime, terms, base); !why.empty())
    throw UsageError("search: " + why);
  if (runtime.zero) keep_zero_strategies(base, shardings);
  const std::string sync_refused = sync_every_micro_step_refusal(runtime, terms, base);
  if (!sync_refused.empty()) throw UsageError("search: " + sync_refused);
  if (!terms.selective_blocks)
    acs.erase(std::remove_if(acs.begin(), acs.end(), [](const AcChoice& a) { return a.mode == AcMode::selective; }),
              acs.end());
  const bool selective_op = space.allow_selective_op && terms.selective_op;

  return {compiles, fp8s, reduce_dtypes, selective_op, &terms};
}

}  // namespace

Enumeration enumerate_candidates(const SearchSpace& space, const HardwareSpec& hw) {
  const TrainConfig base = search_base_config(space, hw);
  const int W = base.world_size();
  const int gpn = base.cluster.gpus_per_node;
  const int seq = base.training.seq_len;
  std::vector<Layout> shardings = strategy_layouts(space, base);
  const std::vector<int> mbs = micro_batch_choices(space);
  std::vector<AcChoice> acs = ac_levels(space);
  const RuntimeChoices rc = runtime_choices(space, hw, base, &shardings, &acs);
  const std::vector<bool>& compiles = rc.compiles;
  const std::vector<Fp8Recipe>& fp8s = rc.fp8s;
  const std::vector<std::string>& reduce_dtypes = rc.reduce_dtypes;
  const bool selective_op = rc.selective_op;
  add_mesh_layouts(space, *rc.terms, W, gpn, seq, &shardings);

  // AC lattices: the block-level levels (ordered, prunable together) and, when allowed,
  // torchtitan's op-level selective checkpointing as a lattice of its own (its memory is not
  // ordered against the block-level ratios).
  std::vector<std::vector<AcChoice>> lattices{acs};
  if (selective_op) lattices.push_back({{AcMode::selective_op, 1.0}});
  const size_t n_ac_total = acs.size() + (selective_op ? 1 : 0);

  Enumeration e;
  e.base = base;
  e.reduce_dtypes = reduce_dtypes;
  for (const Layout& layout : shardings) {
    const MeshChoice& mesh = layout.mesh;
    int64_t mismatched = 0;
    const std::vector<std::vector<std::pair<int, int>>> batch_blocks =
        batch_blocks_for(space, mbs, seq, W / (mesh.tp * mesh.cp * mesh.pp), &mismatched);
    e.n_batch_mismatch +=
        mismatched * int64_t(n_ac_total * reduce_dtypes.size() * compiles.size() * fp8s.size());
    for (int rd = 0; rd < int(reduce_dtypes.size()); ++rd)
      for (bool compile : compiles)
        for (Fp8Recipe fp8 : fp8s)
          for (const auto& all_of_block : batch_blocks) {
            for (const auto& block : layout_blocks(all_of_block, mesh, base.parallelism))
              for (const auto& lattice : lattices) {
                e.blocks.push_back({e.candidates.size(), int(lattice.size()), int(block.size())});
                for (const AcChoice& ac : lattice)
                  for (const auto& [mb, ga] : block)
                    e.candidates.push_back({layout, mb, ga, ac.mode, ac.ratio, rd, compile, fp8});
              }
          }
  }
  return e;
}

TrainConfig Enumeration::config(size_t i) const {
  const CandidateSettings& s = candidates.at(i);
  TrainConfig c = base;
  c.parallelism.sharding_strategy = s.layout.strategy;
  c.parallelism.hsdp_shard_size = s.layout.hsdp_shard_size;
  c.training.micro_batch = s.micro_batch;
  c.training.grad_accum = s.grad_accum;
  c.activation_checkpointing.mode = s.ac_mode;
  c.activation_checkpointing.ratio = s.ac_ratio;
  c.precision.reduce_dtype = reduce_dtypes.at(size_t(s.reduce_dtype));
  c.precision.compile = s.compile;
  c.precision.fp8 = s.fp8;
  c.parallelism.tp = s.layout.mesh.tp;
  c.parallelism.cp = s.layout.mesh.cp;
  c.parallelism.pp = s.layout.mesh.pp;
  c.parallelism.pp_schedule = s.layout.mesh.pp_schedule;
  return c;
}

std::vector<TrainConfig> Enumeration::configs() const {
  std::vector<TrainConfig> out;
  out.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) out.push_back(config(i));
  return out;
}

namespace {

using Predictions = std::vector<std::unique_ptr<Prediction>>;

// Every candidate's verdict: predicted (its prediction), or pruned (over the memory budget by
// monotonicity: null). Blocks are taken from an atomic counter by space.threads workers; the
// calling thread works too and reports progress between its blocks.
Predictions predict_candidates(const Enumeration& e, const SearchSpace& space, const HardwareSpec& hw, double budget,
                               const std::function<void(double)>& progress) {
  const size_t n = e.size();
  // One runtime for every candidate (the enumeration kept only what it can run), its options
  // resolved for each candidate as plan() resolves them: terms follow the config's layout and
  // strategy (CUDA graphs off with pp, ZeRO stage 1's reductions, a TP loss).
  const RuntimeSpec& runtime = runtime_preset(space.base.runtime);
  auto options_for = [&](const TrainConfig& c) {
    PlanOptions o = plan_options(runtime, hw, c);
    o.replay_within_bytes = budget;  // the allocator replay only where the allocated peak fits
    o.reference_level = space.reference_level;
    o.reference_run = space.reference_run;
    return o;
  };
  // Each prediction is allocated when made, the pruned cost a pointer.
  Predictions preds(n);
  // Memory grows with the micro-batch only while grad_accum stays fixed along a block. With a
  // fixed global batch, grad_accum falls as the micro-batch grows, and a runtime that keeps
  // unsharded gradients across non-final micro-steps (sync_every_micro_step = false) needs
  // less memory at grad_accum 1: no monotonicity to prune by.
  auto run_block = [&](const CandidateBlock& b) {
    const bool prune =
        space.prune && (options_for(e.config(b.begin)).sync_every_micro_step || space.global_batch_tokens <= 0);
    int limit = b.n_mb;  // columns >= limit are known to be over budget
    for (int a = 0; a < b.n_ac; ++a) {
      for (int m = 0; m < limit; ++m) {
        const size_t i = b.begin + size_t(a) * b.n_mb + m;
        const TrainConfig c = e.config(i);
        preds[i] = std::make_unique<Prediction>(predict(c, hw, options_for(c)));
        // Prune on the allocated peak, which grows with the micro-batch; reserved need not
        // (the caching allocator's rounding and splitting can favour a larger request).
        if (prune && preds[i]->mem_peak_bytes + runtime_overhead_bytes(*preds[i]) > budget) {
          limit = m;
          break;
        }
      }
    }
  };
  const size_t nb = e.blocks.size();
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&](bool report) {
    try {
      for (;;) {
        const size_t k = next.fetch_add(1);
        if (k >= nb) break;
        run_block(e.blocks[k]);
        const size_t size = size_t(e.blocks[k].n_ac) * e.blocks[k].n_mb;
        const size_t d = done.fetch_add(size) + size;
        if (report && progress) progress(double(d) / double(n));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
      next.store(nb);  // stop everyone
    }
  };
  int threads = space.threads > 0 ? space.threads : int(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, int(nb)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, false);
  work(true);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return preds;
}

// The candidates that fit the budget with a throughput, counted into r (pruned, evaluated,
// over memory, feasible), ranked: tokens/s/GPU, then less memory, then enumeration order.
std::vector<size_t> ranked_feasible(const Predictions& preds, double budget, SearchResult* r) {
  auto memory_ok = [&](const Prediction& p) { return p.fits && memory_needed_bytes(p) <= budget; };
  std::vector<size_t> feasible;
  for (size_t i = 0; i < preds.size(); ++i) {
    if (!preds[i]) {
      ++r->n_pruned;
      ++r->n_over_memory;
      continue;
    }
    ++r->n_evaluated;
    const Prediction& p = *preds[i];
    if (!memory_ok(p) || !(p.tokens_per_s_per_gpu > 0)) {
      ++r->n_over_memory;
      continue;
    }
    feasible.push_back(i);
  }
  r->n_feasible = int64_t(feasible.size());
  std::stable_sort(feasible.begin(), feasible.end(), [&](size_t a, size_t b) {
    if (preds[a]->tokens_per_s_per_gpu != preds[b]->tokens_per_s_per_gpu)
      return preds[a]->tokens_per_s_per_gpu > preds[b]->tokens_per_s_per_gpu;
    return memory_needed_bytes(*preds[a]) < memory_needed_bytes(*preds[b]);
  });
  return feasible;
}

}  // namespace

SearchResult search(const SearchSpace& space, const HardwareSpec& hw,
                    const std::function<void(double)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchResult r;
  const Enumeration e = enumerate_candidates(space, hw);
  r.n_batch_mismatch = e.n_batch_mismatch;
  r.n_candidates = int64_t(e.size());
  const double budget = memory_budget_bytes(space, hw);
  Predictions preds = predict_candidates(e, space, hw, budget, progress);
  if (progress) progress(1.0);
  const std::vector<size_t> feasible = ranked_feasible(preds, budget, &r);
  // The Pareto front of memory against throughput, then every feasible candidate in rank order.
  std::vector<double> mem, tput;
  mem.reserve(feasible.size());
  tput.reserve(feasible.size());
  for (size_t i : feasible) {
    mem.push_back(memory_needed_bytes(*preds[i]));
    tput.push_back(preds[i]->tokens_per_s_per_gpu);
  }
  for (size_t k : pareto_front(mem, tput)) r.pareto.push_back({e.config(feasible[k]), *preds[feasible[k]]});
  r.ranked.reserve(feasible.size());
  for (size_t i : feasible) r.ranked.push_back({e.config(i), std::move(*preds[i])});
  r.why_winner = why_line(space, hw, r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace shardcast::planner
