#include "shared/trainer_checks.h"

#include <filesystem>

#include <fmt/format.h>

namespace shardcast {

std::string resolved_backend(const TrainConfig& cfg, bool nccl_compiled) {
  if (cfg.comm.backend != "auto") return cfg.comm.backend;
  return nccl_compiled ? "nccl" : "gloo";
}

std::vector<TrainerRefusal> trainer_refusals(const TrainConfig& cfg, bool nccl_compiled) {
  std::vector<TrainerRefusal> out;
  for (const std::string& e : validate(cfg)) out.push_back({"", e});
  const std::string backend = resolved_backend(cfg, nccl_compiled);
  if (backend == "gloo" && (cfg.precision.param_dtype != "fp32" || cfg.precision.reduce_dtype != "fp32"))
    out.push_back({"precision", fmt::format("param_dtype \"{}\" / reduce_dtype \"{}\": the CPU/Gloo trainer runs fp32 "
                                            "only (Gloo in LibTorch 1.13 rejects bf16); set both to \"fp32\"",
                                            cfg.precision.param_dtype, cfg.precision.reduce_dtype)});
  // Planner-only knobs: running the config without them would silently measure a different
  // run than the one predicted.
  if (cfg.precision.master_dtype != "fp32")
    out.push_back({"precision.master_dtype",
                   fmt::format("\"{}\" is modeled by the planner; shardcast-train keeps fp32 shards, gradients and "
                               "AdamW states (set \"fp32\")", cfg.precision.master_dtype)});
  if (cfg.activation_checkpointing.mode == AcMode::selective_op)
    out.push_back({"activation_checkpointing.mode",
                   "\"selective_op\" is modeled by the planner but shardcast-train runs none | selective | full"});
  if (cfg.precision.compile)
    out.push_back({"precision.compile", "true is modeled by the planner; shardcast-train has no compiler (set false)"});
  if (cfg.precision.fp8_on())
    out.push_back({"precision.fp8", fmt::format("\"{}\" is modeled by the planner; shardcast-train has no fp8 kernels "
                                                "(set \"none\")", to_string(cfg.precision.fp8))});
  if (backend == "nccl" && !nccl_compiled)
    out.push_back({"comm.backend", "\"nccl\" needs a LibTorch built with CUDA; this build has Gloo only"});
  if (cfg.data.path.empty()) {
    out.push_back({"data.path", "is empty: make a token file with `shardcast-train tokenize --out corpus.bin FILES...` "
                                "and set data.path or pass --data"});
  } else {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(cfg.data.path, ec))
      out.push_back({"data.path", fmt::format("\"{}\" is not a readable file", cfg.data.path)});
  }
  return out;
}

}  // namespace shardcast
