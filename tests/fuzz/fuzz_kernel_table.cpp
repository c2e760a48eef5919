// libFuzzer: the measured kernel table's CSV reader (shared/kernel_table.h).
#include "shared/kernel_table.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    shardcast::parse_kernel_csv(fuzz_text(data, size), "fuzz.csv");
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
