// libFuzzer: runtime profile TOML parser (configs/runtimes/*.toml).
#include "shared/runtime_spec.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    shardcast::parse_runtime_toml(fuzz_text(data, size), "fuzz.toml");
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
