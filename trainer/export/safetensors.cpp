// Checkpoint -> model.safetensors + config.json. See safetensors.h.
#include "trainer/export/safetensors.h"

#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "trainer/checkpoint/manifest.h"

namespace shardcast::trainer {

namespace fs = std::filesystem;

namespace {

uint16_t to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

}  // namespace

std::string hf_config_json(const ModelSpec& m, const std::string& torch_dtype) {
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"hidden_size", m.d_model},
                      {"intermediate_size", m.ffn_dim},
                      {"num_hidden_layers", m.n_layers},
                      {"num_attention_heads", m.n_heads},
                      {"num_key_value_heads", m.n_kv_heads},
                      {"head_dim", m.head_dim()},
                      {"vocab_size", m.vocab},
                      {"max_position_embeddings", m.max_seq_len},
                      {"rms_norm_eps", m.norm_eps},
                      {"rope_theta", m.rope_theta},
                      {"tie_word_embeddings", m.tied_embeddings},
                      {"hidden_act", "silu"},
                      {"attention_bias", false},
                      {"mlp_bias", false},
                      {"initializer_range", 0.02},
                      {"torch_dtype", torch_dtype}};
  return j.dump(2) + "\n";
}

ExportResult export_checkpoint(const fs::path& dir, const fs::path& out_dir, const std::string& dtype) {
  if (dtype != "fp32" && dtype != "bf16")
    throw UsageError(fmt::format("--dtype \"{}\": expected fp32 or bf16", dtype));
  // Verify every file first: a corrupt checkpoint never produces a partial export.
  const ckpt::Manifest m = ckpt::verify_checkpoint(dir);
  if (m.spec.mlp_type != MlpType::swiglu)
    throw InputError(fmt::format("{}: model {} has a GELU MLP; Hugging Face Llama export needs SwiGLU",
                                 dir.string(), m.model));
  if (m.tp > 1)
    throw InputError(fmt::format("{}: saved with tensor parallel (tp {}); export reads only tp = 1 checkpoints "
                                 "(a tp checkpoint resumes on tp = 1: train on from it with parallelism.tp = 1 and "
                                 "export a checkpoint of that run)",
                                 dir.string(), m.tp));
  const int S = m.shard_size;

  // Header: every tensor's offsets, in unit order.
  const size_t esize = dtype == "fp32" ? 4 : 2;
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}, {"source", "shardcast"}, {"step", std::to_string(m.data.step)}};
  uint64_t off = 0;
  int n_tensors = 0;
  for (const auto& u : m.units)
    for (const auto& p : u.params) {
      const uint64_t nb = uint64_t(p.numel) * esize;
      header[p.name] = {{"dtype", dtype == "fp32" ? "F32" : "BF16"}, {"shape", p.shape}, {"data_offsets", {off, off + nb}}};
      off += nb;
      ++n_tensors;
    }
  std::string h = header.dump();
  while (h.size() % 8) h.push_back(' ');

  fs::create_directories(out_dir);
  const fs::path final_path = out_dir / "model.safetensors";
  const fs::path tmp_path = out_dir / "model.safetensors.tmp";
  fs::remove(tmp_path);  // a crashed export's (a link is removed, not followed); created exclusively below
  {
    ckpt::DurableWriter w(tmp_path);
    const uint64_t hlen = h.size();
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = (unsigned char)(hlen >> (8 * i));
    w.write(le, 8);
    w.write(h.data(), h.size());
    std::vector<std::ifstream> files(static_cast<size_t>(S));
    for (int k = 0; k < S; ++k) {
      files[size_t(k)].open(dir / m.files[size_t(k)].file, std::ios::binary);
      if (!files[size_t(k)]) throw InputError(fmt::format("{}: cannot open", (dir / m.files[size_t(k)].file).string()));
    }
    uint64_t unit_off = 0;  // byte offset of the unit's section in every shard file
    std::vector<float> full;
    std::vector<uint16_t> half;
    for (const auto& u : m.units) {
      const int64_t n = u.padded_numel / S;
      full.resize(size_t(u.padded_numel));
      for (int k = 0; k < S; ++k) {  // the parameter shard is the first of the unit's 3 tensors
        auto& in = files[size_t(k)];
        in.seekg(std::streamoff(unit_off));
        in.read(reinterpret_cast<char*>(full.data() + int64_t(k) * n), std::streamsize(n * 4));
        if (!in) throw InputError(fmt::format("{}: short read", (dir / m.files[size_t(k)].file).string()));
      }
      if (dtype == "fp32") {
        w.write(full.data(), size_t(u.numel) * 4);  // params are contiguous in flat order
      } else {
        half.resize(size_t(u.numel));
        for (int64_t i = 0; i < u.numel; ++i) half[size_t(i)] = to_bf16(full[size_t(i)]);
        w.write(half.data(), half.size() * 2);
      }
      unit_off += uint64_t(3 * n) * 4;
    }
    w.close();
  }
  fs::rename(tmp_path, final_path);
  ckpt::fsync_dir(out_dir);
  write_file_atomic(out_dir / "config.json", hf_config_json(m.spec, dtype == "fp32" ? "float32" : "bfloat16"));
  return {final_path, out_dir / "config.json", n_tensors, 8 + h.size() + off};
}

}  // namespace shardcast::trainer
