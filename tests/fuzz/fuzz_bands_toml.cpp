// libFuzzer: the error-band table reader (planner/evidence/error_band.h, configs/bands.toml). Beyond
// "no crash": a table the reader accepts writes back to text that reads back to the same table
// (write(parse(write(t))) == write(t)), and choose_band() states a finite band >= 0 for every
// hardware and regime the table names.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "planner/evidence/error_band.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardcast::planner;
  try {
    const BandTable t = parse_bands_toml(fuzz_text(data, size), "fuzz.toml");
    const std::string once = write_bands_toml(t);
    std::string twice;
    try {
      twice = write_bands_toml(parse_bands_toml(once, "written.toml"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "a written band table does not read back: %s\n%s\n", e.what(), once.c_str());
      std::abort();
    }
    if (once != twice) {
      std::fprintf(stderr, "band table changed on a second write:\n%s\n----\n%s\n", once.c_str(), twice.c_str());
      std::abort();
    }
    int calls = 0;
    for (const ErrorBand& b : t.bands)
      for (const std::string& hw : b.hardware) {
        if (++calls > 64) break;  // bound the work per input
        const BandRegime r{hw, b.value, b.value, b.value};
        const BandChoice c = choose_band(t, r, 0.2, 0);
        if (!std::isfinite(c.rel_1sigma) || c.rel_1sigma < 0) {
          std::fprintf(stderr, "choose_band(%s) = %g\n", hw.c_str(), c.rel_1sigma);
          std::abort();
        }
      }
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
