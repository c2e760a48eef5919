// The device mesh declared in shared/train_config.h: its resolution and validation.
#include "shared/train_config.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "shared/errors.h"

namespace shardcast {

Mesh resolve_mesh(const ParallelismConfig& p, int world, int gpus_per_node) {
  Mesh m;
  m.tp = std::max(1, p.tp);
  m.cp = std::max(1, p.cp);
  m.pp = std::max(1, p.pp);
  const int64_t inner = int64_t(m.tp) * m.cp * m.pp;  // degrees up to 2^30 each: no int overflow
  const int dp = inner > world ? 1 : std::max(1, int(world / inner));
  if (p.dp_replicate == 1 && p.dp_shard == -1) {  // not given: the 1-D strategy's split
    switch (p.sharding_strategy) {
      case ShardingStrategy::full_shard:
      case ShardingStrategy::shard_grad_op: m.dp_shard = dp; break;
      case ShardingStrategy::hybrid_shard:
        m.dp_shard = p.hsdp_shard_size > 0 ? p.hsdp_shard_size : int(std::max<int64_t>(1, gpus_per_node / (int64_t(m.tp) * m.cp)));
        m.dp_replicate = std::max(1, dp / m.dp_shard);
        break;
      // shard_optimizer: parameters whole on every rank (only the optimizer is partitioned).
      case ShardingStrategy::no_shard:
      case ShardingStrategy::shard_optimizer: m.dp_replicate = dp; break;
    }
    return m;
  }
  m.dp_replicate = std::max(1, p.dp_replicate);
  m.dp_shard = p.dp_shard == -1 ? std::max(1, dp / m.dp_replicate) : std::max(1, p.dp_shard);
  return m;
}

const std::vector<std::pair<std::string, std::string>>& torchtitan_parallelism_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"data_parallel_replicate_degree", "dp_replicate"},
      {"data_parallel_shard_degree", "dp_shard"},
      {"tensor_parallel_degree", "tp"},
      {"context_parallel_degree", "cp"},
      {"pipeline_parallel_degree", "pp"},
      {"enable_async_tensor_parallel", "tp_async"},
      {"pipeline_parallel_schedule", "pp_schedule"},
      {"pipeline_parallel_microbatch_size", "pp_microbatch"},
      {"context_parallel_rotate_method", "cp_rotate"},
  };
  return names;
}

const std::string& torchtitan_parallelism_name(const std::string& ours) {
  for (const auto& [theirs, key] : torchtitan_parallelism_names())
    if (key == ours) return theirs;
  throw std::out_of_range("torchtitan_parallelism_name: no torchtitan name for " + ours);
}

bool pp_schedule_multi_stage(PpSchedule s) {
  return s == PpSchedule::interleaved_1f1b || s == PpSchedule::zbv_zero_bubble ||
         s == PpSchedule::interleaved_zero_bubble;
}

int pp_stages_per_rank(const ParallelismConfig& p) {
  if (p.pp_virtual_stages > 0) return p.pp_virtual_stages;
  return pp_schedule_multi_stage(p.pp_schedule) ? 2 : 1;
}

int pp_blocks_beside_ends(int n_layers, int pp) {
  if (pp <= 1) return n_layers;
  return int(std::lround(double(n_layers + 2) / pp)) - 2;
}

int pp_microbatches(const ParallelismConfig& p, int micro_batch) {
  return std::max(1, micro_batch / std::max(1, p.pp_microbatch));
}

bool pp_rounds_divide(PpSchedule s, int pp, int n_micro) {
  if (s != PpSchedule::interleaved_1f1b && s != PpSchedule::interleaved_zero_bubble) return true;
  const int rounds = std::max(1, n_micro / std::max(1, pp));
  return n_micro % rounds == 0;
}

namespace {

void require(std::vector<std::string>& e, bool ok, const std::string& file, const std::string& key,
             const std::string& detail) {
  if (!ok) e.push_back(ConfigError(file, key, detail).what());
}

// The degrees' own ranges and their product against the world size.
void check_degrees(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const ParallelismConfig& p = c.parallelism;
  for (const auto& [key, v] : {std::pair{"parallelism.tp", p.tp}, {"parallelism.cp", p.cp}, {"parallelism.pp", p.pp},
                               {"parallelism.dp_replicate", p.dp_replicate}})
    require(e, v >= 1, f, key, fmt::format("{} is not allowed: must be >= 1", v));
  require(e, p.dp_shard == -1 || p.dp_shard >= 1, f, "parallelism.dp_shard",
          fmt::format("{} is not allowed: must be >= 1, or -1 for the rest of the world", p.dp_shard));
  const int world = c.world_size();
  const int64_t inner = int64_t(std::max(1, p.tp)) * std::max(1, p.cp) * std::max(1, p.pp);
  if (world < 1) return;
  if (world % inner != 0) {
    require(e, false, f, "parallelism.tp",
            fmt::format("tp {} x cp {} x pp {} = {} does not divide the world size {} (nodes {} x gpus_per_node {})",
                        p.tp, p.cp, p.pp, inner, world, c.cluster.nodes, c.cluster.gpus_per_node));
    return;
  }
  const Mesh m = resolve_mesh(p, world, c.cluster.gpus_per_node);
  const bool given = !(p.dp_replicate == 1 && p.dp_shard == -1);
  // A degree below 1 is reported above; its product with the clamped one would be nonsense.
  const bool degrees_valid = p.dp_replicate >= 1 && (p.dp_shard == -1 || p.dp_shard >= 1);
  if (given && degrees_valid && m.world() != world)
    require(e, false, f, "parallelism.dp_shard",
            fmt::format("dp_replicate {} x dp_shard {} x tp {} x cp {} x pp {} = {} is not the world size {} "
                        "(dp_shard = -1 takes the rest)",
                        m.dp_replicate, p.dp_shard, m.tp, m.cp, m.pp, m.world(), world));
  if (!given && inner > 1 && p.sharding_strategy == ShardingStrategy::hybrid_shard &&
      (world / inner) % m.dp_shard != 0)
    require(e, false, f, "parallelism.hsdp_shard_size",
            fmt::format("{} does not divide the {} data-parallel ranks (world size {} / tp {} / cp {} / pp {})",
                        m.dp_shard, world / inner, world, p.tp, p.cp, p.pp));
}

// dp_replicate / dp_shard given explicitly must say what sharding_strategy says.
void check_strategy(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const ParallelismConfig& p = c.parallelism;
  if (p.dp_replicate == 1 && p.dp_shard == -1) return;
  const char* s = to_string(p.sharding_strategy);
  switch (p.sharding_strategy) {
    case ShardingStrategy::full_shard:
    case ShardingStrategy::shard_grad_op:
      require(e, p.dp_replicate == 1, f, "parallelism.dp_replicate",
              fmt::format("{} is not allowed with sharding_strategy = \"{}\" (one shard group): replicas of a "
                          "shard group are sharding_strategy = \"hybrid_shard\"",
                          p.dp_replicate, s));
      break;
    case ShardingStrategy::hybrid_shard:
      require(e, p.hsdp_shard_size == 0 || p.dp_shard == -1 || p.hsdp_shard_size == p.dp_shard, f,
              "parallelism.hsdp_shard_size",
              fmt::format("{} differs from parallelism.dp_shard = {}: give one of them", p.hsdp_shard_size,
                          p.dp_shard));
      break;
    case ShardingStrategy::no_shard:
    case ShardingStrategy::shard_optimizer:
      require(e, p.dp_shard == -1 || p.dp_shard == 1, f, "parallelism.dp_shard",
              fmt::format("{} is not allowed with sharding_strategy = \"{}\" (parameters whole on every rank): "
                          "must be 1",
                          p.dp_shard, s));
      break;
  }
}

}  // namespace

int64_t sequence_pieces(int tp, int cp) { return int64_t(tp) * (cp > 1 ? 2 * int64_t(cp) : 1); }

namespace {

// What each degree asks of the model and the sequence.
void check_shapes(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const ParallelismConfig& p = c.parallelism;
  const ModelSpec& md = c.model;
  if (p.tp > 1) {
    // Both head counts must divide: name the one (or both) that does not.
    const bool heads = md.n_heads % p.tp == 0, kv = md.n_kv_heads % p.tp == 0;
    require(e, heads && kv, f, "parallelism.tp",
            fmt::format("{} does not divide the model's {} (tensor parallel splits attention by heads: n_heads {} "
                        "and n_kv_heads {} must both be multiples of tp)",
                        p.tp, !heads && !kv ? "n_heads or n_kv_heads" : (!heads ? "n_heads" : "n_kv_heads"),
                        md.n_heads, md.n_kv_heads));
    require(e, md.ffn_dim % p.tp == 0, f, "parallelism.tp",
            fmt::format("{} does not divide the model's ffn_dim {}", p.tp, md.ffn_dim));
    // Sequence parallel splits each sequence over the tp ranks (and load-balanced cp into 2 x cp
    // chunks): torchtitan's Trainer raises otherwise (trainer.py @b5bcd76c6 lines 295-307, from
    // 73aed7f6c), and so does this repository's trainer (tensor_parallel.cpp reduce_scatter_seq).
    const int64_t divisor = sequence_pieces(p.tp, p.cp);
    require(e, c.training.seq_len % divisor == 0, f, "parallelism.tp",
            fmt::format("training.seq_len {} is not a multiple of tp{} = {} (sequence parallel splits each sequence "
                        "over the tp ranks{})",
                        c.training.seq_len, p.cp > 1 ? " x 2 x cp" : "", divisor,
                        p.cp > 1 ? ", and context parallel into 2 x cp chunks" : ""));
  }
  if (p.cp > 1)
    require(e, c.training.seq_len % (2 * p.cp) == 0, f, "parallelism.cp",
            fmt::format("training.seq_len {} is not a multiple of 2 x cp = {} (load-balanced context parallel "
                        "splits the sequence into 2 x cp chunks)",
                        c.training.seq_len, 2 * p.cp));
  require(e, p.pp_microbatch >= 1, f, "parallelism.pp_microbatch",
          fmt::format("{} is not allowed: must be >= 1", p.pp_microbatch));
  require(e, p.pp_virtual_stages >= 0, f, "parallelism.pp_virtual_stages",
          fmt::format("{} is not allowed: must be >= 0 (0 = the schedule's)", p.pp_virtual_stages));
  if (p.pp <= 1 || p.pp_microbatch < 1 || p.pp_virtual_stages < 0) return;
  const int v = pp_stages_per_rank(p);
  require(e, p.pp * v <= md.n_layers, f, "parallelism.pp",
          fmt::format("pp {} x {} stages per rank = {} stages is more than the model's {} layers", p.pp, v, p.pp * v,
                      md.n_layers));
  // The planner's pipeline rank holds round((L + 2) / pp) − 2 blocks beside the embedding and the
  // head (planner/model/mesh_terms.h pp_rank_blocks); it plans no rank of the ends alone.
  const int rank_blocks = pp_blocks_beside_ends(md.n_layers, p.pp);
  require(e, rank_blocks >= 1, f, "parallelism.pp",
          fmt::format("pp {} leaves round(({} layers + 2) / {}) - 2 = {} blocks beside the embedding and the head on "
                      "a pipeline rank; the planner plans at least one (pp <= {})",
                      p.pp, md.n_layers, p.pp, rank_blocks, int((md.n_layers + 2) / 2.5)));
  if (pp_schedule_multi_stage(p.pp_schedule))
    require(e, v >= 2, f, "parallelism.pp_virtual_stages",
            fmt::format("{} is not allowed with pp_schedule = \"{}\": a multi-stage schedule runs >= 2 stages per "
                        "rank",
                        v, to_string(p.pp_schedule)));
  else
    require(e, v == 1, f, "parallelism.pp_virtual_stages",
            fmt::format("{} is not allowed with pp_schedule = \"{}\": it runs one stage per rank", v,
                        to_string(p.pp_schedule)));
  if (p.pp_schedule == PpSchedule::zbv_zero_bubble)
    require(e, v == 2, f, "parallelism.pp_virtual_stages",
            fmt::format("{} is not allowed with pp_schedule = \"ZBVZeroBubble\": its V shape runs 2 stages per rank", v));
  require(e, c.training.micro_batch % p.pp_microbatch == 0, f, "parallelism.pp_microbatch",
          fmt::format("{} does not divide training.micro_batch {} (the sequences of a micro-step are split into "
                      "pipeline micro-batches)",
                      p.pp_microbatch, c.training.micro_batch));
  const int n = pp_microbatches(p, c.training.micro_batch);
  require(e, pp_rounds_divide(p.pp_schedule, p.pp, n), f, "training.micro_batch",
          fmt::format("{} gives {} pipeline micro-batches, not a multiple of {}'s {} rounds (max(1, {} // pp {})): "
                      "torch.distributed.pipelining refuses it",
                      c.training.micro_batch, n, to_string(p.pp_schedule), std::max(1, n / p.pp), n, p.pp));
}

// Keys that only mean something with their degree above 1 are refused without it, not ignored.
void check_dependent_keys(const TrainConfig& c, const std::string& f, std::vector<std::string>& e) {
  const ParallelismConfig& p = c.parallelism;
  const ParallelismConfig d;
  require(e, !p.tp_async || p.tp > 1, f, "parallelism.tp_async", "true is only allowed with tp > 1");
  if (p.pp <= 1) {
    require(e, p.pp_schedule == d.pp_schedule, f, "parallelism.pp_schedule",
            fmt::format("\"{}\" is only allowed with pp > 1", to_string(p.pp_schedule)));
    require(e, p.pp_microbatch == d.pp_microbatch, f, "parallelism.pp_microbatch",
            fmt::format("{} is only allowed with pp > 1", p.pp_microbatch));
    require(e, p.pp_virtual_stages == d.pp_virtual_stages, f, "parallelism.pp_virtual_stages",
            fmt::format("{} is only allowed with pp > 1", p.pp_virtual_stages));
  }
  if (p.cp <= 1)
    require(e, p.cp_rotate == d.cp_rotate, f, "parallelism.cp_rotate",
            fmt::format("\"{}\" is only allowed with cp > 1", to_string(p.cp_rotate)));
}

}  // namespace

std::vector<std::string> validate_mesh(const TrainConfig& c, const std::string& file) {
  std::vector<std::string> e;
  check_degrees(c, file, e);
  check_strategy(c, file, e);
  check_shapes(c, file, e);
  check_dependent_keys(c, file, e);
  return e;
}

std::string mesh_label(const Mesh& m) {
  std::string s;
  auto add = [&](const char* k, int v, bool always) {
    if (v > 1 || always) s += fmt::format("{}{} {}", s.empty() ? "" : " x ", k, v);
  };
  add("dp_replicate", m.dp_replicate, false);
  add("dp_shard", m.dp_shard, true);
  add("tp", m.tp, false);
  add("cp", m.cp, false);
  add("pp", m.pp, false);
  return s;
}

}  // namespace shardcast
