// libFuzzer: published-runs CSV parser.
#include "planner/evidence/published_csv.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    shardcast::planner::parse_published_csv(fuzz_text(data, size), "fuzz.csv");
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
