// libFuzzer: session files (shared/session.h). Beyond "no crash": a session the reader accepts
// writes back to text that reads back to the same session — write(parse(write(parse(x)))) equals
// write(parse(x)) byte for byte — so saving in the GUI never changes what was opened.
#include <cstdio>
#include <cstdlib>

#include "shared/session.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardcast::session;
  try {
    const Session s = parse_session(fuzz_text(data, size), "fuzz.json");
    const std::string once = write_session(s);
    std::string twice;
    try {
      twice = write_session(parse_session(once, "written.json"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "a written session does not read back: %s\n%s\n", e.what(), once.c_str());
      std::abort();
    }
    if (once != twice) {
      std::fprintf(stderr, "session changed on a second save:\n%s\n----\n%s\n", once.c_str(), twice.c_str());
      std::abort();
    }
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
