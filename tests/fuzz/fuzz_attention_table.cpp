// libFuzzer: the published flash-attention rates' CSV reader (planner/model/kernel_rates.h), and
// attention_rate on whatever table the reader accepts: for every (GPU, kernel) of the table at
// sequence lengths inside and outside its range, the rate is finite and positive, or the
// documented ConfigError says that nothing fits.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "planner/model/kernel_rates.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto t = shardcast::planner::parse_attention_table(fuzz_text(data, size), "fuzz.csv");
    std::set<std::pair<std::string, std::string>> pairs;
    for (const auto& p : t) pairs.emplace(p.gpu, p.kernel);
    int calls = 0;
    for (const auto& [gpu, kernel] : pairs)
      for (const auto& p : t) {
        if (++calls > 64) break;  // bound the work per input
        for (double seq : {p.seq_len / 3, p.seq_len, p.seq_len * 3})
          for (bool causal : {true, false}) {
            try {
              const double r = shardcast::planner::attention_rate(t, gpu, kernel, p.head_dim + 0.5, causal, seq, 1e15);
              if (!std::isfinite(r) || r <= 0) {
                std::fprintf(stderr, "attention_rate(%s, %s) = %g\n", gpu.c_str(), kernel.c_str(), r);
                std::abort();
              }
            } catch (const shardcast::ConfigError&) {
            }
          }
      }
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
