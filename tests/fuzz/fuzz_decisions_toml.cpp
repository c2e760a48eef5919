// libFuzzer: the decision error table reader (planner/evidence/decision_error.h, configs/decisions.toml).
// Beyond "no crash": a table the reader accepts writes back to text that reads back to the same
// table (write(parse(write(t))) == write(t)), and band_for() gives every listed setting its own
// band.
#include <cstdio>
#include <cstdlib>

#include "planner/evidence/decision_error.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardcast::planner;
  try {
    const DecisionTable t = parse_decisions_toml(fuzz_text(data, size), "fuzz.toml");
    const std::string once = write_decisions_toml(t);
    std::string twice;
    try {
      twice = write_decisions_toml(parse_decisions_toml(once, "written.toml"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "a written decision table does not read back: %s\n%s\n", e.what(), once.c_str());
      std::abort();
    }
    if (once != twice) {
      std::fprintf(stderr, "decision table changed on a second write:\n%s\n----\n%s\n", once.c_str(), twice.c_str());
      std::abort();
    }
    for (const DecisionBand& b : t.bands) {
      const DecisionBand* got = t.band_for(b.setting);
      if (!got || got->setting != b.setting) {
        std::fprintf(stderr, "band_for(%s) did not return its own band\n", b.setting.c_str());
        std::abort();
      }
    }
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
