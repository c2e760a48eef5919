// `shardcast plan`: predict one configuration (memory per GPU by component, step time,
// tokens/s/GPU, MFU, HFU, exposed communication, error band), from flags or a run.toml.
// `--json` prints the Prediction; `--timeline FILE.json` writes the simulated step in Chrome
// trace format. A config that does not fit prints the table, names the overflowing component
// and ends with exit code 3 (throws ExitCode{kExitNoFit}; main returns it).
#include <fstream>
#include <memory>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "planner/evidence/predict.h"
#include "planner/cli/commands.h"
#include "planner/cli/config_flags.h"
#include "planner/cli/format.h"
#include "planner/cli/reliability_flags.h"
#include "planner/decide/goodput.h"
#include "planner/model/kernel_table.h"
#include "planner/model/plan.h"
#include "planner/evidence/reference_run.h"
#include "planner/model/power_limit.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::cli {

namespace {

struct PlanArgs : ConfigFlags {
  std::string timeline;
  bool json = false;
  ReliabilityFlags reliability;
};


// The plan's head: what is planned, on what, for which runtime, and how the runtime runs it.
// o: the options the prediction was made with (resolved once, by the caller).
void print_plan_head(const TrainConfig& c, const HardwareSpec& hw, const planner::PlanOptions& o, const Prediction& p,
                     const std::vector<std::string>& from_runtime, const std::string& runtime_from) {
  const int world = c.world_size();
  const double nic = planner::effective_inter_node_bandwidth(c, hw) * 8 / 1e9;
  const std::string& model = c.model_label();
  fmt::print("plan: {} ({} parameters) on {} x {} ({} node{} x {}, {:.0f} Gb/s per node) for runtime {} ({})\n",
             model, human_count(double(c.model.total_params())), world, hw.name, c.cluster.nodes,
             c.cluster.nodes == 1 ? "" : "s", c.cluster.gpus_per_node, nic, c.runtime, runtime_from);
  const std::string strategy = to_string(c.parallelism.sharding_strategy) + hsdp_groups(c);
  std::string ac = to_string(c.activation_checkpointing.mode);
  if (c.activation_checkpointing.mode == AcMode::selective)
    ac += fmt::format(" (ratio {})", c.activation_checkpointing.ratio);
  fmt::print("      {}; micro_batch {} x seq_len {} x grad_accum {}; ac {}; {}/{}{}{}{}{}\n", strategy,
             c.training.micro_batch, c.training.seq_len, c.training.grad_accum, ac,
             c.precision.param_dtype, c.precision.reduce_dtype,
             c.precision.master_dtype == "fp32" ? "" : ", master " + c.precision.master_dtype,
             c.optimizer.state_dtype == "master" ? "" : ", moments " + c.optimizer.state_dtype,
             c.precision.compile ? ", compile" : "",
             c.precision.fp8_on() ? std::string(", fp8 ") + to_string(c.precision.fp8) : std::string());
  if (!p.mesh.empty()) {  // a device mesh (planner/model/mesh_stage.cpp): its degrees and what the planner says of it
    fmt::print("      mesh {}\n", p.mesh);
    for (const auto& n : p.mesh_notes) fmt::print("      {}\n", n);
  }
  if (!from_runtime.empty())
    fmt::print("      {}: runtime {}'s own (not given)\n", fmt::join(from_runtime, ", "), c.runtime);
  // A document length given for a runtime that attends across documents changes nothing: said.
  if (c.data.mean_doc_len > 0 && p.attention != "flex_document")
    fmt::print("      {} (no document mask)\n", mean_doc_len_unused(c.data.mean_doc_len, c.runtime));
  fmt::print("      runtime {}, attention {}{}\n", c.runtime, p.attention,
             p.attention == "cudnn" ? fmt::format(" (its SDPA runs cuDNN attention on compute capability {}{})",
                                                  hw.gpu.compute_capability,
                                                  p.kernel_table.empty() ? ": efficiency.cudnn_attention_ceiling" : "")
                                    : std::string());
  {
    // The optimizer step as the runtime runs it (runtime terms adamw_update, grad_clip).
    const char* clip = o.grad_clip == planner::GradClip::none             ? "no clipping"
                       : o.grad_clip == planner::GradClip::norm_and_scale ? "clipping (norm, then scale)"
                                                                          : "clipping (norm; scale in the update)";
    fmt::print("      optimizer {} AdamW, {}: {} accesses an element of the shard\n",
               planner::to_string(o.adamw_update), clip, planner::optimizer_accesses(o.adamw_update, o.grad_clip));
  }
  if (!p.kernel_table.empty())
    fmt::print("      kernels timed by {} (measured with torch {}, the runtime's torch release)\n", p.kernel_table,
               planner::kernel_table_for(p.kernel_table).header.torch);
  // A board power limit below the rated power (planner/model/power_limit.h, docs/cost-model.md §2.4).
  if (p.board_power_w > 0 && p.power_limit_w < p.board_power_w)
    fmt::print("      power limit {:.0f} W of the {:.0f} W board power ({}): compute rates x{:.3f} "
               "({}); MFU against the rated peak\n",
               p.power_limit_w, p.board_power_w,
               c.cluster.power_limit_w > 0 ? "cluster.power_limit_w" : "the preset's default", p.clock_scale,
               hw.gpu.lower_power_rating_w > 0
                   ? fmt::format("clock ~ power^{:.3f}, through the preset's {:.0f} W rating",
                                 planner::power_clock_exponent(hw.gpu), hw.gpu.lower_power_rating_w)
                   : std::string("clock ~ cube root of power"));
}

// The memory table per GPU: each component, allocated, reserved and the device total against
// the capacity, each pipeline stage's totals, and what model_outputs holds.
void print_plan_memory(const TrainConfig& c, const HardwareSpec& hw, const Prediction& p) {
  const double gib = double(1ull << 30);
  fmt::print("\n");
  if (p.pp_stages.empty())
    fmt::print("memory per GPU (at the allocated peak)      GiB\n");
  else  // the larger pipeline stage's (every rank must fit); each stage's totals after the table
    fmt::print("memory per GPU (at the allocated peak of the larger pipeline stage)      GiB\n");
  double overhead = 0;
  for (const auto& m : p.memory) {
    if (m.name == "runtime_overhead") {
      overhead = m.bytes;
      continue;
    }
    fmt::print("  {:<36} {:>8.2f}\n", m.name, m.bytes / gib);
  }
  fmt::print("  {:<36} {:>8.2f}\n", "allocated (max_memory_allocated)", p.mem_peak_bytes / gib);
  fmt::print("  {:<36} {:>8.2f}\n", "reserved (max_memory_reserved)", p.mem_reserved_bytes / gib);
  fmt::print("  {:<36} {:>8.2f}\n", "outside the allocator (context, NCCL)", overhead / gib);
  fmt::print("  {:<36} {:>8.2f} / {:.2f}  {}\n", "device total (nvidia-smi) / capacity", p.mem_device_total_bytes / gib,
             p.mem_capacity_bytes / gib, p.fits ? "fits" : "DOES NOT FIT");
  // ZBVZeroBubble's V puts the model's first and last stage on the first rank (plan.cpp).
  const bool v_shape = c.parallelism.pp_schedule == PpSchedule::zbv_zero_bubble;
  for (const StageMemory& st : p.pp_stages)
    fmt::print("  {:<36} {:>8.2f} allocated, {:.2f} reserved, {:.2f} device total\n",
               st.stage == "first"  ? (v_shape ? "first pipeline rank (both ends)" : "first pipeline stage (embedding)")
               : st.stage == "last" ? "last pipeline stage (head, loss)"
                                    : "busiest middle pipeline rank",
               st.peak_bytes / gib, st.reserved_bytes / gib, st.device_total_bytes / gib);
  // What model_outputs holds and why (docs/cost-model.md §5.5): the runtime's loop, not autograd.
  for (const auto& m : p.memory) {
    if (m.name != "model_outputs" || m.bytes <= 0) continue;
    const RuntimeTerms& t = planner::runtime_preset(c.runtime).terms_for(planner::is_gpu(hw));
    std::string what = t.fp32_logits_held ? "fp32 logits" : "";
    if (t.use_cache) what += std::string(what.empty() ? "" : " and ") + "every layer's K and V (use_cache)";
    fmt::print("  model_outputs: the model's {} that runtime {}'s loop keeps until {} (outputs_kept {})\n",
               what, c.runtime,
               t.outputs_kept == "next_forward" ? "the next forward returns"
               : t.outputs_kept == "step_end"   ? "the step's end"
                                                : "the micro-step's backward has run",
               t.outputs_kept);
  }
}

// Step time and its parts, throughput, MFU and HFU, and the goodput under failures.
void print_plan_time(const TrainConfig& c, const Prediction& p, const planner::ReliabilitySpec& reliability) {
  const double gib = double(1ull << 30);
  fmt::print("\n");
  fmt::print("step time        {:.4g} s  (compute {:.4g} s, communication {:.4g} s, exposed {:.4g} s, optimizer {:.3g} s)\n",
             p.step_time_s, p.compute_s, p.comm_s, exposed_communication_s(p), p.optimizer_s);
  if (!p.mesh.empty())
    fmt::print("                 mesh: tp exposed {:.4g} s, cp exposed {:.4g} s, pp bubble {:.4g} s + sends {:.4g} s\n",
               p.tp_exposed_s, p.cp_exposed_s, p.pp_bubble_s, p.pp_send_s);
  if (p.host_bound_s > 0)
    fmt::print("                 host-bound: the host's time for the step is {:.4g} s longer than the device's work\n",
               p.host_bound_s);
  fmt::print("tokens/s/GPU     {:.0f}  {}\n", p.tokens_per_s_per_gpu, p.error_band_note);
  if (p.reference_level > 0)
    fmt::print("                 the model's {:.0f} times the reference run's measured / predicted tokens/s ({:.3f}); "
               "step time, MFU and HFU likewise, memory and the time components above are the model's\n",
               p.tokens_per_s_per_gpu / p.reference_level, p.reference_level);
  fmt::print("MFU              {:.1f}%\n", 100 * p.mfu);
  fmt::print("HFU              {:.1f}%\n", 100 * p.hfu);
  if (!p.fits)
    fmt::print("\ndoes not fit: {:.2f} GiB needed of {:.2f} GiB; largest component: {}\n",
               p.mem_device_total_bytes / gib, p.mem_capacity_bytes / gib, p.overflow_component);
  // Failures and checkpoints (planner/decide/goodput.h, configs/reliability/default.toml).
  if (p.fits && p.step_time_s > 0) {
    const planner::Goodput g = planner::goodput(c, p, reliability);
    fmt::print("goodput          {:.1f}% under failures ({:.2g} interruptions/day, {:.3g} s per checkpoint save): "
               "{:.0f} effective tokens/s/GPU; checkpoint.interval {}\n",
               100 * g.goodput, g.interruptions_per_day, g.save_s, g.effective_tokens_per_s_per_gpu,
               g.interval_steps > 0 ? std::to_string(g.interval_steps) + " steps" : "0 (no failures)");
  }
}

void print_human(const TrainConfig& c, const HardwareSpec& hw, const planner::PlanOptions& o, const Prediction& p,
                 const planner::ReliabilitySpec& reliability, const std::vector<std::string>& from_runtime,
                 const std::string& runtime_from) {
  print_plan_head(c, hw, o, p, from_runtime, runtime_from);
  print_plan_memory(c, hw, p);
  print_plan_time(c, p, reliability);
}

}  // namespace

void register_plan(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand("plan", "Predict memory, step time, tokens/s/GPU, MFU and HFU of one configuration");
  cmd->add_option("config", a->config, "run.toml (TrainConfig) or a shardcast-gui session (.json); flags override its values");
  cmd->add_option("--model", a->model, "model preset name or .toml");
  add_hardware_flag(cmd, a->gpu, "hardware preset (e.g. A100-80GB-SXM)");
  cmd->add_option("--gpus", a->gpus, "total GPUs (ranks)");
  cmd->add_option("--gpus-per-node", a->gpus_per_node, "GPUs per node (default: the preset's)");
  cmd->add_option("--inter-node-gbps", a->inter_node_gbps, "NIC bandwidth per node in Gb/s (default: the preset's per GPU times --gpus-per-node)");
  add_power_limit_flag(cmd, a->power_limit_w);
  cmd->add_option("--seq-len", a->seq_len, "tokens per sequence (default: the model's max_seq_len)");
  add_choice_flags(cmd, *a);
  add_runtime_flag(cmd, a->runtime);
  add_reliability_flags(cmd, a->reliability);
  add_reference_run_flag(cmd, a->reference_run);
  cmd->add_flag("--json", a->json, "print the Prediction as JSON");
  cmd->add_option("--timeline", a->timeline, "write the simulated step as a Chrome trace (Perfetto)");
  cmd->callback([a] {
    HardwareSpec hw;
    std::vector<std::string> from_runtime;
    std::string runtime_from;
    const TrainConfig c = config_from_flags("plan", *a, hw, &from_runtime, &runtime_from);
    planner::PlanOptions opt = planner::resolve_plan_options(c, hw);
    opt.timeline = !a->timeline.empty();
    opt.op_breakdown = true;  // time.ops_s of --json (shardcast-train profile --plan reads it)
    if (!a->reference_run.empty()) {
      planner::carry_reference(planner::read_reference_run(a->reference_run, hw, c.runtime), opt);
    }
    const Prediction p = planner::predict(c, hw, opt);
    if (!a->timeline.empty()) write_file_atomic(a->timeline, to_chrome_trace(p.timeline).dump(1) + "\n");
    if (a->json) {
      nlohmann::json j = p;
      fmt::print("{}\n", j.dump(2));
    } else {
      print_human(c, hw, opt, p, to_reliability(a->reliability), from_runtime, runtime_from);
      if (!a->timeline.empty()) fmt::print("timeline         {} ({} events)\n", a->timeline, p.timeline.size());
    }
    if (!p.fits) throw ExitCode{kExitNoFit};
  });
}

}  // namespace shardcast::cli
