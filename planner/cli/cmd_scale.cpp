// `shardcast scale`: capacity planning — the best configuration at each GPU count, with
// total tokens/s, days and GPU-hours for a token budget, scaling efficiency and where
// communication stops hiding behind compute. `--csv FILE` writes the table, `--json` prints it.
#include <algorithm>
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "planner/cli/commands.h"
#include "planner/cli/format.h"
#include "planner/cli/search_flags.h"
#include "planner/plan.h"
#include "planner/scale.h"

namespace shardcast::cli {

namespace {

struct ScaleFlags {
  SpaceFlags space;
  int from = 8, to = 1024;
  std::vector<int> counts;
  std::string tokens = "2T";
  std::string csv;
  bool json = false;
};

std::string csv_text(const std::vector<planner::ScalePoint>& pts) {
  std::string o =
      "gpus,nodes,feasible,config,sharding_strategy,hsdp_shard_size,micro_batch,grad_accum,ac_mode,ac_ratio,"
      "reduce_dtype,compile,fp8,global_batch_tokens,tokens_per_s_per_gpu,total_tokens_per_s,mfu,step_time_s,"
      "exposed_fraction,mem_needed_bytes,days,gpu_hours,scaling_efficiency,flags\n";
  for (const auto& p : pts) {
    const TrainConfig& c = p.best.config;
    const Prediction& q = p.best.prediction;
    if (!p.feasible) {
      o += fmt::format("{},{},false,,,,,,,,,,,,,,,,,,,,,{}\n", p.gpus, p.nodes, p.flags);
      continue;
    }
    o += fmt::format("{},{},true,\"{}\",{},{},{},{},{},{:g},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{}\n",
                     p.gpus, p.nodes, planner::describe_config(c), to_string(c.parallelism.sharding_strategy),
                     c.parallelism.hsdp_shard_size, c.training.micro_batch, c.training.grad_accum,
                     to_string(c.activation_checkpointing.mode), c.activation_checkpointing.ratio,
                     c.precision.reduce_dtype, c.precision.compile, c.precision.fp8, p.global_batch_tokens,
                     q.tokens_per_s_per_gpu, p.total_tokens_per_s, q.mfu, q.step_time_s, p.exposed_fraction,
                     planner::memory_needed_bytes(q), p.days, p.gpu_hours, p.scaling_efficiency, p.flags);
  }
  return o;
}

}  // namespace

void register_scale(CLI::App& app) {
  auto f = std::make_shared<ScaleFlags>();
  auto* cmd = app.add_subcommand("scale", "Best configuration, throughput and time-to-train at each GPU count");
  add_space_flags(cmd, f->space, false, "4Mi");
  cmd->add_option("--from", f->from, "smallest GPU count")->capture_default_str();
  cmd->add_option("--to", f->to, "largest GPU count")->capture_default_str();
  cmd->add_option("--counts", f->counts, "explicit GPU counts instead of --from/--to (comma separated)")
      ->delimiter(',');
  cmd->add_option("--tokens", f->tokens, "training budget in tokens, e.g. 2T")->capture_default_str();
  cmd->add_option("--csv", f->csv, "also write the table as CSV to FILE");
  cmd->add_flag("--json", f->json, "print the table as JSON");
  cmd->callback([f] {
    HardwareSpec hw;
    planner::ScaleOptions opt;
    opt.space = to_space(f->space, "scale", hw, "4Mi");
    opt.global_batch_tokens = opt.space.global_batch_tokens;
    opt.from = f->from;
    opt.to = f->to;
    opt.counts = f->counts;
    opt.tokens = parse_count(f->tokens, "--tokens");
    const auto pts = planner::scale(opt, hw, progress_bar("scale"));
    if (!f->csv.empty()) write_file_atomic(f->csv, csv_text(pts));
    const int seq = opt.space.seq_len > 0 ? opt.space.seq_len : opt.space.model.max_seq_len;
    if (f->json) {
      nlohmann::json j = {{"schema", 1},
                          {"model", opt.space.model_preset},
                          {"hardware", hw.name},
                          {"seq_len", seq},
                          {"tokens", opt.tokens},
                          {"global_batch_tokens", opt.global_batch_tokens},
                          {"exposed_threshold", opt.exposed_threshold}};
      j["points"] = nlohmann::json::array();
      for (const auto& p : pts) {
        nlohmann::json q = {{"gpus", p.gpus},
                            {"nodes", p.nodes},
                            {"feasible", p.feasible},
                            {"total_tokens_per_s", p.total_tokens_per_s},
                            {"days", p.days},
                            {"gpu_hours", p.gpu_hours},
                            {"scaling_efficiency", p.scaling_efficiency},
                            {"exposed_fraction", p.exposed_fraction},
                            {"comm_exposed", p.comm_exposed},
                            {"batch_met", p.batch_met},
                            {"global_batch_tokens", p.global_batch_tokens},
                            {"flags", p.flags},
                            {"n_candidates", p.n_candidates}};
        if (p.feasible) q["best"] = candidate_json(p.best);
        j["points"].push_back(q);
      }
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("scale: {} ({} parameters) on {}, seq_len {}, global batch {} tokens, budget {} tokens\n",
               opt.space.model_preset, human_count(double(opt.space.model.total_params())), hw.name, seq,
               opt.global_batch_tokens > 0 ? short_count(double(opt.global_batch_tokens)) : "any",
               short_count(opt.tokens));
    size_t w = 12;  // width of the config column
    for (const auto& p : pts)
      if (p.feasible) w = std::max(w, planner::describe_config(p.best.config).size());
    fmt::print("\n{:>6} {:>5}  {:<{}} {:>9} {:>9} {:>6} {:>8} {:>8} {:>9} {:>5} {:>8}  {}\n", "GPUs", "nodes",
               "best config", w, "tok/s/GPU", "total", "MFU", "exposed", "days", "GPU-h", "eff", "batch", "flags");
    const planner::ScalePoint* first_exposed = nullptr;
    for (const auto& p : pts) {
      if (!p.feasible) {
        fmt::print("{:>6} {:>5}  {:<{}} {}\n", p.gpus, p.nodes, "nothing fits", w, p.flags);
        continue;
      }
      const Prediction& q = p.best.prediction;
      fmt::print("{:>6} {:>5}  {:<{}} {:>9.0f} {:>9} {:>5.1f}% {:>7.1f}% {:>8.1f} {:>9} {:>4.0f}% {:>8}  {}\n", p.gpus,
                 p.nodes, planner::describe_config(p.best.config), w, q.tokens_per_s_per_gpu,
                 short_count(p.total_tokens_per_s), 100 * q.mfu, 100 * p.exposed_fraction, p.days,
                 short_count(p.gpu_hours), 100 * p.scaling_efficiency, short_count(double(p.global_batch_tokens)),
                 p.flags);
      if (p.comm_exposed && !first_exposed) first_exposed = &p;
    }
    fmt::print("\n");
    if (first_exposed)
      fmt::print("communication stops hiding behind compute at {} GPUs ({:.1f}% of the step exposed > {:.0f}%)\n",
                 first_exposed->gpus, 100 * first_exposed->exposed_fraction, 100 * opt.exposed_threshold);
    else
      fmt::print("communication stays hidden behind compute (exposed <= {:.0f}% of the step) at every count\n",
                 100 * opt.exposed_threshold);
    fmt::print("flags: mb1 = the global batch leaves one sequence per GPU; ga:a->b = grad accumulation changes;\n"
               "       batch>target = even micro-batch 1 without accumulation exceeds the global batch (smallest used)\n");
    if (!f->csv.empty()) fmt::print("csv: {}\n", f->csv);
  });
}

}  // namespace shardcast::cli
