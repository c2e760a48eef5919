// libFuzzer: llm.c token file header + contents (TokenFile maps a file, so the input is
// written to a private temp file first), then a scan and a sequence read like training does.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_common.h"
#include "trainer/data/token_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/shardcast_fuzz_tokens_" + std::to_string(::getpid()) + ".bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    shardcast::trainer::TokenFile t(path);
    t.max_token();
    if (t.size() > 9) {
      std::vector<int64_t> out(2 * 9);
      shardcast::trainer::read_sequences(t, 1, 1, 0, 2, 8, out.data());
    }
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
