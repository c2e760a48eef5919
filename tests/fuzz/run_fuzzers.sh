#!/usr/bin/env bash
# Builds every libFuzzer target of tests/fuzz with clang (-fsanitize=fuzzer,address,undefined)
# directly from the sources each parser needs, then runs each for a bounded time.
#   usage: run_fuzzers.sh OUT_DIR [SECONDS_PER_TARGET=10]
# FUZZ_SEED (default 1) fixes libFuzzer's mutation sequence, so a crash the ctest run finds is
# found again on every machine that gets as far; FUZZ_SEED=0 draws a random seed (exploration:
# e.g. `FUZZ_SEED=0 tests/fuzz/run_fuzzers.sh /tmp/fuzz 600`). Crashes found go to seeds/ as
# regression-*. FUZZ_TARGETS="train_config runtime_toml" runs only those.
# Exit 77 (ctest: skipped) when clang with libFuzzer is not installed.
set -euo pipefail
OUT=${1:?out dir}; SECS=${2:-10}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CXX=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
[ -n "$CXX" ] || { echo "skip: no clang++"; exit 77; }
mkdir -p "$OUT/obj" "$OUT/corpus"
echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long){return 0;}' > "$OUT/probe.cpp"
"$CXX" -fsanitize=fuzzer "$OUT/probe.cpp" -o "$OUT/probe" 2>/dev/null || { echo "skip: $CXX has no libFuzzer"; exit 77; }
FLAGS="-std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -I$SRC \
  $(pkg-config --cflags tomlplusplus) -DSHARDCAST_SOURCE_CONFIG_DIR=\"$SRC/configs\""
LIBS="$(pkg-config --libs tomlplusplus) -lfmt"
SOURCES="shared/config_io.cpp shared/closest_match.cpp shared/toml_reader.cpp shared/train_config.cpp shared/model_spec.cpp
  shared/hardware_spec.cpp shared/prediction.cpp shared/op_category.cpp shared/run_report.cpp trainer/data/token_file.cpp
  trainer/checkpoint/manifest.cpp trainer/export/safetensors_reader.cpp planner/evidence/published_csv.cpp planner/model/ops.cpp planner/model/fp8_recipe.cpp planner/model/fp8_linear_table.cpp planner/model/kernel_rates.cpp planner/model/kernel_table.cpp shared/kernel_table.cpp planner/model/efficiency.cpp
  planner/model/runtime.cpp planner/model/simulator.cpp shared/runtime_spec.cpp shared/config_schema.cpp
  shared/zero_terms.cpp planner/model/zero_memory.cpp
  planner/evidence/import/train_log.cpp planner/evidence/import/torchtitan_log.cpp planner/evidence/import/fms_fsdp_log.cpp
  planner/evidence/import/deepspeed_log.cpp
  planner/evidence/import/torchtitan_config.cpp planner/evidence/error_band.cpp planner/evidence/decision_error.cpp shared/session.cpp
  planner/model/allocator/measured_allocator_trace.cpp planner/model/allocator/allocation_trace.cpp planner/model/allocator/caching_allocator.cpp planner/model/optimizer_step.cpp
  shared/emitted_text.cpp shared/toml_text.cpp shared/train_config_mesh.cpp planner/model/fp8_formats.cpp planner/model/chunked_loss.cpp"
OBJS=""
for s in $SOURCES; do
  o="$OUT/obj/$(echo "$s" | tr / _).o"
  # Rebuilt when its source or any project header is newer: an object built against an older
  # struct layout links fine and then crashes in the fuzzer.
  if [ ! -f "$o" ] || [ "$SRC/$s" -nt "$o" ] || \
     [ -n "$(find "$SRC/shared" "$SRC/planner" "$SRC/trainer" -name '*.h' -newer "$o" -print -quit)" ]; then
    "$CXX" $FLAGS -c "$SRC/$s" -o "$o"
  fi
  OBJS="$OBJS $o"
done
status=0
ALL_TARGETS="train_config hardware_toml runtime_toml token_file published_csv checkpoint_manifest run_report
  safetensors torchtitan_log fms_fsdp_log deepspeed_log kernel_table fp8_linear_table attention_table torchtitan_job session
  bands_toml decisions_toml model_toml measured_allocator_trace"
for t in ${FUZZ_TARGETS:-$ALL_TARGETS}; do
  exe="$OUT/fuzz_$t"
  "$CXX" $FLAGS -fsanitize=fuzzer "$SRC/tests/fuzz/fuzz_$t.cpp" $OBJS $LIBS -o "$exe"
  mkdir -p "$OUT/corpus/$t"
  seeds="$SRC/tests/fuzz/seeds/$t"
  echo "== fuzz_$t (${SECS}s)"
  if ! "$exe" -max_total_time="$SECS" -seed="${FUZZ_SEED:-1}" -artifact_prefix="$OUT/" -timeout=5 -rss_limit_mb=2048 -print_final_stats=0 "$OUT/corpus/$t" \
       $( [ -d "$seeds" ] && echo "$seeds" ) > "$OUT/fuzz_$t.log" 2>&1; then
    tail -40 "$OUT/fuzz_$t.log"
    echo "FAIL: fuzz_$t (crash input in $OUT; log $OUT/fuzz_$t.log)"
    status=1
  else
    grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$OUT/fuzz_$t.log" | tail -1 || true
  fi
done
exit $status
