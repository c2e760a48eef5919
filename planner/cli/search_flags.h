// Flags shared by `shardcast search`, `scale` and `emit --from-search`, and their helpers.
//
// What it is: the flags that describe a search space (the same names as `shardcast plan` and
// the TOML keys: --model, --hardware, --gpus, --gpus-per-node, --inter-node-gbps, --seq-len, plus
// --global-batch-tokens, --max-mem-frac, --allow-fp8, --allow-compile, --threads), the parser
// of token counts with suffixes ("4M", "2T", "4Mi"), and a progress bar drawn on stderr only
// when stderr is a terminal. What it is not: the search (planner/decide/search.h).
// Header-only; CLI setup is single-threaded, the progress bar is called from one thread.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "planner/cli/config_flags.h"
#include "planner/evidence/error_band.h"
#include "planner/evidence/reference_run.h"
#include "planner/model/runtime.h"
#include "planner/decide/search.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/decimal_text.h"

namespace shardcast::cli {

// "4M" -> 4e6, "2T" -> 2e12, "4Mi" -> 4·2^20, "4194304" -> 4194304. K, M, G (or B), T are
// powers of 1000; Ki, Mi, Gi, Ti powers of 1024. Throws UsageError naming `flag`.
inline double parse_count(const std::string& text, const std::string& flag) {
  std::string s = text;
  double mult = 1;
  auto ends = [&](const std::string& suf) {
    return s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
  };
  const std::pair<const char*, double> suffixes[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"K", 1e3},     {"k", 1e3},        {"M", 1e6},          {"G", 1e9},
      {"B", 1e9},     {"T", 1e12}};
  for (const auto& [suf, m] : suffixes)
    if (ends(suf)) {
      s.resize(s.size() - std::string(suf).size());
      mult = m;
      break;
    }
  const double v = parse_decimal(s).value_or(-1);  // -1: not a decimal number
  if (!(v >= 0))
    throw UsageError(fmt::format("{} '{}' is not a count (e.g. 4194304, 4M, 4Mi, 2T)", flag, text));
  return v * mult;
}

// 4194304 -> "4.19M", 2e12 -> "2.00T".
inline std::string short_count(double n) {
  if (n >= 1e12) return fmt::format("{:.2f}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f}G", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f}K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

struct SpaceFlags {
  std::string model, gpu, runtime;
  // Absent = not given: the preset's or the model's value (ranges: planner/cli/validators.cpp).
  std::optional<int> gpus, gpus_per_node, seq_len, threads;
  std::optional<double> inter_node_gbps, power_limit_w;
  std::optional<double> mean_doc_len;  // data.mean_doc_len (tokens); absent = 0, dense causal
  std::string state_dtype;             // optimizer.state_dtype; "" = not given: "master"
  std::string global_batch_tokens;  // "" = the command's default
  double max_mem_frac = 0.9;
  bool allow_fp8 = false, allow_compile = false, allow_selective_op = false;
  std::string reference_run;  // --reference-run DIR: "" = none
};

// Adds the space flags to `cmd`. with_gpus=false for `scale` (it has --from/--to instead);
// with_plan_keys=false for `emit`, whose plan flags already hold --mean-doc-len and --state-dtype
// (one flag, one key).
inline void add_space_flags(CLI::App* cmd, SpaceFlags& f, bool with_gpus, const std::string& batch_default,
                            bool with_plan_keys = true) {
  cmd->add_option("--model", f.model, "model preset name or .toml");
  add_hardware_flag(cmd, f.gpu, "hardware preset (e.g. H100-80GB-SXM)");
  if (with_gpus) cmd->add_option("--gpus", f.gpus, "total GPUs (ranks)");
  cmd->add_option("--gpus-per-node", f.gpus_per_node, "GPUs per node (default: the preset's)");
  cmd->add_option("--inter-node-gbps", f.inter_node_gbps, "NIC bandwidth per node in Gb/s (default: the preset's)");
  add_power_limit_flag(cmd, f.power_limit_w);
  cmd->add_option("--seq-len", f.seq_len, "tokens per sequence (default: the model's max_seq_len)");
  if (with_plan_keys) {
    cmd->add_option("--mean-doc-len", f.mean_doc_len,
                    "data.mean_doc_len: mean tokens per document packed into a sequence, for a runtime whose "
                    "attention masks at document boundaries (runtime term attention = flex_document); 0 = dense "
                    "causal (default)");
    add_state_dtype_flag(cmd, f.state_dtype);
  }
  cmd->add_option("--global-batch-tokens", f.global_batch_tokens,
                  "tokens per optimizer step, e.g. 4M (decimal) or 4Mi; 0 = any (default: " + batch_default + ")");
  cmd->add_option("--max-mem-frac", f.max_mem_frac,
                  "memory budget as a fraction of device memory (margin against allocator retries)")
      ->capture_default_str();
  cmd->add_flag("--allow-fp8", f.allow_fp8, "also try each precision.fp8 recipe the runtime runs (GPUs with fp8 only)");
  cmd->add_flag("--allow-compile", f.allow_compile, "also try torch.compile");
  cmd->add_flag("--allow-selective-op", f.allow_selective_op,
                "also try op-level selective checkpointing (torchtitan's \"op\"; not run by shardcast-train)");
  cmd->add_option("--threads", f.threads, "worker threads (default: all cores)");
  add_runtime_flag(cmd, f.runtime);
  add_reference_run_flag(cmd, f.reference_run);
}

// The SearchSpace the flags describe; loads the hardware preset into `hw`.
inline planner::SearchSpace to_space(const SpaceFlags& f, const std::string& cmd, HardwareSpec& hw,
                                     const std::string& batch_default) {
  if (f.model.empty()) throw UsageError(cmd + ": --model is required");
  if (f.gpu.empty()) throw UsageError(cmd + ": --hardware is required");
  planner::SearchSpace s;
  s.model = load_model(f.model);
  s.model_preset = f.model;
  hw = load_hardware(f.gpu);
  s.hardware = f.gpu;
  // SearchSpace's 0 = "the preset's / the model's value"; a given 0 never reaches here (ranges).
  s.gpus = f.gpus.value_or(0);
  s.gpus_per_node = f.gpus_per_node.value_or(0);
  // A given --gpus-per-node above --gpus is not lowered to it (search caps only the preset's).
  if (f.gpus && f.gpus_per_node && *f.gpus < *f.gpus_per_node)
    throw UsageError(fmt::format("{}: --gpus {} is fewer than --gpus-per-node {} (one node of {} GPUs is "
                                 "--gpus-per-node {})",
                                 cmd, *f.gpus, *f.gpus_per_node, *f.gpus, *f.gpus));
  s.inter_node_gbps = f.inter_node_gbps.value_or(0);
  s.power_limit_w = f.power_limit_w.value_or(0);
  s.seq_len = f.seq_len.value_or(0);
  if (f.mean_doc_len) s.base.data.mean_doc_len = *f.mean_doc_len;
  if (!f.state_dtype.empty()) s.base.optimizer.state_dtype = f.state_dtype;
  const std::string batch = f.global_batch_tokens.empty() ? batch_default : f.global_batch_tokens;
  const double tokens = parse_count(batch, "--global-batch-tokens");
  // A batch is whole tokens: a fraction would round, 0.4 to 0 = "any batch", never what was asked.
  // "4.1M" is 4.1 x 1e6 in binary floating point (4099999.9999999995): whole within 1e-9.
  const double whole = std::round(tokens);
  if (std::abs(tokens - whole) > 1e-9 * std::max(1.0, tokens) || tokens > 9.2e18)
    throw UsageError(fmt::format("--global-batch-tokens '{}' is not a whole number of tokens (0 = any global batch)",
                                 batch));
  s.global_batch_tokens = int64_t(whole);
  s.max_mem_frac = f.max_mem_frac;
  s.allow_fp8 = f.allow_fp8;
  s.allow_compile = f.allow_compile;
  s.allow_selective_op = f.allow_selective_op;
  s.threads = f.threads.value_or(0);
  s.base.runtime = f.runtime.empty() ? default_runtime() : f.runtime;  // SHARDCAST_RUNTIME (config_flags.h)
  // No precision flag here: the master dtype is the runtime's own (reduce dtypes are searched).
  planner::take_runtime_precision(s.base, planner::runtime_preset(s.base.runtime), hw, {});
  if (!f.reference_run.empty()) {
    const planner::ReferenceRun ref = planner::read_reference_run(f.reference_run, hw, s.base.runtime);
    s.reference_level = ref.level();
    s.reference_run = ref.dir;
  }
  return s;
}

// "seq_len 8192", and the packed documents' mean length where the space gives one: used by a
// runtime whose attention masks at document boundaries, said to be unused by any other.
// on_gpu: the runtime's GPU terms (planner::is_gpu), else its CPU ones.
inline std::string seq_len_text(int seq_len, const planner::SearchSpace& s, bool on_gpu) {
  const double doc = s.base.data.mean_doc_len;
  if (!(doc > 0)) return fmt::format("seq_len {}", seq_len);
  if (planner::runtime_preset(s.base.runtime).terms_for(on_gpu).attention == "flex_document")
    return fmt::format("seq_len {} (documents of {:g} tokens: data.mean_doc_len)", seq_len, doc);
  return fmt::format("seq_len {} ({})", seq_len, mean_doc_len_unused(doc, s.base.runtime));
}

// A global batch no micro-batch and grad-accum reach is the flag's fault, not memory's: exit 2
// naming it (search would otherwise say "nothing fits").
inline void require_reachable_batch(const planner::SearchSpace& space, const HardwareSpec& hw,
                                    const planner::SearchResult& r, const std::string& cmd) {
  if (space.global_batch_tokens <= 0 || r.n_candidates > 0 || r.n_batch_mismatch == 0) return;
  const TrainConfig base = planner::search_base_config(space, hw);
  const int64_t step = int64_t(base.training.seq_len) * base.world_size();
  throw UsageError(fmt::format("{}: --global-batch-tokens {}: no micro-batch x grad-accum reaches it within ±{:.0f}% "
                               "on {} GPUs at seq_len {} (one micro-step of micro-batch 1 is {} tokens)",
                               cmd, space.global_batch_tokens, 100 * space.batch_tolerance, base.world_size(),
                               base.training.seq_len, step));
}

// "runtime X (where it came from)" for the headline of search and scale.
// "runtime torchtitan (--runtime)", and the moments' dtype where it is not the master dtype's.
inline std::string runtime_headline(const SpaceFlags& f, const planner::SearchSpace& s) {
  const std::string& states = s.base.optimizer.state_dtype;
  return fmt::format("runtime {} ({}){}", s.base.runtime, runtime_origin(!f.runtime.empty(), false),
                     states == "master" ? std::string() : ", AdamW moments " + states + " (optimizer.state_dtype)");
}

// The header line of a search or scale with --reference-run: what every prediction carries.
inline void print_reference_run(const planner::SearchSpace& s) {
  if (s.reference_level > 0)
    fmt::print("reference run {}: every tokens/s x{:.3f} (its measured / predicted), band ±{:.0f}% (1σ, "
               "configs/bands.toml [reference_run])\n",
               s.reference_run, s.reference_level, 100 * planner::shipped_bands().reference.rel_1sigma);
}

// A progress callback that draws "label [#####     ] 42%" on stderr, only when stderr is a
// terminal and only once the work has run for 0.3 s (short searches print nothing).
inline std::function<void(double)> progress_bar(const std::string& label) {
  if (!::isatty(STDERR_FILENO)) return {};
  struct State {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    int last = -1;
    bool drawn = false;
  };
  auto st = std::make_shared<State>();
  return [st, label](double f) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - st->start).count();
    if (f >= 1.0) {
      if (st->drawn) fmt::print(stderr, "\r\033[K");
      st->drawn = false;
      return;
    }
    const int pct = int(f * 100);
    if (secs < 0.3 || pct == st->last) return;
    st->last = pct;
    st->drawn = true;
    const int width = 30, filled = int(f * width);
    fmt::print(stderr, "\r{} [{}{}] {:3d}%", label, std::string(filled, '#'), std::string(width - filled, ' '), pct);
    std::fflush(stderr);
  };
}

// The searched keys of a candidate (TOML names) and its Prediction (without the timeline).
inline nlohmann::json candidate_json(const planner::Candidate& c) {
  const TrainConfig& t = c.config;
  const Mesh mesh = resolve_mesh(t.parallelism, t.world_size(), t.cluster.gpus_per_node);
  nlohmann::json cfg = {
      {"gpus", t.world_size()},
      {"nodes", t.cluster.nodes},
      {"gpus_per_node", t.cluster.gpus_per_node},
      {"sharding_strategy", to_string(t.parallelism.sharding_strategy)},
      {"hsdp_shard_size", t.parallelism.hsdp_shard_size},
      {"dp_replicate", mesh.dp_replicate},
      {"dp_shard", mesh.dp_shard},
      {"tp", mesh.tp},
      {"cp", mesh.cp},
      {"pp", mesh.pp},
      {"pp_schedule", to_string(t.parallelism.pp_schedule)},
      {"micro_batch", t.training.micro_batch},
      {"seq_len", t.training.seq_len},
      {"grad_accum", t.training.grad_accum},
      {"global_batch_tokens", t.tokens_per_step()},
      {"activation_checkpointing", {{"mode", to_string(t.activation_checkpointing.mode)},
                                    {"ratio", t.activation_checkpointing.ratio}}},
      {"reduce_dtype", t.precision.reduce_dtype},
      {"param_dtype", t.precision.param_dtype},
      {"master_dtype", t.precision.master_dtype},
      {"state_dtype", t.optimizer.state_dtype},
      {"compile", t.precision.compile},
      {"fp8", to_string(t.precision.fp8)},
      {"label", planner::describe_config(t)}};
  nlohmann::json pred = c.prediction;
  pred.erase("timeline");
  return {{"config", cfg}, {"prediction", pred}, {"memory_needed_bytes", planner::memory_needed_bytes(c.prediction)}};
}

}  // namespace shardcast::cli
