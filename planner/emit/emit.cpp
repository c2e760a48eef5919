#include "planner/evidence/predict.h"
#include "planner/emit/emit.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "planner/emit/emit_deepspeed.h"
#include "planner/emit/emit_ecosystem.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "planner/decide/search.h"
#include "shared/config_io.h"
#include "shared/emitted_text.h"
#include "shared/errors.h"
#include "shared/slurm_script.h"

namespace shardcast::planner {

namespace fs = std::filesystem;

namespace {

// One comment line summarising the plan, shared by every script. Refuses (ConfigError) a config
// whose strings no file can hold before any text is made.
std::string plan_comment(const TrainConfig& c, const Prediction& p) {
  require_emittable_strings(c);
  std::string o = fmt::format(
      "# Plan: {} on {} x {} ({} node(s) x {}): {}.\n"
      "# Predicted for runtime {}: {:.0f} tokens/s/GPU, MFU {:.1f}%, step {:.3g} s, peak {:.1f} GiB allocated per GPU.\n",
      c.model_label(), c.world_size(), c.cluster.hardware, c.cluster.nodes, c.cluster.gpus_per_node,
      describe_config(c), c.runtime, p.tokens_per_s_per_gpu, 100 * p.mfu, p.step_time_s,
      p.mem_peak_bytes / double(1ull << 30));
  if (!p.fits)
    o += fmt::format("# DOES NOT FIT: {:.1f} GiB needed of {:.1f} GiB ({} overflows); written with --force.\n",
                     memory_needed_bytes(p) / double(1ull << 30), p.mem_capacity_bytes / double(1ull << 30),
                     p.overflow_component);
  return o;
}

// The files of each runtime that has any, in writing order.
struct RuntimeFiles {
  const char* runtime;
  std::vector<const char*> files;
};
const std::vector<RuntimeFiles> kRuntimeFiles = {
    {"shardcast-train", {"run.toml", "launch.sbatch", "launch_torchrun.sh"}},
    {"torchtitan", {"torchtitan.toml", "torchtitan_overrides.txt"}},
    {"accelerate", {"fsdp_config.yaml"}},
    {"fms-fsdp", {"fms_fsdp_args.txt"}},
};

// Every emitter writes a Llama model (torchtitan's llama3, fms-fsdp's LLaMA, an HF LlamaConfig)
// but torchtitan v0.2's files, which also write its qwen3 model (q/k norms, heads of head_dim):
// a Qwen3 attention shape (model.head_dim other than d_model / n_heads, or model.qk_norm) is
// planned but not written as something else. "" = the emitter can write the model.
std::string model_shape_refusal(const ModelSpec& m, const std::string& framework, TorchtitanVersion tv) {
  // torchtitan v0.2's llama3 model has no weight tying (torchtitan/models/llama3 at v0.2.1 81af8833d
  // and v0.2.2 73a0e6979: no tying in model or args; qwen3 has it): a tied Llama (llama3.2-1b,
  // 3b) registered as a flavor there would be built untied, another model than the plan's.
  if (framework == "torchtitan" && tv == TorchtitanVersion::v0_2 && m.tied_embeddings && !m.qk_norm)
    return "torchtitan v0.2's llama3 model cannot tie the input embedding and the output head (model.tied_embeddings "
           "= true; no weight tying in torchtitan/models/llama3 at v0.2.1 or v0.2.2): --torchtitan-version current "
           "writes it (its llama3 model's enable_weight_tying, from @b5bcd76c6)";
  const bool own_head = m.q_dim() != m.d_model;  // heads that are not d_model / n_heads wide
  if (!own_head && !m.qk_norm) return "";
  if (framework == "torchtitan" && tv == TorchtitanVersion::v0_2 && m.qk_norm) return "";  // its qwen3 model
  if (framework == "torchtitan" && tv == TorchtitanVersion::current)
    return "torchtitan's current recipe as emitted here builds its llama3 model: a Qwen3 shape (model.qk_norm, "
           "model.head_dim) is written for --torchtitan-version 0.2 (torchtitan's qwen3 model), predicted here";
  const std::string what = own_head ? fmt::format("model.head_dim = {} (its heads are not d_model / n_heads = {})",
                                                  m.explicit_head_dim, m.d_model / m.n_heads)
                                     : std::string("model.qk_norm = true");
  return fmt::format("{}'s files as emitted here build a Llama model, which cannot hold {}: the plan is predicted, "
                     "no file is written (torchtitan's qwen3 model runs this shape: --runtime torchtitan with "
                     "--torchtitan-version 0.2 writes it when model.qk_norm is set)",
                     framework, what);
}

// torchtitan reads its own datasets and tokenizer, never an llm.c token file: what the files
// leave to it (torchtitan v0.2.1 job_config.py: training.dataset "c4_test", model.hf_assets_path
// "./tests/assets/tokenizer"; the current recipes' llama3_8b() keeps its c4 loader).
std::string torchtitan_data_note(const TrainConfig& c) {
  const std::string data = c.data.path.empty()
                               ? "the plan names no data (emit --data / data.path)"
                               : fmt::format("data.path {} is an llm.c token file, which torchtitan does not read",
                                             c.data.path);
  return fmt::format("no dataset or tokenizer is written: {}. torchtitan reads its own (v0.2: training.dataset, "
                     "training.dataset_path and model.hf_assets_path, defaults c4_test and ./tests/assets/tokenizer; "
                     "current: the recipe's dataloader); set them to your data",
                     data);
}

}  // namespace

PredictionTable prediction_table(const Prediction& pred, const std::string& hardware) {
  PredictionTable t;
  t.present = true;
  t.step_time_s = pred.step_time_s;
  t.tokens_per_s_per_gpu = pred.tokens_per_s_per_gpu;
  t.mfu = pred.mfu;
  t.hfu = pred.hfu;
  t.mem_peak_bytes = pred.mem_peak_bytes;
  for (const auto& m : pred.memory) t.mem_components[m.name] += m.bytes;
  t.hardware = hardware;
  t.runtime = pred.runtime;
  return t;
}

std::string render_run_toml(const TrainConfig& cfg, const Prediction& pred) {
  TrainConfig c = cfg;
  c.prediction = prediction_table(pred, cfg.cluster.hardware);
  std::string note;
  if (c.activation_checkpointing.mode == AcMode::selective_op)
    note = "# activation_checkpointing.mode = \"selective_op\" is planned only: shardcast-train runs none,\n"
           "# selective and full. torchtitan runs it (torchtitan.toml, selective_ac_option = \"op\").\n";
  return plan_comment(c, pred) + note + write_train_config(c);
}

std::string render_sbatch(const TrainConfig& c, const Prediction& p) {
  SlurmScriptOptions o;
  o.generator = "`shardcast emit`";
  o.header = plan_comment(c, p);
  o.predicted_step_s = p.step_time_s;
  o.run_toml_text = render_run_toml(c, p);  // the run.toml written beside it
  return render_slurm_script(c, o);
}

std::string render_torchrun(const TrainConfig& c) {
  const int nodes = c.cluster.nodes, gpn = c.cluster.gpus_per_node;
  std::string o = "#!/usr/bin/env bash\n";
  o += "# Generated by `shardcast emit`.";
  if (nodes == 1) {
    o += " Run: ./launch_torchrun.sh\n";
  } else {
    o += fmt::format(" Run once on each of the {} nodes:\n", nodes);
    o += "#   NODE_RANK=<0..nodes-1> MASTER_ADDR=<first node> ./launch_torchrun.sh\n";
  }
  o += "# torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT;\n"
       "# --no-python runs the C++ trainer directly. It runs in this script's folder (on every node:\n"
       "# a shared folder), so relative paths in run.toml (data.path, checkpoint.dir, metrics.dir)\n"
       "# name files there, as under launch.sbatch submitted from it.\n";
  o += "set -euo pipefail\n";
  o += kCdToScriptFolder;
  o += fmt::format("NNODES={}\n", nodes);
  o += fmt::format("NPROC_PER_NODE={}\n", gpn);
  o += "NODE_RANK=\"${NODE_RANK:-0}\"\n";
  if (nodes == 1)
    o += "MASTER_ADDR=\"${MASTER_ADDR:-localhost}\"\n";
  else
    o += "MASTER_ADDR=\"${MASTER_ADDR:?set MASTER_ADDR to the address of the first node}\"\n";
  o += "MASTER_PORT=\"${MASTER_PORT:-29500}\"\n";
  o += "export PYTORCH_ALLOC_CONF=expandable_segments:True PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n";
  std::string data;
  if (c.data.path.empty()) {
    o += "# run.toml has no data.path: the token file (llm.c .bin) comes from SHARDCAST_DATA.\n";
    o += "SHARDCAST_DATA=\"${SHARDCAST_DATA:?run.toml has no data.path: set SHARDCAST_DATA to a token file (llm.c .bin), "
         "or emit again with --data FILE}\"\n";
    data = " --data \"$SHARDCAST_DATA\"";
  }
  o += "exec torchrun --nnodes \"$NNODES\" --nproc-per-node \"$NPROC_PER_NODE\" --node-rank \"$NODE_RANK\" \\\n"
       "  --master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" \\\n"
       "  --no-python \"${SHARDCAST_TRAIN:-shardcast-train}\" run run.toml" + data + "\n";
  return o;
}

std::vector<EmitTarget> emit_targets(const TrainConfig& cfg, const HardwareSpec& hw, TorchtitanVersion tv,
                                     const ReferenceRun* reference) {
  // A generation (torchtitan-2024-04) writes its framework's files and takes the place of the
  // framework's newest profile in the list.
  const std::string own_framework = runtime_preset(cfg.runtime).framework;
  std::vector<std::string> order{cfg.runtime};
  for (const auto& rf : kRuntimeFiles)
    if (own_framework != rf.runtime) order.push_back(rf.runtime);
  std::vector<EmitTarget> out;
  for (std::string rt : order) {
    // "torchtitan" names the framework: its files are of one generation each
    // (torchtitan_generation: v0.2's TOML torchtitan-2025-10's, the current recipe torchtitan's).
    if (rt == "torchtitan") rt = torchtitan_generation(tv);
    EmitTarget t;
    t.runtime = rt;
    const std::string framework = runtime_preset(rt).framework;
    for (const auto& rf : kRuntimeFiles)
      if (framework == rf.runtime) t.files.assign(rf.files.begin(), rf.files.end());
    if (framework == "torchtitan" && tv == TorchtitanVersion::current) t.files = {"torchtitan_recipe.py"};
    // DeepSpeed's files only when the plan is for it (emit --runtime deepspeed): not a target otherwise.
    if (runtime_preset(rt).zero) t.files = {"ds_config.json", "launch_deepspeed.sh"};
    // What the framework's file runs (as_emitted: its approximations of the plan), predicted.
    t.ran = as_emitted(cfg, framework, tv);
    t.ran.runtime = rt;
    const TrainConfig& c = t.ran;
    t.refusal = runtime_refusal(runtime_preset(rt), c, hw);
    if (t.refusal.empty()) t.refusal = model_shape_refusal(c.model, framework, tv);
    if (t.refusal.empty() && framework == "torchtitan") t.refusal = torchtitan_version_refusal(c, tv);
    if (t.refusal.empty()) {
      PlanOptions o = resolve_plan_options(c, hw);
      if (reference && reference->runtime == rt) carry_reference(*reference, o);
      t.prediction = predict(c, hw, o);
    }
    // Every other torchtitan generation (torchtitan-2024-04 ... torchtitan-2025-07, before v0.2.0
    // of 2025-10-17, read TOML of their own time: training.batch_size, [float8], ...;
    // torchtitan-2026-06 has no training.disable_cuda_graphs) reads keys neither torchtitan.toml
    // (v0.2.1+) nor the current recipe writes: predicted, no file.
    const std::string& until = runtime_preset(rt).until_date;
    if (t.refusal.empty() && framework == "torchtitan" && rt != torchtitan_generation(tv))
      t.refusal = fmt::format("runtime {} is a torchtitan generation{} whose config keys emit does not write "
                              "(torchtitan.toml is v0.2.1 and v0.2.2's: runtime torchtitan-2025-10; "
                              "torchtitan_recipe.py the current generation's: runtime torchtitan): emit with "
                              "--runtime torchtitan for them",
                              rt, !until.empty() && until <= "2025-10-09" ? " before v0.2.0" : "");
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

// Every name emit writes in some plan (emit.h), for what an earlier emit may have left in `dir`.
const std::vector<std::string>& emitted_names() {
  static const std::vector<std::string> n{"run.toml",          "launch.sbatch",       "launch_torchrun.sh",
                                          "torchtitan.toml",   "torchtitan_overrides.txt", "torchtitan_recipe.py",
                                          "fsdp_config.yaml",  "ds_config.json",      "launch_deepspeed.sh",
                                          "fms_fsdp_args.txt"};
  return n;
}

// Before anything is written: refuses to replace the input config (`source`) ever, and any
// existing file of `names` unless `overwrite`; returns the files of other emitted names in `dir`
// (an earlier emit's, not part of this plan), which emit removes after writing under overwrite
// and refuses otherwise. ConfigError naming the path (exit 2).
std::vector<fs::path> check_out_dir(const std::string& dir, const std::vector<std::string>& names,
                                    const std::string& source, bool overwrite) {
  std::error_code ec;
  auto is_source = [&](const fs::path& p) { return !source.empty() && fs::equivalent(p, source, ec); };
  std::vector<std::string> existing;
  std::vector<fs::path> stale;
  for (const std::string& n : emitted_names()) {
    const fs::path p = fs::path(dir) / n;
    if (!fs::exists(fs::symlink_status(p, ec))) continue;
    if (is_source(p))
      throw ConfigError(p.string(), "",
                        "is the input config: emit never replaces or removes it; give another --out directory");
    const bool ours = std::find(names.begin(), names.end(), n) != names.end();
    if (ours) existing.push_back(n);
    else stale.push_back(p);
  }
  if (!overwrite && (!existing.empty() || !stale.empty())) {
    std::string all;
    for (const auto& n : existing) all += (all.empty() ? "" : ", ") + n;
    for (const auto& p : stale) all += (all.empty() ? "" : ", ") + p.filename().string();
    throw ConfigError(dir, "",
                      fmt::format("already holds {}: emit never replaces files unasked; give a new --out directory, "
                                  "or --overwrite to replace what this plan writes and remove the other emitted files "
                                  "(an earlier plan's)",
                                  all));
  }
  return stale;
}

// One file of the set and its text.
struct EmitFile {
  std::string name;
  std::string text;
  bool executable;
};

// A target's files, rendered for its runtime, each with the plan's comment where its format
// has comments; notes on what a file leaves to the user go to res.
void render_target(const TrainConfig& cfg, const EmitTarget& t, std::vector<EmitFile>& files, EmitResult& res) {
  TrainConfig c = cfg;
  c.runtime = t.runtime;
  const Prediction& p = t.prediction;
  std::string head = plan_comment(c, p);
  if (describe_config(t.ran) != describe_config(c))
    head += fmt::format("# As {} runs this file (the approximations noted below): {}; the prediction is for that.\n",
                        t.runtime, describe_config(t.ran));
  for (const auto& name : t.files) {
    const std::string n = name;
    if (n == "run.toml") files.push_back({n, render_run_toml(c, p), false});
    else if (n == "launch.sbatch") files.push_back({n, render_sbatch(c, p), true});
    else if (n == "launch_torchrun.sh") files.push_back({n, render_torchrun(c), true});
    else if (n == "torchtitan.toml" || n == "torchtitan_overrides.txt" || n == "torchtitan_recipe.py") {
      const std::string note = torchtitan_data_note(c);
      const std::string body = n == "torchtitan.toml"            ? render_torchtitan_toml(c)
                               : n == "torchtitan_overrides.txt" ? render_torchtitan_overrides(c)
                                                                 : render_torchtitan_recipe(c);
      files.push_back({n, head + "# NOTE: " + note + "\n" + body, false});
      res.notes.push_back(n + ": " + note);
    }
    else if (n == "fsdp_config.yaml") files.push_back({n, head + render_accelerate_yaml(c), false});
    else if (n == "ds_config.json") files.push_back({n, render_ds_config_json(c, *runtime_preset(t.runtime).zero), false});
    else if (n == "launch_deepspeed.sh") {
      files.push_back({n, render_deepspeed_launch(c, head), true});
      for (const std::string& note : deepspeed_notes(c)) res.notes.push_back(n + ": " + note);
    } else if (n == "fms_fsdp_args.txt") {
      files.push_back({n, head + render_fms_fsdp_args(c), false});
      for (const std::string& note : fms_fsdp_notes(c)) res.notes.push_back(n + ": " + note);
    }
  }
}

// Writes the set into dir as one: run.toml read back first, every file staged beside its
// target, an earlier plan's files removed, then all renamed; a failure leaves dir as it was.
void write_set(const std::vector<EmitFile>& files, const std::string& dir, const std::string& source_file,
               bool overwrite, EmitResult& res) {
  // Read run.toml back before anything is written: what the trainer parses must be valid.
  for (const EmitFile& f : files)
    if (f.name == "run.toml") parse_train_config(f.text, (fs::path(dir) / "run.toml").string());
  std::vector<std::string> names;
  for (const EmitFile& f : files) names.push_back(f.name);
  const std::vector<fs::path> stale = check_out_dir(dir, names, source_file, overwrite);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(fmt::format("emit: --out {}: cannot create the directory: {}", dir, ec.message()));
  StagedFiles staged;
  for (const EmitFile& f : files) staged.add(fs::path(dir) / f.name, f.text, f.executable);
  // An earlier plan's files go before the new set lands: a file that cannot be removed stops
  // the emit with nothing of the new set written (the staged files are removed).
  for (const fs::path& p : stale) {
    if (fs::remove(p, ec)) res.removed.push_back(p.string());
    else if (ec) throw InputError(fmt::format("emit: cannot remove {} (from an earlier emit, not part of this plan): {}; "
                                              "nothing of this plan written",
                                              p.string(), ec.message()));
  }
  staged.commit();
  for (const EmitFile& f : files) res.written.push_back((fs::path(dir) / f.name).string());
}

}  // namespace

EmitResult emit_files(const TrainConfig& cfg, const HardwareSpec& hw, const std::string& dir, bool force,
                      TorchtitanVersion tv, const ReferenceRun* reference, bool overwrite) {
  validate_or_throw(cfg);
  require_emittable_strings(cfg);
  if (dir.empty()) throw UsageError("emit: --out DIR is required");
  EmitResult res;
  res.targets = emit_targets(cfg, hw, tv, reference);
  std::vector<EmitFile> files;
  for (const EmitTarget& t : res.targets) {
    if (t.files.empty()) continue;
    std::string names;
    for (const auto& f : t.files) names += (names.empty() ? "" : ", ") + f;
    if (!t.refusal.empty()) {
      res.skipped.push_back(names + ": " + t.refusal);
      continue;
    }
    if (!t.prediction.fits && !force) {
      res.skipped.push_back(fmt::format("{}: does not fit for runtime {} ({} overflows {:.1f} GiB; --force writes it)",
                                        names, t.runtime, t.prediction.overflow_component,
                                        t.prediction.mem_capacity_bytes / double(1ull << 30)));
      continue;
    }
    render_target(cfg, t, files, res);
  }
  if (files.empty()) return res;  // every target refused: no directory made for nothing
  write_set(files, dir, cfg.source_file, overwrite, res);
  return res;
}

}  // namespace shardcast::planner
