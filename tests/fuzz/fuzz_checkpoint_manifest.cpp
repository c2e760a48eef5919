// libFuzzer: checkpoint manifest.json parser.
#include "tests/fuzz/fuzz_common.h"
#include "trainer/checkpoint/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto m = shardcast::trainer::ckpt::parse_manifest(fuzz_text(data, size), "manifest.json");
    m.shard_file_bytes();
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
