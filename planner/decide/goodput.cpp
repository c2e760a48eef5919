#include "planner/decide/goodput.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "planner/model/memory_model.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/toml_reader.h"

namespace shardcast::planner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void require_key(TableReader& t, const std::string& key, double& out) {
  if (!t.get(key, out)) throw ConfigError(t.file(), key, "is missing (every reliability key is required)");
}

}  // namespace

void check_reliability(const ReliabilitySpec& r, const std::string& file) {
  auto finite_ge0 = [&](double v, const char* key) {
    if (!(v >= 0) || !std::isfinite(v)) throw ConfigError(file, key, fmt::format("{} is not allowed: must be >= 0", v));
  };
  auto positive = [&](double v, const char* key) {
    if (!(v > 0) || !std::isfinite(v)) throw ConfigError(file, key, fmt::format("{} is not allowed: must be > 0", v));
  };
  finite_ge0(r.failures_per_gpu_hour, "failures_per_gpu_hour");
  finite_ge0(r.restart_s, "restart_s");
  positive(r.storage_write_gbytes_per_s, "storage_write_gbytes_per_s");
  positive(r.node_write_gbytes_per_s, "node_write_gbytes_per_s");
}

ReliabilitySpec load_reliability(const std::string& name_or_file) {
  const auto path = resolve_preset(name_or_file, "reliability", "reliability profile");
  const std::string file = path.string();
  const toml::table tbl = parse_toml(read_text(path), file);
  TableReader t(tbl, file, "");
  ReliabilitySpec r;
  r.name = path.stem().string();
  r.file = file;
  t.get("name", r.name);
  if (!t.get("source", r.source) || r.source.empty())
    throw ConfigError(file, "source", "is missing: every reliability profile names its sources");
  require_key(t, "failures_per_gpu_hour", r.failures_per_gpu_hour);
  require_key(t, "restart_s", r.restart_s);
  require_key(t, "storage_write_gbytes_per_s", r.storage_write_gbytes_per_s);
  require_key(t, "node_write_gbytes_per_s", r.node_write_gbytes_per_s);
  t.finish();
  check_reliability(r, file);
  return r;
}

CheckpointSize checkpoint_size(const TrainConfig& cfg) {
  const int W = cfg.world_size();
  const int gpn = std::max(1, cfg.cluster.gpus_per_node);
  int ns = std::max(1, cfg.parallelism.shard_group_size(W, gpn));
  if (cfg.parallelism.sharding_strategy == ShardingStrategy::no_shard) ns = 1;
  // ZeRO stage 1: the fp32 master and AdamW states are partitioned over every rank (plan.cpp state_group).
  if (cfg.parallelism.sharding_strategy == ShardingStrategy::shard_optimizer) ns = W;
  // With a mesh each rank's states are also one tp · cp · pp part of the model's (TP and PP split
  // the parameters, FSDP shards over dp_shard x cp): that many more distinct shards, each written
  // by its rank.
  const Mesh m = resolve_mesh(cfg.parallelism, W, gpn);
  ns *= m.tp * m.cp * m.pp;
  // The same accounting as plan(): master parameters in precision.master_dtype and AdamW's two
  // moments in theirs (optimizer.state_dtype), ÷ the ranks holding distinct shards.
  const StateMemory s =
      state_memory(cfg.model.total_params(), ns, dtype_bytes(cfg.precision.master_dtype), adamw_moment_bytes(cfg));
  CheckpointSize c;
  c.per_rank_bytes = s.parameters + s.optimizer_states;
  c.total_bytes = c.per_rank_bytes * ns;
  c.writers_per_node = std::min(gpn, ns);
  return c;
}

double checkpoint_save_s(const CheckpointSize& size, const ReliabilitySpec& r) {
  const double node_s = size.per_rank_bytes * size.writers_per_node / (r.node_write_gbytes_per_s * 1e9);
  const double aggregate_s = size.total_bytes / (r.storage_write_gbytes_per_s * 1e9);
  return std::max(node_s, aggregate_s);
}

double goodput_at_interval(double tau, double C, double R, double M) {
  if (!(tau > 0)) return 0;
  if (!std::isfinite(M)) return tau / (tau + C);
  // wall/work = M·e^{R/M}·(e^{(τ+C)/M} − 1)/τ; expm1 keeps precision when M ≫ τ + C.
  const double wall_per_work = M * std::exp(R / M) * std::expm1((tau + C) / M) / tau;
  return 1.0 / wall_per_work;
}

double young_interval_s(double C, double M) { return std::sqrt(2.0 * C * M); }

double daly_interval_s(double C, double M) {
  if (!std::isfinite(M)) return kInf;
  if (C >= 2.0 * M) return M;
  const double x = C / (2.0 * M);
  return std::sqrt(2.0 * C * M) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - C;
}

double optimal_interval_s(double C, double M) {
  if (!std::isfinite(M)) return kInf;
  if (!(C > 0)) return 0;
  // d/dτ log(goodput) = 1/τ − 1/(M·(1 − e^{−(τ+C)/M})): h(τ) = M·(1 − e^{−(τ+C)/M}) − τ has
  // h(0) > 0, h' < 0 and h(M) < 0, so the one root lies in (0, M).
  auto h = [&](double tau) { return -M * std::expm1(-(tau + C) / M) - tau; };
  double lo = 0, hi = M;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (h(mid) > 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

Goodput goodput(const TrainConfig& cfg, const Prediction& p, const ReliabilitySpec& r) {
  assert(p.step_time_s > 0);
  Goodput g;
  const double rate_per_s = r.failures_per_gpu_hour * cfg.world_size() / 3600.0;  // job interruptions / s
  g.mtbf_s = rate_per_s > 0 ? 1.0 / rate_per_s : kInf;
  g.interruptions_per_day = rate_per_s * 86400.0;
  g.checkpoint = checkpoint_size(cfg);
  g.save_s = checkpoint_save_s(g.checkpoint, r);
  g.restart_s = r.restart_s;
  g.young_interval_s = std::isfinite(g.mtbf_s) ? young_interval_s(g.save_s, g.mtbf_s) : kInf;
  g.daly_interval_s = daly_interval_s(g.save_s, g.mtbf_s);
  g.effective_tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
  if (!std::isfinite(g.mtbf_s)) return g;  // no failures: nothing is lost, no periodic save needed
  // Whole steps on either side of the exact optimum; goodput is log-concave in τ, so the
  // better of the two is the best whole-step interval.
  const double step = p.step_time_s;
  const double k = optimal_interval_s(g.save_s, g.mtbf_s) / step;
  const double cap = 1e15;  // keeps the step count representable
  int64_t best_k = 1;
  double best = -1;
  for (double cand : {std::floor(k), std::ceil(k)}) {
    const int64_t kk = int64_t(std::clamp(cand, 1.0, cap));
    const double gp = goodput_at_interval(double(kk) * step, g.save_s, g.restart_s, g.mtbf_s);
    if (gp > best) {
      best = gp;
      best_k = kk;
    }
  }
  g.interval_steps = best_k;
  g.interval_s = double(best_k) * step;
  g.goodput = best;
  g.effective_tokens_per_s_per_gpu = p.tokens_per_s_per_gpu * best;
  return g;
}

int64_t recommended_checkpoint_interval_steps(const TrainConfig& cfg, const Prediction& p, const ReliabilitySpec& r) {
  return goodput(cfg, p, r).interval_steps;
}

}  // namespace shardcast::planner
