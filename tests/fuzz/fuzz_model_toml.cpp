// libFuzzer: the model preset reader (parse_model_toml, configs/models/*.toml and --model
// FILE.toml). Beyond "no crash": a model the reader accepts has a positive parameter count and
// finite positive FLOPs per token at its own max_seq_len (no integer overflow on the way).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "shared/config_io.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const shardcast::ModelSpec m = shardcast::parse_model_toml(fuzz_text(data, size), "fuzz.toml");
    const double f = m.flops_per_token(m.max_seq_len);
    if (m.total_params() <= 0 || m.non_embedding_params() < 0 || !std::isfinite(f) || f <= 0) {
      std::fprintf(stderr, "accepted model with %lld parameters, %g FLOP per token\n", (long long)m.total_params(), f);
      std::abort();
    }
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
