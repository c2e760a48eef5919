// `shardcast scale`: capacity planning. Without --deadline: the best configuration at each GPU
// count of one GPU type, with total tokens/s, goodput under failures (interruptions,
// checkpoint saves, restarts; planner/decide/goodput.h), the recommended checkpoint.interval, days
// and GPU-hours for a token budget, scaling efficiency and where communication stops hiding.
// With --deadline: the budget question (planner/decide/budget.h) over --gpu-types — the cheapest
// plans that train --tokens by the deadline, the smallest cluster that still does, the 1σ band
// of the date, and where each type breaks; exit code 3 when no plan meets the deadline.
// `--csv FILE` writes the table, `--json` prints it.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "planner/decide/budget.h"
#include "planner/cli/commands.h"
#include "planner/cli/format.h"
#include "planner/cli/reliability_flags.h"
#include "planner/cli/search_flags.h"
#include "planner/model/plan.h"
#include "planner/model/power_limit.h"
#include "planner/decide/scale.h"
#include "shared/errors.h"
#include "shared/decimal_text.h"

namespace shardcast::cli {

namespace {

struct ScaleFlags {
  SpaceFlags space;
  ReliabilityFlags reliability;
  int from = 8, to = 1024;
  std::vector<int> counts;
  std::string tokens = "2T";
  std::string deadline;                 // "" = no budget question
  std::vector<std::string> gpu_types;   // with --deadline
  std::vector<std::string> prices;      // TYPE=PRICE
  size_t top = 10;
  double goodput_threshold = 0.9;
  std::string csv;
  bool json = false;
};

// "30d" -> 30, "12h" -> 0.5, "90m", "3600s". A unit is required. Throws UsageError naming `flag`.
double parse_duration_days(const std::string& text, const std::string& flag) {
  const std::string hint = "a duration with a unit: d, h, m or s (e.g. 30d, 12h)";
  if (text.size() < 2) throw UsageError(fmt::format("{} '{}' is not {}", flag, text, hint));
  const char unit = text.back();
  double per_day = 0;
  switch (unit) {
    case 'd': per_day = 1; break;
    case 'h': per_day = 24; break;
    case 'm': per_day = 24 * 60; break;
    case 's': per_day = 86400; break;
    default: throw UsageError(fmt::format("{} '{}' is not {}", flag, text, hint));
  }
  const std::string num = text.substr(0, text.size() - 1);
  const std::optional<double> parsed = parse_decimal(num);
  if (!parsed) throw UsageError(fmt::format("{} '{}' is not {}", flag, text, hint));
  const double v = *parsed;
  if (!(v > 0)) throw UsageError(fmt::format("{} '{}' must be > 0", flag, text));
  return v / per_day;
}

std::string days_band(double d, double lo, double hi) {
  return fmt::format("{:.1f} (1σ {:.1f}–{:.1f})", d, lo, hi);
}

std::string interval_text(const planner::Goodput& g) {
  return g.interval_steps > 0 ? std::to_string(g.interval_steps) : "-";
}

nlohmann::json goodput_json(const planner::Goodput& g) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"goodput", g.goodput},
          {"effective_tokens_per_s_per_gpu", g.effective_tokens_per_s_per_gpu},
          {"checkpoint_interval_steps", g.interval_steps},
          {"checkpoint_interval_s", g.interval_s},
          {"checkpoint_bytes_per_rank", g.checkpoint.per_rank_bytes},
          {"checkpoint_save_s", g.save_s},
          {"restart_s", g.restart_s},
          {"mtbf_s", num(g.mtbf_s)},
          {"interruptions_per_day", g.interruptions_per_day},
          {"young_interval_s", num(g.young_interval_s)},
          {"daly_interval_s", num(g.daly_interval_s)}};
}

nlohmann::json reliability_json(const planner::ReliabilitySpec& r, double threshold) {
  return {{"profile", r.name},
          {"failures_per_gpu_hour", r.failures_per_gpu_hour},
          {"restart_s", r.restart_s},
          {"storage_write_gbytes_per_s", r.storage_write_gbytes_per_s},
          {"node_write_gbytes_per_s", r.node_write_gbytes_per_s},
          {"goodput_threshold", threshold}};
}

void print_reliability(const planner::ReliabilitySpec& r) {
  fmt::print("failures: {:.3g} interruptions per GPU-hour, restart {:.0f} s, checkpoint writes at {:.0f} GB/s "
             "aggregate and {:.0f} GB/s per node (profile {})\n",
             r.failures_per_gpu_hour, r.restart_s, r.storage_write_gbytes_per_s, r.node_write_gbytes_per_s, r.name);
}

// The mesh of a point's plan as CSV cells, under run.toml's [parallelism] names: the degrees
// resolved (dp_shard = -1 and a hybrid group filled in, as the GUI's search table shows them);
// pp_schedule empty without pp.
constexpr const char* kMeshCsvColumns = "dp_replicate,dp_shard,tp,cp,pp,pp_schedule";
std::string mesh_csv(const TrainConfig& c) {
  const Mesh m = resolve_mesh(c.parallelism, c.cluster.world_size(), c.cluster.gpus_per_node);
  return fmt::format("{},{},{},{},{},{}", m.dp_replicate, m.dp_shard, m.tp, m.cp, m.pp,
                     m.pp > 1 ? to_string(c.parallelism.pp_schedule) : "");
}

std::string csv_text(const std::vector<planner::ScalePoint>& pts) {
  std::string o =
      std::string("gpus,nodes,feasible,config,sharding_strategy,hsdp_shard_size,") + kMeshCsvColumns +
      ",micro_batch,grad_accum,ac_mode,ac_ratio,"
      "reduce_dtype,compile,fp8,global_batch_tokens,tokens_per_s_per_gpu,total_tokens_per_s,mfu,step_time_s,"
      "exposed_fraction,mem_needed_bytes,days,gpu_hours,scaling_efficiency,goodput,checkpoint_interval_steps,"
      "days_with_failures,flags\n";
  for (const auto& p : pts) {
    const TrainConfig& c = p.best.config;
    const Prediction& q = p.best.prediction;
    if (!p.feasible) {
      o += fmt::format("{},{},false,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,{}\n", p.gpus, p.nodes, p.flags);
      continue;
    }
    o += fmt::format("{},{},true,\"{}\",{},{},{},{},{},{},{:g},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{:.6g},{}\n",
                     p.gpus, p.nodes, planner::describe_config(c), to_string(c.parallelism.sharding_strategy),
                     c.parallelism.hsdp_shard_size, mesh_csv(c), c.training.micro_batch, c.training.grad_accum,
                     to_string(c.activation_checkpointing.mode), c.activation_checkpointing.ratio,
                     c.precision.reduce_dtype, c.precision.compile, to_string(c.precision.fp8), p.global_batch_tokens,
                     q.tokens_per_s_per_gpu, p.total_tokens_per_s, q.mfu, q.step_time_s, p.exposed_fraction,
                     planner::memory_needed_bytes(q), p.days, p.gpu_hours, p.scaling_efficiency, p.goodput.goodput,
                     p.goodput.interval_steps, p.days_with_failures, p.flags);
  }
  return o;
}

std::string budget_csv(const planner::BudgetResult& r) {
  std::string o =
      std::string("gpu_type,gpus,nodes,feasible,config,") + kMeshCsvColumns +
      ",global_batch_tokens,tokens_per_s_per_gpu,goodput,"
      "effective_tokens_per_s_per_gpu,checkpoint_interval_steps,days_ideal,days,days_lo,days_hi,gpu_hours,cost,"
      "meets_deadline,rank,flags\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& w = r.rows[i];
    const auto& p = w.point;
    const auto it = std::find(r.ranked.begin(), r.ranked.end(), i);
    const std::string rank = it == r.ranked.end() ? "" : std::to_string(it - r.ranked.begin() + 1);
    if (!p.feasible) {
      o += fmt::format("{},{},{},false,,,,,,,,,,,,,,,,,,,false,,{}\n", w.gpu_type, p.gpus, p.nodes, p.flags);
      continue;
    }
    o += fmt::format("{},{},{},true,\"{}\",{},{},{:.6g},{:.6g},{:.6g},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{},{}\n",
                     w.gpu_type, p.gpus, p.nodes, planner::describe_config(p.best.config), mesh_csv(p.best.config),
                     p.global_batch_tokens,
                     p.best.prediction.tokens_per_s_per_gpu, p.goodput.goodput,
                     p.goodput.effective_tokens_per_s_per_gpu, p.goodput.interval_steps, w.days_ideal, w.days,
                     w.days_lo, w.days_hi, w.gpu_hours, w.cost >= 0 ? fmt::format("{:.6g}", w.cost) : "",
                     w.meets_deadline, rank, p.flags);
  }
  return o;
}

// One sentence per limit: "micro-batch 1 is forced (mb1) from 512 GPUs on A, B; from 1024 on C;
// not up to 16384 on D."
void print_breaks(const std::vector<planner::BudgetBreaks>& bs, int largest, double exposed_threshold,
                  double goodput_threshold, int64_t batch_tokens) {
  auto sentence = [&](const std::string& what, int planner::BudgetBreaks::*at) {
    std::map<int, std::string> by_count;  // 0 = never
    for (const auto& b : bs) by_count[b.*at] += (by_count[b.*at].empty() ? "" : ", ") + b.gpu_type;
    std::string s;
    for (const auto& [n, types] : by_count) {
      if (n == 0) continue;
      s += fmt::format("{}from {} GPUs on {}", s.empty() ? "" : "; ", n, types);
    }
    if (by_count.count(0))
      s += fmt::format("{}not up to {} GPUs on {}", s.empty() ? "" : "; ", largest, by_count[0]);
    fmt::print("  {}: {}.\n", what, s);
  };
  const std::string batch = batch_tokens > 0 ? short_count(double(batch_tokens)) + "-token" : "chosen";
  sentence(fmt::format("the {} global batch leaves one sequence per data-parallel rank (mb1)", batch), &planner::BudgetBreaks::mb1_at);
  sentence("no layout meets it within its tolerance, the nearest batch used (batch>target, batch<target)",
           &planner::BudgetBreaks::batch_over_at);
  sentence(fmt::format("communication stops hiding, > {:.0f}% of the step exposed (comm-exposed)", 100 * exposed_threshold),
           &planner::BudgetBreaks::comm_exposed_at);
  sentence(fmt::format("goodput falls below {:.0f}% (goodput<{:g})", 100 * goodput_threshold, goodput_threshold),
           &planner::BudgetBreaks::goodput_low_at);
}

// The budget question's options: the scale options, the GPU types, their prices (a bare number
// prices the one type compared; with several, each price names its type), the deadline.
planner::BudgetOptions budget_options(const ScaleFlags& f, const planner::ScaleOptions& base) {
  planner::BudgetOptions opt;
  opt.scale = base;
  opt.gpu_types = f.gpu_types;
  std::vector<std::string> prices = f.prices;
  // A bare number prices the one GPU type compared; with several, each price names its type.
  if (prices.size() == 1 && prices[0].find('=') == std::string::npos) {
    if (opt.gpu_types.size() != 1)
      throw UsageError(fmt::format("--price '{}': with {} GPU types each price names its type: --price {}=PRICE,{}=PRICE"
                                   "{} (price per GPU-hour)",
                                   prices[0], opt.gpu_types.size(), opt.gpu_types[0], opt.gpu_types[1],
                                   opt.gpu_types.size() > 2 ? ",..." : ""));
    prices[0] = opt.gpu_types[0] + "=" + prices[0];
  }
  opt.price_per_gpu_hour = planner::parse_prices(prices, "--price");
  opt.deadline_days = parse_duration_days(f.deadline, "--deadline");
  opt.top = f.top;
  return opt;
}

// `scale --deadline --json`: the ranked plans, every (GPU type, count) row and where each type breaks.
nlohmann::json budget_json(const planner::BudgetOptions& opt, const planner::BudgetResult& r, int seq) {
  const planner::ScaleOptions& base = opt.scale;
  const auto& sp = base.space;
  const double deadline = opt.deadline_days;
  nlohmann::json j = {{"schema", 1},
                      {"model", sp.model_preset},
                      {"seq_len", seq},
                      {"mean_doc_len", sp.base.data.mean_doc_len},
                      {"tokens", base.tokens},
                      {"global_batch_tokens", base.global_batch_tokens},
                      {"deadline_days", deadline},
                      {"gpu_types", opt.gpu_types},
                      {"price_per_gpu_hour", opt.price_per_gpu_hour},
                      {"ranked_by", r.by_cost ? "cost" : "gpu_hours"},
                      {"reliability", reliability_json(*base.reliability, base.goodput_threshold)},
                      {"exposed_threshold", base.exposed_threshold},
                      {"ranked", r.ranked},
                      {"smallest", r.smallest >= 0 ? nlohmann::json(r.smallest) : nlohmann::json(nullptr)},
                      {"cheapest_per_type", r.cheapest_per_type},
                      {"fastest", r.fastest >= 0 ? nlohmann::json(r.fastest) : nlohmann::json(nullptr)},
                      {"deadline_met", !r.ranked.empty()},
                      {"shortfall_days", r.shortfall_days},
                      {"n_candidates", r.n_candidates},
                      {"seconds", r.seconds}};
  j["rows"] = nlohmann::json::array();
  for (const auto& w : r.rows) {
    const auto& p = w.point;
    nlohmann::json q = {{"gpu_type", w.gpu_type}, {"gpus", p.gpus},   {"nodes", p.nodes},
                        {"feasible", p.feasible}, {"flags", p.flags}, {"n_candidates", p.n_candidates}};
    if (p.feasible) {
      q.update({{"days_ideal", w.days_ideal},
                {"days", w.days},
                {"days_1sigma", {w.days_lo, w.days_hi}},
                {"gpu_hours", w.gpu_hours},
                {"cost", w.cost >= 0 ? nlohmann::json(w.cost) : nlohmann::json(nullptr)},
                {"meets_deadline", w.meets_deadline},
                {"meets_deadline_at_1sigma", w.meets_at_1sigma},
                {"total_tokens_per_s", p.total_tokens_per_s},
                {"global_batch_tokens", p.global_batch_tokens},
                {"goodput", goodput_json(p.goodput)},
                {"best", candidate_json(p.best)}});
    }
    j["rows"].push_back(q);
  }
  j["breaks"] = nlohmann::json::array();
  for (const auto& b : r.breaks)
    j["breaks"].push_back({{"gpu_type", b.gpu_type},
                           {"mb1_at", b.mb1_at},
                           {"batch_over_at", b.batch_over_at},
                           {"comm_exposed_at", b.comm_exposed_at},
                           {"goodput_low_at", b.goodput_low_at}});
  return j;
}

std::string budget_label(const planner::BudgetRow& w) { return fmt::format("{} x {}", w.gpu_type, w.point.gpus); }

// No plan meets the deadline: how late the fastest one is (or that nothing fits).
void print_budget_missed(const planner::BudgetResult& r, double deadline) {
  if (r.fastest < 0) {
    fmt::print("no plan meets {:g} days: no configuration fits at any count\n", deadline);
  } else {
    const auto& w = r.rows[size_t(r.fastest)];
    fmt::print("no plan meets {:g} days: the fastest, {} ({}), finishes in {:.1f} days (1σ {:.1f}–{:.1f}), "
               "{:.1f} days ({:.0f}%) late\n",
               deadline, budget_label(w), planner::describe_config(w.point.best.config), w.days, w.days_lo, w.days_hi,
               r.shortfall_days, 100 * r.shortfall_days / deadline);
  }
}

// The plans that meet the deadline, cheapest first, then the cheapest per GPU type and the
// smallest cluster.
void print_budget_ranked(const planner::BudgetOptions& opt, const planner::BudgetResult& r) {
  const double deadline = opt.deadline_days;
  size_t wcfg = 11;
  for (size_t i : r.ranked) wcfg = std::max(wcfg, planner::describe_config(r.rows[i].point.best.config).size());
  fmt::print("cheapest plans that meet {:g} days (by {}):\n", deadline, r.by_cost ? "cost" : "GPU-hours");
  fmt::print("{:>3}  {:<15} {:>6}  {:<{}} {:>9} {:>8} {:>8} {:>6} {:>6}  {:<22} {:>9} {:>10}  {}\n", "#",
             "GPU type", "GPUs", "best config", wcfg, "tok/s/GPU", "goodput", "tok/s+f", "ckpt", "ideal",
             "days with failures", "GPU-h", "cost", "flags");
  for (size_t k = 0; k < r.ranked.size(); ++k) {
    const auto& w = r.rows[r.ranked[k]];
    const auto& p = w.point;
    fmt::print("{:>3}  {:<15} {:>6}  {:<{}} {:>9.0f} {:>7.1f}% {:>8.0f} {:>6} {:>6.1f}  {:<22} {:>9} {:>10}  {}{}\n",
               k + 1, w.gpu_type, p.gpus, planner::describe_config(p.best.config), wcfg,
               p.best.prediction.tokens_per_s_per_gpu, 100 * p.goodput.goodput,
               p.goodput.effective_tokens_per_s_per_gpu, interval_text(p.goodput),
               w.days_ideal, days_band(w.days, w.days_lo, w.days_hi), short_count(w.gpu_hours),
               w.cost >= 0 ? short_count(w.cost) : "-", p.flags, w.meets_at_1sigma ? "" : " late-at-1σ");
  }
  const auto& best = r.rows[r.ranked.front()];
  fmt::print("\ncheapest: {} finishes in {:.1f} days, 1σ {:.1f}–{:.1f} ({:.1f} days without failures), {} GPU-hours{}\n"
             "          band: tokens/s {}\n",
             budget_label(best), best.days, best.days_lo, best.days_hi, best.days_ideal, short_count(best.gpu_hours),
             best.cost >= 0 ? fmt::format(", cost {}", short_count(best.cost)) : "",
             best.point.best.prediction.error_band_note);
  fmt::print("per GPU type:");
  for (size_t k = 0; k < opt.gpu_types.size(); ++k) {
    const long i = r.cheapest_per_type[k];
    if (i < 0) {
      fmt::print(" {} misses it;", opt.gpu_types[k]);
      continue;
    }
    const auto& w = r.rows[size_t(i)];
    fmt::print(" {} x {} {:.1f} days {} GPU-h{};", w.gpu_type, w.point.gpus, w.days, short_count(w.gpu_hours),
               w.cost >= 0 ? " cost " + short_count(w.cost) : "");
  }
  fmt::print("\n");
  const auto& sm = r.rows[size_t(r.smallest)];
  fmt::print("smallest cluster that meets {:g} days: {} ({}), {:.1f} days, 1σ {:.1f}–{:.1f}\n", deadline, budget_label(sm),
             planner::describe_config(sm.point.best.config), sm.days, sm.days_lo, sm.days_hi);
}

void run_budget(const ScaleFlags& f, const planner::ScaleOptions& base) {
  const planner::BudgetOptions opt = budget_options(f, base);
  const planner::BudgetResult r = planner::budget(opt, progress_bar("scale"));
  if (!f.csv.empty()) write_file_atomic(f.csv, budget_csv(r));
  const auto& sp = base.space;
  const int seq = sp.seq_len > 0 ? sp.seq_len : sp.model.max_seq_len;
  const double deadline = opt.deadline_days;
  if (f.json) {
    fmt::print("{}\n", budget_json(opt, r, seq).dump(2));
    if (r.ranked.empty()) throw ExitCode{kExitNoFit};
    return;
  }
  std::string types;
  for (const auto& t : opt.gpu_types) types += (types.empty() ? "" : ", ") + t;
  fmt::print("scale: {} ({} parameters), {} tokens in {:g} days on {} for {}; {}, global batch {} tokens\n",
             sp.model_preset, human_count(double(sp.model.total_params())), short_count(base.tokens), deadline, types,
             runtime_headline(f.space, sp), seq_len_text(seq, sp, /*on_gpu=*/true), base.global_batch_tokens > 0 ? short_count(double(base.global_batch_tokens)) : "any");
  print_reliability(*base.reliability);
  print_reference_run(sp);
  fmt::print("searched {} configurations in {:.2f} s\n\n", r.n_candidates, r.seconds);
  if (r.ranked.empty())
    print_budget_missed(r, deadline);
  else
    print_budget_ranked(opt, r);
  fmt::print("\nwhere it breaks:\n");
  int largest = 0;
  for (const auto& w : r.rows) largest = std::max(largest, w.point.gpus);
  print_breaks(r.breaks, largest, base.exposed_threshold, base.goodput_threshold, base.global_batch_tokens);
  fmt::print("tok/s+f = tok/s/GPU x goodput; ckpt = recommended checkpoint.interval in steps (Young/Daly optimum); "
             "days with failures = ideal days / goodput, 1σ from the prediction's error band; late-at-1σ = meets the deadline only at the central "
             "estimate\n");
  if (!f.csv.empty()) fmt::print("csv: {}\n", f.csv);
  if (r.ranked.empty()) throw ExitCode{kExitNoFit};
}

}  // namespace

// `scale --json`: the table of GPU counts with each count's best plan and goodput.
void print_scale_json(const planner::ScaleOptions& opt, const HardwareSpec& hw, int seq,
                      const std::vector<planner::ScalePoint>& pts) {
  nlohmann::json j = {{"schema", 1},
                      {"model", opt.space.model_preset},
                      {"hardware", hw.name},
                      {"seq_len", seq},
                      {"mean_doc_len", opt.space.base.data.mean_doc_len},
                      {"tokens", opt.tokens},
                      {"global_batch_tokens", opt.global_batch_tokens},
                      {"exposed_threshold", opt.exposed_threshold},
                      {"reliability", reliability_json(*opt.reliability, opt.goodput_threshold)}};
  j["points"] = nlohmann::json::array();
  for (const auto& p : pts) {
    nlohmann::json q = {{"gpus", p.gpus},
                        {"nodes", p.nodes},
                        {"feasible", p.feasible},
                        {"total_tokens_per_s", p.total_tokens_per_s},
                        {"days", p.days},
                        {"gpu_hours", p.gpu_hours},
                        {"days_with_failures", p.days_with_failures},
                        {"gpu_hours_with_failures", p.gpu_hours_with_failures},
                        {"scaling_efficiency", p.scaling_efficiency},
                        {"exposed_fraction", p.exposed_fraction},
                        {"comm_exposed", p.comm_exposed},
                        {"batch_met", p.batch_met},
                        {"global_batch_tokens", p.global_batch_tokens},
                        {"flags", p.flags},
                        {"n_candidates", p.n_candidates}};
    if (p.feasible) {
      q["best"] = candidate_json(p.best);
      q["goodput"] = goodput_json(p.goodput);
    }
    j["points"].push_back(q);
  }
  fmt::print("{}\n", j.dump(2));
}

namespace {

// The flags as scale's options (and the hardware preset they name); in the budget question, the
// first of --gpu-types (or --hardware) and --to's larger default.
planner::ScaleOptions scale_options(ScaleFlags& f, bool to_given, SpaceFlags* space, HardwareSpec* hw) {
  const bool budget_mode = !f.deadline.empty();
  if (!f.prices.empty() && !budget_mode)
    throw UsageError("scale --price: cost is the budget question's ranking: add --deadline TIME (e.g. --deadline "
                     "30d) with --tokens; without one, scale prints GPU-hours per count (GPU-h column), which "
                     "times the price per GPU-hour is the cost");
  SpaceFlags& sf = *space;
  sf = f.space;
  if (budget_mode) {
    if (!f.gpu_types.empty() && !sf.gpu.empty()) throw UsageError("scale: give --hardware or --gpu-types, not both");
    if (f.gpu_types.empty()) {
      if (sf.gpu.empty()) throw UsageError("scale --deadline: --gpu-types (or --hardware) is required");
      f.gpu_types = {sf.gpu};
    }
    if (!sf.reference_run.empty() && f.gpu_types.size() > 1)
      throw UsageError("scale --deadline: --reference-run carries the level of one GPU type; give --gpu-types with "
                       "that type alone");
    sf.gpu = f.gpu_types.front();
    if (!to_given) f.to = 16384;
  }
  planner::ScaleOptions opt;
  opt.space = to_space(sf, "scale", *hw, "4Mi");
  opt.global_batch_tokens = opt.space.global_batch_tokens;
  opt.from = f.from;
  opt.to = f.to;
  opt.counts = f.counts;
  opt.tokens = parse_count(f.tokens, "--tokens");
  if (!(opt.tokens > 0)) throw UsageError(fmt::format("--tokens '{}' must be > 0", f.tokens));
  opt.reliability = to_reliability(f.reliability);
  opt.goodput_threshold = f.goodput_threshold;
  return opt;
}

// The headline, the reliability and reference-run lines, and one row per GPU count.
void print_scale_table(const planner::ScaleOptions& opt, const HardwareSpec& hw, const SpaceFlags& sf, int seq,
                       const std::vector<planner::ScalePoint>& pts) {
  TrainConfig power_cfg;
  power_cfg.cluster.power_limit_w = opt.space.power_limit_w;
  fmt::print("scale: {} ({} parameters) on {}{} for {}, {}, global batch {} tokens, budget {} tokens\n",
             opt.space.model_preset, human_count(double(opt.space.model.total_params())), hw.name,
             planner::power_limit_note(planner::resolve_power_limit(power_cfg, hw)), runtime_headline(sf, opt.space),
             seq_len_text(seq, opt.space, planner::is_gpu(hw)),
             opt.global_batch_tokens > 0 ? short_count(double(opt.global_batch_tokens)) : "any",
             short_count(opt.tokens));
  print_reliability(*opt.reliability);
  print_reference_run(opt.space);
  size_t w = 12;  // width of the config column
  for (const auto& p : pts)
    if (p.feasible) w = std::max(w, planner::describe_config(p.best.config).size());
  fmt::print("\n{:>6} {:>5}  {:<{}} {:>9} {:>9} {:>6} {:>8} {:>8} {:>9} {:>5} {:>8} {:>8} {:>8} {:>6} {:>8}  {}\n",
             "GPUs", "nodes", "best config", w, "tok/s/GPU", "total", "MFU", "exposed", "days", "GPU-h", "eff",
             "batch", "goodput", "tok/s+f", "ckpt", "days+f", "flags");
  for (const auto& p : pts) {
    if (!p.feasible) {
      fmt::print("{:>6} {:>5}  {:<{}} {}\n", p.gpus, p.nodes, "nothing fits", w, p.flags);
      continue;
    }
    const Prediction& q = p.best.prediction;
    fmt::print("{:>6} {:>5}  {:<{}} {:>9.0f} {:>9} {:>5.1f}% {:>7.1f}% {:>8.1f} {:>9} {:>4.0f}% {:>8} {:>7.1f}% "
               "{:>8.0f} {:>6} {:>8.1f}  {}\n",
               p.gpus, p.nodes, planner::describe_config(p.best.config), w, q.tokens_per_s_per_gpu,
               short_count(p.total_tokens_per_s), 100 * q.mfu, 100 * p.exposed_fraction, p.days,
               short_count(p.gpu_hours), 100 * p.scaling_efficiency, short_count(double(p.global_batch_tokens)),
               100 * p.goodput.goodput, p.goodput.effective_tokens_per_s_per_gpu, interval_text(p.goodput),
               p.days_with_failures, p.flags);
  }
}

// What the counts that fit say together: where communication stops hiding, where goodput falls.
void print_scale_summary(const planner::ScaleOptions& opt, const std::vector<planner::ScalePoint>& pts) {
  const bool any_feasible = std::any_of(pts.begin(), pts.end(), [](const planner::ScalePoint& p) { return p.feasible; });
  const bool all_feasible = std::all_of(pts.begin(), pts.end(), [](const planner::ScalePoint& p) { return p.feasible; });
  const planner::ScalePoint *first_exposed = nullptr, *first_low = nullptr;
  for (const auto& p : pts) {
    if (!p.feasible) continue;
    if (p.comm_exposed && !first_exposed) first_exposed = &p;
    if (p.goodput_low && !first_low) first_low = &p;
  }
  // The summaries speak of the counts that fit; with none there is nothing to summarise.
  const char* counts = all_feasible ? "at every count" : "at every count that fits";
  if (!any_feasible) {
    fmt::print("nothing fits at any GPU count: every configuration, at any global batch, is over {:.0f}% of device "
               "memory (flag no-fit); other counts (--from, --to), another runtime or a GPU with more memory may "
               "fit\n",
               100 * opt.space.max_mem_frac);
  } else {
    if (first_exposed)
      fmt::print("communication stops hiding behind compute at {} GPUs ({:.1f}% of the step exposed > {:.0f}%)\n",
                 first_exposed->gpus, 100 * first_exposed->exposed_fraction, 100 * opt.exposed_threshold);
    else
      fmt::print("communication stays hidden behind compute (exposed <= {:.0f}% of the step) {}\n",
                 100 * opt.exposed_threshold, counts);
    if (first_low)
      fmt::print("goodput falls below {:.0f}% at {} GPUs ({:.1f}%: an interruption every {:.1f} h)\n",
                 100 * opt.goodput_threshold, first_low->gpus, 100 * first_low->goodput.goodput,
                 first_low->goodput.mtbf_s / 3600);
    else
      fmt::print("goodput stays at or above {:.0f}% {}\n", 100 * opt.goodput_threshold, counts);
  }
}

// The flags and columns the table uses, said once under it.
void print_scale_legend() {
  fmt::print("flags: mb1 = the global batch leaves one sequence per data-parallel rank (a GPU on pure FSDP); ga:a->b = grad accumulation changes;\n"
             "       batch>target, batch<target = no layout meets the global batch within its tolerance here (one\n"
             "       sequence per rank is more, or whole sequences per rank step over it): the plan nearest it is used;\n"
             "       batch-wall:tp2 = pure FSDP cannot meet the global batch here (no whole number of sequences per GPU\n"
             "       comes within its tolerance): the mesh named keeps it; mesh:tp2 = a mesh chosen for speed or memory;\n"
             "       goodput<T = goodput under failures below --goodput-threshold\n"
             "goodput = useful / wall time with failures, checkpoint saves and restarts; tok/s+f = tok/s/GPU x "
             "goodput; ckpt = recommended checkpoint.interval in steps; days+f = days with failures\n"
             "eff = tok/s/GPU here / tok/s/GPU at the smallest count that fits; above 100% when more GPUs shard the "
             "state thinner and the freed memory buys a faster configuration (less recomputation, a larger "
             "micro-batch)\n");
}

void run_scale(ScaleFlags& f, bool to_given) {
  SpaceFlags sf;
  HardwareSpec hw;
  const planner::ScaleOptions opt = scale_options(f, to_given, &sf, &hw);
  if (!f.deadline.empty()) return run_budget(f, opt);
  const auto pts = planner::scale(opt, hw, progress_bar("scale"));
  if (!f.csv.empty()) write_file_atomic(f.csv, csv_text(pts));
  const int seq = opt.space.seq_len > 0 ? opt.space.seq_len : opt.space.model.max_seq_len;
  // As search: no GPU count with a configuration that fits ends in exit 3.
  const bool any_feasible = std::any_of(pts.begin(), pts.end(), [](const planner::ScalePoint& p) { return p.feasible; });
  if (f.json) {
    print_scale_json(opt, hw, seq, pts);
    if (!any_feasible) throw ExitCode{kExitNoFit};
    return;
  }
  print_scale_table(opt, hw, sf, seq, pts);
  fmt::print("\n");
  print_scale_summary(opt, pts);
  print_scale_legend();
  if (!f.csv.empty()) fmt::print("csv: {}\n", f.csv);
  if (!any_feasible) throw ExitCode{kExitNoFit};
}

}  // namespace

void register_scale(CLI::App& app) {
  auto f = std::make_shared<ScaleFlags>();
  auto* cmd = app.add_subcommand(
      "scale", "Best configuration, goodput and time-to-train at each GPU count; with --deadline, the cheapest "
               "GPU type x count x configuration that trains --tokens in time");
  add_space_flags(cmd, f->space, false, "4Mi");
  add_reliability_flags(cmd, f->reliability);
  cmd->add_option("--from", f->from, "smallest GPU count")->capture_default_str();
  auto* to = cmd->add_option("--to", f->to, "largest GPU count (default 1024; 16384 with --deadline)");
  cmd->add_option("--counts", f->counts, "explicit GPU counts instead of --from/--to (comma separated)")
      ->delimiter(',');
  cmd->add_option("--tokens", f->tokens, "training budget in tokens, e.g. 2T or 500B")->capture_default_str();
  auto* deadline = cmd->add_option(
      "--deadline", f->deadline, "train --tokens within this wall-clock time, e.g. 30d or 12h: the budget question");
  cmd->add_option("--gpu-types", f->gpu_types,
                  "with --deadline: hardware presets to compare, e.g. H100-80GB-SXM,H200-141GB-SXM,B200,MI300X "
                  "(default: --hardware)")
      ->delimiter(',')
      ->needs(deadline);
  // --price without --deadline is refused in the callback, saying what cost needs.
  cmd->add_option("--price", f->prices,
                  "with --deadline: price per GPU-hour by type, e.g. H100-80GB-SXM=2.5,B200=5 (one for every type, "
                  "or a bare number with a single GPU type; none: plans are ranked by GPU-hours)")
      ->delimiter(',');
  cmd->add_option("--top", f->top, "with --deadline: plans listed (0 = all that meet it)")
      ->capture_default_str()
      ->needs(deadline);
  cmd->add_option("--goodput-threshold", f->goodput_threshold,
                  "flag counts whose goodput falls below this (0.9: Llama 3 405B kept > 90% on 16,384 GPUs)")
      ->capture_default_str();
  // Ranges of the numeric flags: planner/cli/validators.cpp (one range per flag name).
  cmd->add_option("--csv", f->csv, "also write the table as CSV to FILE");
  cmd->add_flag("--json", f->json, "print the table as JSON");
  cmd->callback([f, to] { run_scale(*f, to->count() > 0); });
}

}  // namespace shardcast::cli
