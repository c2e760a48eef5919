// libFuzzer: TrainConfig TOML (run.toml) parser.
#include "shared/config_io.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    shardcast::parse_train_config(fuzz_text(data, size), "fuzz.toml");
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
