#include "shared/trainer_checks.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

// The token file layout's constants only (header-only; nothing of the trainer is linked).
#include "trainer/data/token_file.h"

namespace shardcast {

namespace {

// What TokenFile's constructor (trainer/data/token_file.cpp) would refuse in the file's header:
// "" for a token file it opens, else why not. Reads the 1024-byte header only.
std::string token_file_problem(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) return fmt::format("\"{}\" cannot be read: {}", path, ec.message());
  constexpr size_t header_bytes = trainer::kTokenFileHeaderInts * sizeof(int32_t);
  const std::string hint = " (make one with `shardcast-train tokenize --out corpus.bin FILES...`)";
  if (bytes < header_bytes)
    return fmt::format("\"{}\" is not a token file: {} bytes is shorter than the {}-byte llm.c header{}", path, bytes,
                       header_bytes, hint);
  std::ifstream in(path, std::ios::binary);
  char raw[3 * sizeof(int32_t)];
  if (!in.read(raw, sizeof raw)) return fmt::format("\"{}\" cannot be read", path);
  int32_t h[3];
  std::memcpy(h, raw, sizeof h);
  if (h[0] != trainer::kTokenFileMagic)
    return fmt::format("\"{}\" is not a token file: its first word is {}, an llm.c .bin token file starts with the "
                       "magic {}{}",
                       path, h[0], trainer::kTokenFileMagic, hint);
  if (h[1] != 1 && h[1] != 2)
    return fmt::format("\"{}\": token file version {} (allowed: 1 = uint16 tokens, 2 = uint32)", path, h[1]);
  const uint64_t want = header_bytes + uint64_t(h[2] < 0 ? 0 : h[2]) * (h[1] == 1 ? 2 : 4);
  if (h[2] < 0 || want != bytes)
    return fmt::format("\"{}\": the header says {} tokens ({} bytes) but the file has {} bytes", path, h[2], want,
                       bytes);
  return "";
}

}  // namespace

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
  if (cfg.optimizer.state_dtype != "master")
    out.push_back({"optimizer.state_dtype",
                   fmt::format("\"{}\" is planned for torchtitan (optimizer.implementation = \"fused_opt_states_bf16\"); "
                               "shardcast-train keeps AdamW's moments in fp32 beside its fp32 shards (set \"master\")",
                               cfg.optimizer.state_dtype)});
  if (cfg.parallelism.sharding_strategy == ShardingStrategy::shard_optimizer)
    out.push_back({"parallelism.sharding_strategy",
                   "\"shard_optimizer\" (DeepSpeed ZeRO stage 1) is planned and emitted for the deepspeed runtime "
                   "(`shardcast emit --runtime deepspeed`); shardcast-train runs FSDP: full_shard | shard_grad_op | "
                   "hybrid_shard | no_shard"});
  if (cfg.activation_checkpointing.mode == AcMode::selective_op)
    out.push_back({"activation_checkpointing.mode",
                   "\"selective_op\" is modeled by the planner but shardcast-train runs none | selective | full"});
  // Qwen3's attention shape: trainer/model/llama.cpp builds Llama blocks (head_dim = d_model /
  // n_heads, no per-head norms); the planner plans both keys.
  if (cfg.model.n_heads > 0 && cfg.model.q_dim() != cfg.model.d_model)
    out.push_back({"model.head_dim",
                   fmt::format("{} is planned; shardcast-train builds heads of "
                               "d_model / n_heads = {} / {} (set 0)",
                               cfg.model.explicit_head_dim, cfg.model.d_model, cfg.model.n_heads)});
  if (cfg.model.qk_norm)
    out.push_back({"model.qk_norm", "true is planned; shardcast-train has no per-head query and key norms (set false)"});
  // The mesh: shardcast-train runs FSDP with tensor parallel (dp_replicate x dp_shard x tp);
  // CP and PP are planned and emitted for torchtitan.
  for (const auto& [key, v] : {std::pair{"parallelism.cp", cfg.parallelism.cp}, {"parallelism.pp", cfg.parallelism.pp}})
    if (v > 1)
      out.push_back({key, fmt::format("{} is planned and emitted for torchtitan (`shardcast emit --runtime torchtitan`); "
                                      "shardcast-train does not run it (set 1)",
                                      v)});
  if (const int tp = cfg.parallelism.tp; tp > 1) {
    // What the trainer's tensor parallel needs beyond validate_mesh's heads and ffn_dim.
    if (cfg.model.vocab % tp != 0)
      out.push_back({"parallelism.tp", fmt::format("{} does not divide the model's vocab {} (shardcast-train splits the "
                                                   "embedding and the output layer by vocabulary rows)",
                                                   tp, cfg.model.vocab)});
    if (cfg.training.seq_len % tp != 0)
      out.push_back({"training.seq_len", fmt::format("{} is not a multiple of parallelism.tp = {} (sequence parallel "
                                                     "splits each sequence into tp shards)",
                                                     cfg.training.seq_len, tp)});
    if (cfg.parallelism.tp_async)
      out.push_back({"parallelism.tp_async", "true is planned and emitted for torchtitan; shardcast-train runs its "
                                             "tensor-parallel collectives without overlap (set false)"});
    if (!cfg.checkpoint.initial_load_path.empty())
      out.push_back({"checkpoint.initial_load_path", fmt::format("is not loaded by shardcast-train under tensor parallel "
                                                                 "(parallelism.tp = {}): start from the seed, or load "
                                                                 "with tp = 1, save a checkpoint and resume it with tp",
                                                                 tp)});
  }
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
    else if (const std::string why = token_file_problem(cfg.data.path); !why.empty())
      out.push_back({"data.path", why});
  }
  return out;
}

}  // namespace shardcast
