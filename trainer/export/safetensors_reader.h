// Reading Hugging Face weights: a model.safetensors file and its config.json.
//
// What it is: SafetensorsReader opens one .safetensors file, reads the 8-byte little-endian
// header length and the JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
// {...}}, and validates all of it before anything is used: the header lies within the file,
// dtype is F32 or BF16, every dimension is a non-negative integer, shape product × dtype size
// equals the data_offsets span, offsets lie within the data section, names are unique.
// read_f32() then reads one named tensor into the caller's fp32 buffer (BF16 upcast, exact)
// with pread, a bounded staging chunk at a time: the file is never mapped nor read whole.
// check_hf_llama_config() compares a LlamaForCausalLM config.json against the run's
// ModelSpec; open_hf_llama() does both for a directory as written by `shardcast-train export`
// (safetensors.h) and checks the tensor set against the model's parameter names and shapes.
// Every problem is an InputError naming the file, and the tensor or field.
// What it is not: a writer (safetensors.h), not a loader into a model (fsdp/initial_load.h
// does that per FSDP unit), and not for sharded HF checkpoints (model.safetensors.index.json
// with several files: refused with a message). Other dtypes (F16, F64, integers) are refused.
// No LibTorch: plain C++ and nlohmann-json, so the fuzz target builds it alone.
// Ownership: a reader owns its file descriptor (closed on destruction; movable, not copyable).
// Threading: const methods may run concurrently (pread has no shared file position).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shared/model_spec.h"

namespace shardcast::trainer {

enum class StDtype { f32, bf16 };

struct SafetensorsEntry {
  std::string name;
  StDtype dtype = StDtype::f32;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  uint64_t begin = 0, end = 0;   // data_offsets, relative to the data section  // bytes
};

class SafetensorsReader {
 public:
  // Opens and validates `file`. Throws InputError (file path, tensor name, what is wrong).
  explicit SafetensorsReader(const std::filesystem::path& file);
  ~SafetensorsReader();
  SafetensorsReader(SafetensorsReader&& o) noexcept;
  SafetensorsReader& operator=(SafetensorsReader&& o) noexcept;
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::vector<SafetensorsEntry>& tensors() const { return tensors_; }  // in header order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t file_bytes() const { return file_bytes_; }          // bytes
  uint64_t data_begin() const { return data_begin_; }          // 8 + header length  // bytes
  const SafetensorsEntry* find(const std::string& name) const;  // nullptr when absent
  // The entry; InputError naming the file and the tensor when absent.
  const SafetensorsEntry& at(const std::string& name) const;

  // Reads tensor `name` into out (numel floats, row-major) fp32; BF16 is widened exactly.
  // `expected_shape` must equal the file's shape (InputError naming both otherwise). A short
  // read (the file shrank since it was opened) is an InputError too.
  void read_f32(const std::string& name, const std::vector<int64_t>& expected_shape, float* out) const;

 private:
  void pread_exact(void* dst, uint64_t bytes, uint64_t offset, const std::string& what) const;

  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;   // bytes
  uint64_t data_begin_ = 0;   // bytes
  std::vector<SafetensorsEntry> tensors_;
  std::map<std::string, size_t> index_;   // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

// Reads `config_json` (a Hugging Face LlamaForCausalLM config) and checks it describes `m`:
// hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// intermediate_size, vocab_size, tie_word_embeddings, and when present rms_norm_eps,
// rope_theta, head_dim, hidden_act = "silu", no rope_scaling, no attention/MLP bias.
// A mismatch is an InputError naming the field, the file's value and the run's value.
void check_hf_llama_config(const std::filesystem::path& config_json, const ModelSpec& m);

// One expected parameter: HF name and shape.
using ExpectedTensor = std::pair<std::string, std::vector<int64_t>>;

// A directory as written by `shardcast-train export`: checks dir/config.json against `m`,
// opens dir/model.safetensors and checks it holds exactly `expected` (a missing tensor, a
// shape mismatch or an extra tensor is an InputError naming it). Returns the open reader.
SafetensorsReader open_hf_llama(const std::filesystem::path& dir, const ModelSpec& m,
                                const std::vector<ExpectedTensor>& expected);

}  // namespace shardcast::trainer
