#!/usr/bin/env bash
# `shardcast replay-allocator` on a trace shardcast-train recorded on one H200
# (docs/gpu-runs/2026-11-27-h200-b/allocator-trace): the model's reserved peak equals the
# measured one with fixed segments (exactly: the replay follows the same block sizes and pools,
# as torch_allocator_traces_test asserts through the library), and bad input exits non-zero.
# Usage: cli_replay_allocator_test.sh SHARDCAST_BINARY
set -u
sc="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
xz -dc "$root/docs/gpu-runs/2026-11-27-h200-b/allocator-trace/alloc-llama3.2-1b-mb2-acfull-es0.csv.xz" > "$tmp/trace.csv" \
  || { echo "FAIL: xz"; exit 1; }
"$sc" replay-allocator "$tmp/trace.csv" --json > "$tmp/out.json" 2> "$tmp/err" || { echo "FAIL: exit $?"; cat "$tmp/err"; exit 1; }
python3 - "$tmp/out.json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
m, r = j["measured"]["reserved_curve_peak_bytes"], j["model"]["reserved_bytes"]
assert j["expandable_segments"] is False, j
assert m == j["measured"]["max_reserved_bytes"], j
assert r == m, f"model {r} != measured {m}"
print(f"ok   replay-allocator --json: reserved measured {m}, model {r}")
PY
"$sc" replay-allocator "$tmp/trace.csv" > "$tmp/out" 2>&1 && grep -q "reserved   measured" "$tmp/out" \
  && echo "ok   replay-allocator: human table" || { echo "FAIL: human table"; cat "$tmp/out"; fail=1; }
printf 'not a trace\n' > "$tmp/bad.csv"
"$sc" replay-allocator "$tmp/bad.csv" > "$tmp/out" 2>&1; rc=$?
[ "$rc" = 1 ] && grep -q "bad.csv" "$tmp/out" && echo "ok   malformed trace -> exit 1 naming the file" \
  || { echo "FAIL: malformed trace: exit $rc"; cat "$tmp/out"; fail=1; }
"$sc" replay-allocator "$tmp/missing.csv" > "$tmp/out" 2>&1; rc=$?
[ "$rc" = 2 ] && echo "ok   missing trace -> exit 2" || { echo "FAIL: missing trace: exit $rc"; fail=1; }
exit $fail
