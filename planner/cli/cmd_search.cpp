// `shardcast search`: every configuration of a model on N GPUs, ranked by tokens/s/GPU.
// Prints the top configs, the Pareto front of memory against throughput and one line on why
// the winner wins; `--json` prints the same as JSON. Exit code 3 when nothing fits.
#include <algorithm>
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "planner/cli/commands.h"
#include "planner/cli/format.h"
#include "planner/cli/search_flags.h"
#include "planner/model/plan.h"
#include "planner/model/power_limit.h"
#include "planner/decide/search.h"

namespace shardcast::cli {

namespace {

constexpr double kGiB = double(1ull << 30);

std::string ac_cell(const ActivationCheckpointingConfig& ac) {
  if (ac.mode == AcMode::selective) return fmt::format("selective {:g}", ac.ratio);
  return to_string(ac.mode);
}

// The widest: "compile+fp8 rowwise_with_gw_hp" (30 characters, the column's width); a mesh's
// degrees come first ("tp 8 pp 4 Interleaved1F1B+compile", HSDP's "dp_replicate 32 tp 2").
std::string extra_cell(const TrainConfig& c) {
  const PrecisionConfig& p = c.precision;
  std::string s = planner::mesh_words(c);
  if (p.compile) s += s.empty() ? "compile" : "+compile";
  if (p.fp8_on()) s += (s.empty() ? "fp8 " : "+fp8 ") + std::string(to_string(p.fp8));
  return s.empty() ? "-" : s;
}

void print_header() {
  fmt::print("  {:>3}  {:<17} {:>3} {:>4}  {:<14} {:<6} {:<30} {:>9} {:>6} {:>8} {:>8} {:>8}\n", "#", "strategy", "mb",
             "ga", "ac", "reduce", "extra", "tok/s/GPU", "MFU", "exposed", "mem GiB", "batch");
}

void print_row(int rank, const planner::Candidate& c) {
  const TrainConfig& t = c.config;
  const Prediction& p = c.prediction;
  const std::string r = rank > 0 ? std::to_string(rank) : "";
  fmt::print("  {:>3}  {:<17} {:>3} {:>4}  {:<14} {:<6} {:<30} {:>9.0f} {:>5.1f}% {:>7.1f}% {:>8.1f} {:>8}\n", r,
             planner::strategy_label(t), t.training.micro_batch, t.training.grad_accum, ac_cell(t.activation_checkpointing),
             t.precision.reduce_dtype, extra_cell(t), p.tokens_per_s_per_gpu, 100 * p.mfu,
             100 * exposed_communication_s(p) / p.step_time_s, planner::memory_needed_bytes(p) / kGiB,
             short_count(double(t.tokens_per_step())));
}

// `search --json`: the space, its counts, the ranked configs (the top n) and the Pareto front.
void print_search_json(const planner::SearchSpace& space, const HardwareSpec& hw, const TrainConfig& base,
                       const planner::SearchResult& r, int n) {
  nlohmann::json j = {{"schema", 1},
                      {"model", space.model_preset},
                      {"hardware", hw.name},
                      {"gpus", base.world_size()},
                      {"gpus_per_node", base.cluster.gpus_per_node},
                      {"seq_len", base.training.seq_len},
                      {"mean_doc_len", space.base.data.mean_doc_len},
                      {"global_batch_tokens", space.global_batch_tokens},
                      {"max_mem_frac", space.max_mem_frac},
                      {"memory_budget_bytes", planner::memory_budget_bytes(space, hw)},
                      {"n_candidates", r.n_candidates},
                      {"n_evaluated", r.n_evaluated},
                      {"n_pruned", r.n_pruned},
                      {"n_feasible", r.n_feasible},
                      {"n_over_memory", r.n_over_memory},
                      {"n_batch_mismatch", r.n_batch_mismatch},
                      {"seconds", r.seconds},
                      {"why_winner", r.why_winner}};
  j["ranked"] = nlohmann::json::array();
  for (int i = 0; i < n; ++i) j["ranked"].push_back(candidate_json(r.ranked[i]));
  j["pareto"] = nlohmann::json::array();
  for (const auto& c : r.pareto) j["pareto"].push_back(candidate_json(c));
  fmt::print("{}\n", j.dump(2));
}

// The search's table: its headline, its counts, the top n, the Pareto front and why the winner
// wins; exit 3 (kExitNoFit) when nothing fits.
void print_search_table(const SpaceFlags& f, const planner::SearchSpace& space, const HardwareSpec& hw,
                        const TrainConfig& base, const planner::SearchResult& r, int n) {
  const double nic = planner::effective_inter_node_bandwidth(base, hw) * 8 / 1e9;
  fmt::print("search: {} ({} parameters) on {} x {} ({} node{} x {}, {:.0f} Gb/s per node{}) for {}, {}, "
             "{}\n",
             space.model_preset, human_count(double(space.model.total_params())), base.world_size(), hw.name,
             base.cluster.nodes, base.cluster.nodes == 1 ? "" : "s", base.cluster.gpus_per_node, nic,
             planner::power_limit_note(planner::resolve_power_limit(base, hw)), runtime_headline(f, space),
             seq_len_text(base.training.seq_len, space, planner::is_gpu(hw)),
             space.global_batch_tokens > 0
                 ? fmt::format("global batch {} tokens (±{:.0f}%)", short_count(double(space.global_batch_tokens)),
                               100 * space.batch_tolerance)
                 : std::string("any global batch"));
  print_reference_run(space);
  fmt::print("        {} configs: {} predicted, {} pruned by memory monotonicity; {} fit in {:.0f}% of {:.0f} GiB; "
             "{:.2f} s\n",
             r.n_candidates, r.n_evaluated, r.n_pruned, r.n_feasible, 100 * space.max_mem_frac,
             hw.gpu.hbm_bytes / kGiB, r.seconds);
  if (r.n_batch_mismatch > 0)
    fmt::print("        {} more combinations miss the global batch\n", r.n_batch_mismatch);
  if (r.ranked.empty()) {
    fmt::print("\nnothing fits: no configuration stays within {:.0f}% of device memory{}\n",
               100 * space.max_mem_frac,
               space.global_batch_tokens > 0 ? " at this global batch" : "");
    throw ExitCode{kExitNoFit};
  }
  fmt::print("\ntop {} by tokens/s/GPU (mem = reserved + runtime per GPU; exposed = share of the step)\n", n);
  print_header();
  for (int i = 0; i < n; ++i) print_row(i + 1, r.ranked[i]);
  // The front, at most kFrontRows rows spread evenly from least memory to fastest.
  const size_t kFrontRows = 10, nf = r.pareto.size();
  fmt::print("\nPareto front, memory against tokens/s/GPU ({} configs{})\n", nf,
             nf > kFrontRows ? fmt::format(", {} shown", kFrontRows) : "");
  print_header();
  for (size_t k = 0; k < std::min(nf, kFrontRows); ++k) {
    const size_t i = nf <= kFrontRows ? k : (k * (nf - 1)) / (kFrontRows - 1);
    print_row(0, r.pareto[i]);
  }
  fmt::print("\nwhy: {}\n", r.why_winner);
}

}  // namespace

void register_search(CLI::App& app) {
  auto f = std::make_shared<SpaceFlags>();
  auto top = std::make_shared<int>(10);
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("search", "Rank every configuration of a model on N GPUs by tokens/s/GPU");
  add_space_flags(cmd, *f, true, "0");
  cmd->add_option("--top", *top, "configs to print")->capture_default_str();
  cmd->add_flag("--json", *json, "print the result as JSON");
  cmd->callback([f, top, json] {
    HardwareSpec hw;
    planner::SearchSpace space = to_space(*f, "search", hw, "0");
    if (space.gpus <= 0) throw UsageError("search: --gpus is required");
    if (*top < 0) throw UsageError("search: --top must be >= 0");
    const planner::SearchResult r = planner::search(space, hw, progress_bar("search"));
    require_reachable_batch(space, hw, r, "search");
    const TrainConfig base = planner::search_base_config(space, hw);
    const int n = std::min<int>(*top, int(r.ranked.size()));
    if (*json) print_search_json(space, hw, base, r, n);
    else print_search_table(*f, space, hw, base, r, n);
    if (r.ranked.empty()) throw ExitCode{kExitNoFit};
  });
}

}  // namespace shardcast::cli
