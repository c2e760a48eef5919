// libFuzzer: torchtitan's v0.2.x TOML job config reader (planner/evidence/import/torchtitan_config.h).
// Beyond "no crash": every job the reader accepts holds only values torchtitan runs with —
// the ranges the reader documents — so `shardcast import --config` never turns a bad value into
// a run.toml key the user did not write.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "planner/evidence/import/torchtitan_config.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "accepted job with %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto j = shardcast::planner::parse_torchtitan_job_toml(fuzz_text(data, size), "fuzz.toml");
    check(!j.local_batch_size || *j.local_batch_size >= 1, "local_batch_size < 1");
    check(!j.seq_len || *j.seq_len >= 1, "seq_len < 1");
    check(!j.steps || *j.steps >= 1, "steps < 1");
    check(!j.global_batch_size || *j.global_batch_size >= 1 || *j.global_batch_size == -1, "global_batch_size");
    check(!j.dp_shard || *j.dp_shard >= 1 || *j.dp_shard == -1, "data_parallel_shard_degree");
    check(!j.dp_replicate || *j.dp_replicate >= 1, "data_parallel_replicate_degree < 1");
    check(!j.warmup_steps || *j.warmup_steps >= 0, "warmup_steps < 0");
    for (const auto* v : {&j.lr, &j.eps, &j.max_norm})
      check(!*v || (std::isfinite(**v) && **v > 0), "lr / eps / max_norm not finite > 0");
    check(!j.weight_decay || (std::isfinite(*j.weight_decay) && *j.weight_decay >= 0), "weight_decay");
    check(j.fp8.empty() || j.fp8 == "tensorwise" || j.fp8 == "rowwise" || j.fp8 == "rowwise_with_gw_hp", "fp8 recipe");
    check(!j.ac_mode || *j.ac_mode == "none" || *j.ac_mode == "full" || *j.ac_mode == "selective", "ac mode");
    check(!j.param_dtype || *j.param_dtype == "bf16" || *j.param_dtype == "fp32" || *j.param_dtype == "fp16", "dtype");
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
