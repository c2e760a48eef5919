#!/usr/bin/env bash
# ctest gpu.measured_runs_h200: the planner against the GPU runs this project measured
# (docs/gpu-runs/2026-11-27-h200/, one H200, shardcast-train, world size 1), through
# `shardcast validate --json RUN_DIR...` — the prediction of today's planner against the stored
# measurement, one regression bound per quantity:
#   max allocated (mem_peak_bytes): within 2 % on both runs (measured: −0.2 %, −0.8 %);
#   step time, 25-layer llama3-8b shape: within 10 % (issue 19's target; measured +0.9 %);
#   step time, llama3.2-1b: within 15 % — issue 19's 10 % is NOT met (+14.0 %: the plan's GEMMs
#     and host time are slow for this trainer, its optimizer fast; docs/gpu-runs/.../README.md);
#     the bound only keeps it from getting worse.
#   max reserved (mem_reserved_peak_bytes): at most 9 % under and 5 % over — the target, never
#     more than 5 % under, is NOT met (−5.5 %, −7.8 %: the caching allocator reserves more above
#     the allocated peak than the plan's replay; README.md); the bound only keeps it from worse.
# Usage: gpu_runs_test.sh SOURCE_DIR SHARDCAST   (run from SOURCE_DIR: the 8B run.toml names
# its model file relative to it)
set -euo pipefail
src="$(cd "${1:?usage: gpu_runs_test.sh SOURCE_DIR SHARDCAST}" && pwd)"
shardcast="${2:?usage: gpu_runs_test.sh SOURCE_DIR SHARDCAST}"
cd "$src"
runs=docs/gpu-runs/2026-11-27-h200
SHARDCAST_CONFIG_DIR="$src/configs" "$shardcast" validate --json "$runs/train-llama3.2-1b/run" \
  "$runs/train-llama3-8b-shape-25l/run" | python3 -c '
import json, sys
bounds = {"llama3.2-1b": (15.0, 2.0), "llama3-8b-shape-25l": (10.0, 2.0)}  # step time %, allocated %
runs, failed = json.load(sys.stdin)["runs"], 0
if sorted(r["model"] for r in runs) != sorted(bounds):
    sys.exit("expected runs %s, got %s" % (sorted(bounds), [r["model"] for r in runs]))
for r in runs:
    t, a = bounds[r["model"]]
    st, mem = r["step_time_s"]["error_pct"], r["mem_peak_bytes"]["error_pct"]
    res = r["mem_reserved_peak_bytes"]["error_pct"]
    ok = abs(st) <= t and abs(mem) <= a and -9.0 <= res <= 5.0
    failed += not ok
    print("%s: step time %+.1f%% (bound %g%%), max allocated %+.1f%% (bound %g%%), max reserved %+.1f%% "
          "(bound -9%% .. +5%%): %s" % (r["model"], st, t, mem, a, res, "ok" if ok else "FAILED"))
sys.exit(1 if failed else 0)'
