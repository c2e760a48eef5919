// The safetensors reader and the config.json check (trainer/export/safetensors_reader.h),
// without LibTorch: files written byte by byte here, read back exactly; every malformed file
// an InputError naming the file and what is wrong.
#include "trainer/export/safetensors_reader.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "trainer/export/safetensors.h"

namespace shardcast::trainer {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("shardcast_streader_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return s;
}

// A file: 8-byte length, the header text as given (no validation here), then the data.
void write_raw(const fs::path& p, const std::string& header, const std::string& data, int64_t length = -1) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << le64(length < 0 ? header.size() : uint64_t(length)) << header << data;
}

std::string bytes_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}
std::string bytes_of(const std::vector<uint16_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 2);
}

std::string error_of(const fs::path& p) {
  try {
    SafetensorsReader r(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SafetensorsReader, ReadsF32AndWidensBf16Exactly) {
  const fs::path dir = fresh_dir("ok");
  const std::vector<float> a = {1.5f, -2.25f, 3.0e-39f /* denormal */, 65504.0f, -0.0f, 1e30f};
  // bf16 bit patterns and their fp32 values: 1, -3.140625, +inf, smallest denormal, -0.
  const std::vector<uint16_t> b = {0x3f80, 0xc049, 0x7f80, 0x0001, 0x8000, 0x4120};
  nlohmann::ordered_json h;
  h["__metadata__"] = {{"format", "pt"}};
  h["a"] = {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}};
  h["b"] = {{"dtype", "BF16"}, {"shape", {6}}, {"data_offsets", {24, 36}}};
  h["empty"] = {{"dtype", "F32"}, {"shape", {0, 4}}, {"data_offsets", {36, 36}}};
  std::string text = h.dump();
  while (text.size() % 8) text.push_back(' ');  // padded like the writer does
  write_raw(dir / "m.safetensors", text, bytes_of(a) + bytes_of(b));
  SafetensorsReader r(dir / "m.safetensors");
  ASSERT_EQ(r.tensors().size(), 3u);
  EXPECT_EQ(r.metadata().at("format"), "pt");
  EXPECT_EQ(r.at("a").numel, 6);
  EXPECT_EQ(r.data_begin(), 8 + text.size());
  std::vector<float> got(6);
  r.read_f32("a", {2, 3}, got.data());
  EXPECT_EQ(std::memcmp(got.data(), a.data(), 24), 0);  // tolerance 0: the same bytes
  r.read_f32("b", {6}, got.data());
  for (size_t i = 0; i < b.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &got[i], 4);
    EXPECT_EQ(bits, uint32_t(b[i]) << 16) << i;  // widening is exact: the low 16 bits are zero
  }
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], -3.140625f);
  EXPECT_TRUE(std::isinf(got[2]));
  r.read_f32("empty", {0, 4}, nullptr);
  // A moved-from reader does not close the moved-to descriptor.
  SafetensorsReader moved = std::move(r);
  moved.read_f32("a", {2, 3}, got.data());
  EXPECT_EQ(std::memcmp(got.data(), a.data(), 24), 0);

  try {
    moved.read_f32("nope", {1}, got.data());
    ADD_FAILURE() << "missing tensor read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing tensor 'nope'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.safetensors"), std::string::npos) << e.what();
  }
  try {
    moved.read_f32("a", {3, 2}, got.data());
    ADD_FAILURE() << "shape mismatch read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'a' has shape [2, 3], the model expects [3, 2]"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(SafetensorsReader, LargeBf16TensorIsReadInChunks) {
  // More than the 1 MiB staging chunk: every element must land in its place.
  const fs::path dir = fresh_dir("chunks");
  const int64_t n = 1'300'001;
  std::vector<uint16_t> b(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) b[size_t(i)] = uint16_t(0x3f80 + (i % 113));
  nlohmann::json h;
  h["w"] = {{"dtype", "BF16"}, {"shape", {n}}, {"data_offsets", {0, 2 * n}}};
  write_raw(dir / "m.safetensors", h.dump(), bytes_of(b));
  std::vector<float> got(static_cast<size_t>(n));
  SafetensorsReader(dir / "m.safetensors").read_f32("w", {n}, got.data());
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &got[size_t(i)], 4);
    wrong += bits != (uint32_t(b[size_t(i)]) << 16);
  }
  EXPECT_EQ(wrong, 0);
  fs::remove_all(dir);
}

struct BadFile {
  std::string what;
  std::string header;
  std::string data;
  int64_t length;                    // -1 = the header's size
  std::vector<std::string> expect;   // fragments of the message
};

TEST(SafetensorsReader, MalformedFilesAreInputErrorsNamingFileAndTensor) {
  const fs::path dir = fresh_dir("bad");
  const std::string d16(16, '\x01');
  auto entry = [](const std::string& dtype, const std::string& shape, const std::string& offs) {
    return "{\"w\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape + ", \"data_offsets\": " + offs + "}}";
  };
  const std::vector<BadFile> cases = {
      {"header length beyond the file", entry("F32", "[4]", "[0, 16]"), d16, 1 << 20,
       {"header length 1048576 exceeds the file"}},
      {"header length huge", "", "", int64_t(0x7fffffffffffffff), {"exceeds the file"}},
      {"not json", "{\"w\": ", d16, -1, {"header is not valid JSON"}},
      {"not an object", "[1, 2]", d16, -1, {"header is array, expected an object"}},
      {"wrong dtype", entry("F16", "[8]", "[0, 16]"), d16, -1, {"tensor 'w'", "dtype \"F16\" is not supported", "F32 | BF16"}},
      {"dtype not a string", "{\"w\": {\"dtype\": 7, \"shape\": [4], \"data_offsets\": [0, 16]}}", d16, -1,
       {"tensor 'w'", "dtype is not a string"}},
      {"shape vs offsets", entry("F32", "[3]", "[0, 16]"), d16, -1,
       {"tensor 'w'", "shape [3] of F32 needs 12 bytes but data_offsets [0, 16] span 16"}},
      {"bf16 shape vs offsets", entry("BF16", "[4]", "[0, 16]"), d16, -1, {"tensor 'w'", "needs 8 bytes"}},
      {"offsets beyond data", entry("F32", "[8]", "[0, 32]"), d16, -1,
       {"tensor 'w'", "beyond the data section of 16 bytes"}},
      {"truncated data", entry("F32", "[4]", "[0, 16]"), d16.substr(0, 10), -1, {"tensor 'w'", "beyond the data section"}},
      {"begin after end", entry("F32", "[0]", "[16, 8]"), d16, -1, {"tensor 'w'", "begin after end"}},
      {"negative dim", entry("F32", "[-4]", "[0, 16]"), d16, -1, {"tensor 'w'", "non-negative integer"}},
      {"float dim", entry("F32", "[4.0]", "[0, 16]"), d16, -1, {"tensor 'w'", "non-negative integer"}},
      {"overflowing shape", entry("F32", "[4294967296, 4294967296]", "[0, 16]"), d16, -1,
       {"tensor 'w'", "too many elements"}},
      {"one offset", entry("F32", "[4]", "[16]"), d16, -1, {"tensor 'w'", "data_offsets must be [begin, end]"}},
      {"missing field", "{\"w\": {\"dtype\": \"F32\", \"shape\": [4]}}", d16, -1, {"tensor 'w'", "missing field 'data_offsets'"}},
      {"unknown field", "{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16], \"x\": 1}}", d16, -1,
       {"tensor 'w'", "unknown field 'x'"}},
      {"duplicate name",
       "{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}, "
       "\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}",
       d16, -1, {"tensor 'w' appears twice"}},
      {"entry not an object", "{\"w\": 3}", d16, -1, {"tensor 'w'", "expected an object"}},
      {"bad metadata", "{\"__metadata__\": {\"step\": 3}}", d16, -1, {"__metadata__ 'step' is not a string"}},
  };
  for (const auto& c : cases) {
    const fs::path p = dir / "m.safetensors";
    write_raw(p, c.header, c.data, c.length);
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find(p.string()), std::string::npos) << c.what << ": the file is not named in: " << msg;
    for (const auto& frag : c.expect)
      EXPECT_NE(msg.find(frag), std::string::npos) << c.what << ": expected '" << frag << "' in: " << msg;
  }
  // Shorter than the length field itself, and no file at all.
  for (size_t n : {0u, 5u}) {
    std::ofstream(dir / "short.safetensors", std::ios::binary) << std::string(n, '\0');
    const std::string msg = error_of(dir / "short.safetensors");
    EXPECT_NE(msg.find("short.safetensors: " + std::to_string(n) + " bytes: truncated"), std::string::npos) << msg;
  }
  EXPECT_NE(error_of(dir / "none.safetensors").find("none.safetensors: cannot open"), std::string::npos);
  EXPECT_NE(error_of(dir).find("not a regular file"), std::string::npos);
  fs::remove_all(dir);
}

TEST(SafetensorsReader, FileShrunkAfterOpenIsAShortReadError) {
  const fs::path dir = fresh_dir("shrink");
  nlohmann::json h;
  h["w"] = {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {0, 16}}};
  write_raw(dir / "m.safetensors", h.dump(), std::string(16, '\0'));
  SafetensorsReader r(dir / "m.safetensors");
  fs::resize_file(dir / "m.safetensors", 8 + h.dump().size() + 6);
  std::vector<float> out(4);
  try {
    r.read_f32("w", {4}, out.data());
    ADD_FAILURE() << "read past the end of a shrunk file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("short read of tensor 'w'"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- config.json

std::string config_error(const fs::path& p, const ModelSpec& m) {
  try {
    check_hf_llama_config(p, m);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HfLlamaConfig, MismatchNamesFieldFileValueAndRunValue) {
  const fs::path dir = fresh_dir("config");
  const ModelSpec m = load_model("tiny-2l");
  const fs::path p = dir / "config.json";
  const nlohmann::json good = nlohmann::json::parse(hf_config_json(m, "float32"));
  std::ofstream(p) << good.dump();
  EXPECT_EQ(config_error(p, m), "");

  struct Case {
    const char* key;
    nlohmann::json value;   // null = remove the key
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"num_hidden_layers", 4, "num_hidden_layers = 4 in the file, but the run's model has model.n_layers = 2"},
      {"hidden_size", 128, "hidden_size = 128 in the file, but the run's model has model.d_model = 64"},
      {"num_attention_heads", 8, "num_attention_heads = 8 in the file, but the run's model has model.n_heads = 4"},
      {"num_key_value_heads", 4, "num_key_value_heads = 4 in the file, but the run's model has model.n_kv_heads = 2"},
      {"intermediate_size", 256, "intermediate_size = 256 in the file, but the run's model has model.ffn_dim = 192"},
      {"vocab_size", 32000, "vocab_size = 32000 in the file, but the run's model has model.vocab = 256"},
      {"tie_word_embeddings", true, "tie_word_embeddings = true in the file, but the run's model has model.tied_embeddings = false"},
      {"rope_theta", 500000.0, "rope_theta = 500000 in the file, but the run's model has model.rope_theta = 10000"},
      {"rms_norm_eps", 1e-6, "rms_norm_eps"},
      {"head_dim", 32, "head_dim = 32 in the file"},
      {"hidden_layers_typo", 1, ""},   // unknown keys are HF's business, not an error
      {"hidden_size", "64", "hidden_size = \"64\" is not an integer"},
      {"hidden_size", 64.5, "hidden_size = 64.5 is not an integer"},
      {"hidden_size", nullptr, "missing field 'hidden_size'"},
      {"vocab_size", nullptr, "missing field 'vocab_size'"},
      {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}, "rope_scaling"},
      {"hidden_act", "gelu", "hidden_act = \"gelu\""},
      {"mlp_bias", true, "mlp_bias = true"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = good;
    if (c.value.is_null()) j.erase(c.key);
    else j[c.key] = c.value;
    std::ofstream(p, std::ios::trunc) << j.dump();
    const std::string msg = config_error(p, m);
    if (c.expect.empty()) {
      EXPECT_EQ(msg, "") << c.key;
      continue;
    }
    EXPECT_NE(msg.find(p.string()), std::string::npos) << c.key << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.key << ": expected '" << c.expect << "' in: " << msg;
  }
  // HF defaults: num_key_value_heads absent = num_attention_heads; tie_word_embeddings absent = false.
  ModelSpec mha = m;
  mha.n_kv_heads = mha.n_heads;
  nlohmann::json j = nlohmann::json::parse(hf_config_json(mha, "float32"));
  j.erase("num_key_value_heads");
  j.erase("tie_word_embeddings");
  std::ofstream(p, std::ios::trunc) << j.dump();
  EXPECT_EQ(config_error(p, mha), "");
  std::ofstream(p, std::ios::trunc) << "{\"hidden_size\": ";
  EXPECT_NE(config_error(p, m).find("not valid JSON"), std::string::npos);
  EXPECT_NE(config_error(dir / "none.json", m).find("none.json: cannot open"), std::string::npos);
  fs::remove_all(dir);
}

TEST(HfLlamaConfig, OpenChecksTheTensorSet) {
  const fs::path dir = fresh_dir("open");
  ModelSpec m = load_model("tiny-2l");
  std::ofstream(dir / "config.json") << hf_config_json(m, "float32");
  nlohmann::json h;
  h["a"] = {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}};
  h["b"] = {{"dtype", "BF16"}, {"shape", {4}}, {"data_offsets", {16, 24}}};
  write_raw(dir / "model.safetensors", h.dump(), std::string(24, '\0'));
  auto error_for = [&](const std::vector<ExpectedTensor>& e) -> std::string {
    try {
      open_hf_llama(dir, m, e);
    } catch (const InputError& x) {
      return x.what();
    }
    return "";
  };
  EXPECT_EQ(error_for({{"a", {2, 2}}, {"b", {4}}}), "");
  EXPECT_NE(error_for({{"a", {2, 2}}, {"b", {4}}, {"c", {1}}}).find("model.safetensors: missing tensor 'c'"),
            std::string::npos);
  EXPECT_NE(error_for({{"a", {4}}, {"b", {4}}}).find("tensor 'a' has shape [2, 2], the model expects [4]"),
            std::string::npos);
  EXPECT_NE(error_for({{"a", {2, 2}}}).find("unexpected tensor 'b'"), std::string::npos);
  m.n_layers = 3;
  EXPECT_NE(error_for({{"a", {2, 2}}, {"b", {4}}}).find("num_hidden_layers = 2 in the file"), std::string::npos);
  m.n_layers = 2;
  fs::remove(dir / "model.safetensors");
  EXPECT_NE(error_for({}).find("no model.safetensors"), std::string::npos);
  std::ofstream(dir / "model.safetensors.index.json") << "{}";
  EXPECT_NE(error_for({}).find("sharded Hugging Face checkpoint"), std::string::npos);
  EXPECT_NE(error_for({}).find(dir.string()), std::string::npos);
  fs::remove_all(dir);
  EXPECT_NE(error_for({}).find("not a directory"), std::string::npos);
}

}  // namespace
}  // namespace shardcast::trainer
