// libFuzzer: safetensors reader (header length, JSON header, every tensor read by pread). The
// reader opens a file, so the input is written to a private temp file first; every tensor
// the header validates is then read as training's initial load would (numel is bounded by
// the file size, so the buffers are too).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_common.h"
#include "trainer/export/safetensors_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/shardcast_fuzz_safetensors_" + std::to_string(::getpid()) + ".safetensors";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    shardcast::trainer::SafetensorsReader r(path);
    std::vector<float> out;
    for (const auto& t : r.tensors()) {
      out.resize(size_t(t.numel));
      r.read_f32(t.name, t.shape, out.data());
    }
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
