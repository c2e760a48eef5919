// libFuzzer: a DeepSpeed / HF Trainer log as `shardcast import deepspeed` reads it
// (planner/evidence/import/deepspeed_log.cpp). A malformed throughput line must be an InputError
// naming the line; anything else is a crash.
#include "planner/evidence/import/train_log.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto log = shardcast::planner::parse_deepspeed_log(fuzz_text(data, size), "fuzz.log");
    for (size_t i = 1; i < log.steps.size(); ++i)
      if (log.steps[i].step <= log.steps[i - 1].step) __builtin_trap();  // steps ascend, once each
    for (const auto& s : log.steps)
      if (!s.samples_per_s) __builtin_trap();  // every step has its rate
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
