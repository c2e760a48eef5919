// libFuzzer: run_report.json and validation.json as the planner reads them
// (planner/evidence/run_validation.cpp turns nlohmann's exceptions into InputError with the file name).
#include <nlohmann/json.hpp>

#include "shared/run_report.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto j = nlohmann::json::parse(fuzz_text(data, size));
    try {
      j.get<shardcast::RunReport>();
    } catch (const nlohmann::json::exception&) {
    }
    j.get<shardcast::ValidationReport>();
  } catch (const nlohmann::json::exception&) {
  }
  return 0;
}
