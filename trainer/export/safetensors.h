// Export of a sharded checkpoint as Hugging Face weights: model.safetensors + config.json.
//
// What it is: export_checkpoint() reads a checkpoint directory (manifest.h), verifies every
// shard file's size and CRC-32, and writes the full parameters under their Hugging Face
// Llama names ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", ...,
// "lm_head.weight" unless tied) in the safetensors layout — 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}} padded with spaces to a multiple
// of 8, then the raw little-endian data — plus a LlamaForCausalLM config.json. It assembles
// one FSDP unit at a time from the shard files (never the whole model, never two copies),
// writes to a temporary name, fsyncs and renames. bf16 output rounds to nearest even.
// What it is not: a loader (safetensors_reader.h reads it back) and not for GELU/MPT models
// (HF has no Llama config for them: refused with an error). No LibTorch, no process group:
// `shardcast-train export` runs it in one process. Reentrant.
#pragma once

#include <filesystem>
#include <string>

#include "shared/model_spec.h"

namespace shardcast::trainer {

struct ExportResult {
  std::filesystem::path safetensors, config;
  int tensors = 0;
  uint64_t bytes = 0;   // size of model.safetensors  // bytes
};

// dtype: "fp32" | "bf16". Throws InputError for a bad checkpoint, UsageError for a bad dtype.
ExportResult export_checkpoint(const std::filesystem::path& checkpoint_dir, const std::filesystem::path& out_dir,
                               const std::string& dtype = "fp32");

// The config.json text for a model (LlamaForCausalLM).
std::string hf_config_json(const ModelSpec& m, const std::string& torch_dtype);

}  // namespace shardcast::trainer
