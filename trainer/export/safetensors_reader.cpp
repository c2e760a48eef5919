// model.safetensors + config.json -> validated tensors read by name. See safetensors_reader.h.
#include "trainer/export/safetensors_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "shared/errors.h"
#include "shared/json_int.h"
#include "shared/config_io.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; this reader copies it as host floats");

namespace shardcast::trainer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The reference implementation (huggingface/safetensors) refuses larger headers.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;   // bytes
constexpr uint64_t kStagingBytes = uint64_t(1) << 20;   // bf16 read chunk  // bytes

size_t dtype_bytes(StDtype d) { return d == StDtype::f32 ? 4 : 2; }

std::string shape_str(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

// A non-negative JSON integer (no floats, no negatives, no strings).
uint64_t json_u64(const json& v, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return uint64_t(v.get<int64_t>());
  throw InputError(fmt::format("{}: expected a non-negative integer, got {}", where, v.dump()));
}

SafetensorsEntry parse_entry(const std::string& file, const std::string& name, const json& e,
                             uint64_t data_bytes) {
  const std::string where = fmt::format("{}: tensor '{}'", file, name);
  if (!e.is_object()) throw InputError(fmt::format("{}: expected an object, got {}", where, e.type_name()));
  for (const auto& [k, v] : e.items())
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      throw InputError(fmt::format("{}: unknown field '{}' (dtype | shape | data_offsets)", where, k));
  for (const char* k : {"dtype", "shape", "data_offsets"})
    if (!e.contains(k)) throw InputError(fmt::format("{}: missing field '{}'", where, k));
  SafetensorsEntry t;
  t.name = name;
  const json& d = e["dtype"];
  if (!d.is_string()) throw InputError(fmt::format("{}: dtype is not a string", where));
  const std::string ds = d.get<std::string>();
  if (ds == "F32") t.dtype = StDtype::f32;
  else if (ds == "BF16") t.dtype = StDtype::bf16;
  else throw InputError(fmt::format("{}: dtype \"{}\" is not supported (F32 | BF16)", where, ds));
  const json& s = e["shape"];
  if (!s.is_array()) throw InputError(fmt::format("{}: shape is not an array", where));
  uint64_t numel = 1;
  for (const json& dim : s) {
    const uint64_t n = json_u64(dim, where + " shape");
    if (n > uint64_t(INT64_MAX) || __builtin_mul_overflow(numel, n, &numel) || numel > uint64_t(INT64_MAX))
      throw InputError(fmt::format("{}: shape {} has too many elements", where, s.dump()));
    t.shape.push_back(int64_t(n));
  }
  t.numel = int64_t(numel);
  const json& o = e["data_offsets"];
  if (!o.is_array() || o.size() != 2)
    throw InputError(fmt::format("{}: data_offsets must be [begin, end], got {}", where, o.dump()));
  t.begin = json_u64(o[0], where + " data_offsets");
  t.end = json_u64(o[1], where + " data_offsets");
  if (t.begin > t.end)
    throw InputError(fmt::format("{}: data_offsets [{}, {}] begin after end", where, t.begin, t.end));
  if (t.end > data_bytes)
    throw InputError(fmt::format("{}: data_offsets [{}, {}] beyond the data section of {} bytes "
                                 "(truncated file?)", where, t.begin, t.end, data_bytes));
  uint64_t want = 0;
  if (__builtin_mul_overflow(numel, uint64_t(dtype_bytes(t.dtype)), &want) || want != t.end - t.begin)
    throw InputError(fmt::format("{}: shape {} of {} needs {} bytes but data_offsets [{}, {}] span {}", where,
                                 shape_str(t.shape), ds, numel * dtype_bytes(t.dtype), t.begin, t.end,
                                 t.end - t.begin));
  return t;
}

}  // namespace

SafetensorsReader::SafetensorsReader(const fs::path& file) : path_(file) {
  const std::string f = file.string();
  fd_ = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot open: {}", f, std::strerror(errno)));
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw InputError(fmt::format("{}: cannot stat: {}", f, std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: not a regular file", f));
    file_bytes_ = uint64_t(st.st_size);
    if (file_bytes_ < 8)
      throw InputError(fmt::format("{}: {} bytes: truncated (a safetensors file starts with an 8-byte "
                                   "header length)", f, file_bytes_));
    unsigned char le[8];
    pread_exact(le, 8, 0, "header length");
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(le[i]) << (8 * i);
    if (n > file_bytes_ - 8)
      throw InputError(fmt::format("{}: header length {} exceeds the file ({} bytes): truncated or not a "
                                   "safetensors file", f, n, file_bytes_));
    if (n > kMaxHeaderBytes)
      throw InputError(fmt::format("{}: header length {} is above the safetensors limit of {} bytes", f, n,
                                   kMaxHeaderBytes));
    data_begin_ = 8 + n;
    std::string text(size_t(n), '\0');
    pread_exact(text.data(), n, 8, "header");

    // Duplicate names: nlohmann keeps the last value of a repeated key, so watch the keys of
    // the top-level object (depth 1) while parsing.
    std::set<std::string> seen;
    std::string duplicate;
    json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
      if (ev == json::parse_event_t::key && depth == 1 && duplicate.empty()) {
        const std::string k = parsed.get<std::string>();
        if (!seen.insert(k).second) duplicate = k;
      }
      return true;
    };
    json h;
    try {
      h = json::parse(text, cb);
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{}: header is not valid JSON: {}", f, e.what()));
    }
    if (!duplicate.empty()) throw InputError(fmt::format("{}: tensor '{}' appears twice in the header", f, duplicate));
    if (!h.is_object()) throw InputError(fmt::format("{}: header is {}, expected an object", f, h.type_name()));
    const uint64_t data_bytes = file_bytes_ - data_begin_;
    for (const auto& [name, e] : h.items()) {
      if (name == "__metadata__") {
        if (!e.is_object()) throw InputError(fmt::format("{}: __metadata__ is not an object", f));
        for (const auto& [k, v] : e.items()) {
          if (!v.is_string())
            throw InputError(fmt::format("{}: __metadata__ '{}' is not a string", f, k));
          metadata_[k] = v.get<std::string>();
        }
        continue;
      }
      index_[name] = tensors_.size();
      tensors_.push_back(parse_entry(f, name, e, data_bytes));
    }
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0) ::close(fd_);
}

SafetensorsReader::SafetensorsReader(SafetensorsReader&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), file_bytes_(o.file_bytes_), data_begin_(o.data_begin_),
      tensors_(std::move(o.tensors_)), index_(std::move(o.index_)), metadata_(std::move(o.metadata_)) {
  o.fd_ = -1;
}

SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    o.fd_ = -1;
    file_bytes_ = o.file_bytes_;
    data_begin_ = o.data_begin_;
    tensors_ = std::move(o.tensors_);
    index_ = std::move(o.index_);
    metadata_ = std::move(o.metadata_);
  }
  return *this;
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const SafetensorsEntry& SafetensorsReader::at(const std::string& name) const {
  const SafetensorsEntry* e = find(name);
  if (!e) throw InputError(fmt::format("{}: missing tensor '{}'", path_.string(), name));
  return *e;
}

void SafetensorsReader::pread_exact(void* dst, uint64_t bytes, uint64_t offset, const std::string& what) const {
  auto* p = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < bytes) {
    const size_t want = size_t(std::min<uint64_t>(bytes - done, uint64_t(1) << 30));
    const ssize_t r = ::pread(fd_, p + done, want, off_t(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      throw InputError(fmt::format("{}: read of {} failed: {}", path_.string(), what, std::strerror(errno)));
    if (r == 0)
      throw InputError(fmt::format("{}: short read of {} ({} of {} bytes at offset {}): the file is truncated",
                                   path_.string(), what, done, bytes, offset));
    done += uint64_t(r);
  }
}

void SafetensorsReader::read_f32(const std::string& name, const std::vector<int64_t>& expected_shape,
                                 float* out) const {
  const SafetensorsEntry& e = at(name);
  if (e.shape != expected_shape)
    throw InputError(fmt::format("{}: tensor '{}' has shape {}, the model expects {}", path_.string(), name,
                                 shape_str(e.shape), shape_str(expected_shape)));
  const uint64_t at_byte = data_begin_ + e.begin;
  const std::string what = fmt::format("tensor '{}'", name);
  if (e.dtype == StDtype::f32) {
    pread_exact(out, e.end - e.begin, at_byte, what);
    return;
  }
  // BF16: the top 16 bits of an fp32, so widening is exact.
  std::vector<uint16_t> staging(size_t(std::min<uint64_t>(e.end - e.begin, kStagingBytes) / 2));
  for (int64_t i = 0; i < e.numel;) {
    const int64_t n = std::min<int64_t>(e.numel - i, int64_t(staging.size()));
    pread_exact(staging.data(), uint64_t(n) * 2, at_byte + uint64_t(i) * 2, what);
    for (int64_t k = 0; k < n; ++k) {
      const uint32_t bits = uint32_t(staging[size_t(k)]) << 16;
      std::memcpy(out + i + k, &bits, 4);
    }
    i += n;
  }
}

// ---------------------------------------------------------------- config.json

void check_hf_llama_config(const fs::path& config_json, const ModelSpec& m) {
  const std::string f = config_json.string();
  std::error_code ec;
  if (!fs::is_regular_file(config_json, ec))
    throw InputError(fmt::format("{}: cannot open (a Hugging Face config.json is needed next to "
                                 "model.safetensors)", f));
  const std::string text = read_text(config_json, kMaxConfigFileBytes);  // a config.json is kilobytes
  json c;
  try {
    c = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", f, e.what()));
  }
  if (!c.is_object()) throw InputError(fmt::format("{}: expected a JSON object", f));
  if (m.mlp_type != MlpType::swiglu)
    throw InputError(fmt::format("{}: the run's model has a GELU MLP; Hugging Face Llama weights are SwiGLU", f));
  auto int_field = [&](const std::string& key, int64_t run_value, const char* run_key, bool required,
                       const std::string& fallback_key = "") {
    const json* v = c.contains(key) && !c[key].is_null() ? &c[key] : nullptr;
    if (!v && !fallback_key.empty() && c.contains(fallback_key)) v = &c[fallback_key];  // HF's default
    if (!v) {
      if (required) throw InputError(fmt::format("{}: missing field '{}'", f, key));
      return;
    }
    int64_t got = 0;
    try {
      got = json_int(*v);
    } catch (const json::exception&) {
      throw InputError(fmt::format("{}: {} = {} is not an integer", f, key, v->dump()));
    }
    if (got != run_value)
      throw InputError(fmt::format("{}: {} = {} in the file, but the run's model has {} = {}", f, key, got,
                                   run_key, run_value));
  };
  int_field("hidden_size", m.d_model, "model.d_model", true);
  int_field("num_hidden_layers", m.n_layers, "model.n_layers", true);
  int_field("num_attention_heads", m.n_heads, "model.n_heads", true);
  // HF LlamaConfig: num_key_value_heads absent or null means num_attention_heads.
  int_field("num_key_value_heads", m.n_kv_heads, "model.n_kv_heads", true, "num_attention_heads");
  int_field("intermediate_size", m.ffn_dim, "model.ffn_dim", true);
  int_field("vocab_size", m.vocab, "model.vocab", true);
  int_field("head_dim", m.head_dim(), "d_model / n_heads", false);
  // HF LlamaConfig: tie_word_embeddings defaults to false.
  bool tied = false;
  if (c.contains("tie_word_embeddings")) {
    if (!c["tie_word_embeddings"].is_boolean())
      throw InputError(fmt::format("{}: tie_word_embeddings = {} is not a boolean", f, c["tie_word_embeddings"].dump()));
    tied = c["tie_word_embeddings"].get<bool>();
  }
  if (tied != m.tied_embeddings)
    throw InputError(fmt::format("{}: tie_word_embeddings = {} in the file, but the run's model has "
                                 "model.tied_embeddings = {}", f, tied, m.tied_embeddings));
  auto float_field = [&](const char* key, double run_value, const char* run_key) {
    if (!c.contains(key)) return;
    if (!c[key].is_number()) throw InputError(fmt::format("{}: {} = {} is not a number", f, key, c[key].dump()));
    const double got = c[key].get<double>();
    // Both sides are decimal text of a double (export writes the shortest round-trip form).
    if (got != run_value)
      throw InputError(fmt::format("{}: {} = {} in the file, but the run's model has {} = {}", f, key, got,
                                   run_key, run_value));
  };
  float_field("rms_norm_eps", m.norm_eps, "model.norm_eps");
  float_field("rope_theta", m.rope_theta, "model.rope_theta");
  if (c.contains("hidden_act") && c["hidden_act"] != "silu")
    throw InputError(fmt::format("{}: hidden_act = {} in the file, but the run's model is SwiGLU (silu)", f,
                                 c["hidden_act"].dump()));
  if (c.contains("rope_scaling") && !c["rope_scaling"].is_null())
    throw InputError(fmt::format("{}: rope_scaling = {}: shardcast's Llama has no RoPE scaling, the loaded "
                                 "model would compute something else", f, c["rope_scaling"].dump()));
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (c.contains(key) && c[key] != false)
      throw InputError(fmt::format("{}: {} = {}: shardcast's Llama has no biases", f, key, c[key].dump()));
}

SafetensorsReader open_hf_llama(const fs::path& dir, const ModelSpec& m, const std::vector<ExpectedTensor>& expected) {
  if (!fs::is_directory(dir))
    throw InputError(fmt::format("{}: not a directory (checkpoint.initial_load_path needs the directory "
                                 "`shardcast-train export` wrote)", dir.string()));
  const fs::path st = dir / "model.safetensors";
  if (!fs::exists(st)) {
    if (fs::exists(dir / "model.safetensors.index.json"))
      throw InputError(fmt::format("{}: a sharded Hugging Face checkpoint (model.safetensors.index.json); "
                                   "only a single model.safetensors is supported", dir.string()));
    throw InputError(fmt::format("{}: no model.safetensors", dir.string()));
  }
  check_hf_llama_config(dir / "config.json", m);
  SafetensorsReader r(st);
  std::set<std::string> want;
  for (const auto& [name, shape] : expected) {
    const SafetensorsEntry& e = r.at(name);
    if (e.shape != shape)
      throw InputError(fmt::format("{}: tensor '{}' has shape {}, the model expects {}", st.string(), name,
                                   shape_str(e.shape), shape_str(shape)));
    want.insert(name);
  }
  for (const auto& e : r.tensors())
    if (!want.count(e.name))
      throw InputError(fmt::format("{}: unexpected tensor '{}': the run's model has no such parameter",
                                   st.string(), e.name));
  return r;
}

}  // namespace shardcast::trainer
