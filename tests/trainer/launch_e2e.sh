#!/usr/bin/env bash
# End-to-end: tokenize the project's own text, launch 2 real ranks (TCPStore rendezvous,
# Gloo on loopback), check metrics.jsonl / run_report.json, compare the losses with the
# plain single-process reference on the same global batch, and check that the launcher
# stops every rank when one fails.
# Usage: launch_e2e.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$2
bin="$build/shardcast-train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" tokenize --out "$work/corpus.bin" "$src"/docs/*.md "$src"/shared/*.h "$src"/trainer/*/*.h

cfg="$src/configs/train/tiny-2rank.toml"
"$bin" launch --nproc-per-node 2 "$cfg" --data "$work/corpus.bin" --steps 12 --metrics-dir "$work/fsdp" \
  > "$work/launch.log" 2>&1 || { cat "$work/launch.log"; fail "launch exited $?"; }
grep -q '^\[rank 0\] ' "$work/launch.log" || fail "rank-prefixed output missing"
[ "$(wc -l < "$work/fsdp/metrics.jsonl")" -eq 12 ] || fail "metrics.jsonl should have 12 lines"
# (plain grep/awk, no jq: the project's Debian package list does not include it)
first=$(head -1 "$work/fsdp/metrics.jsonl")
for key in step loss lr grad_norm tokens_per_s_per_gpu mfu hfu step_time_s mem_peak_bytes; do
  grep -q "\"$key\":" <<< "$first" || fail "metrics.jsonl lacks $key"
done
report="$work/fsdp/run_report.json"
grep -q '"schema": 1' "$report" || fail "run_report.json: schema"
grep -q '"world_size": 2' "$report" || fail "run_report.json: world_size"
grep -q '"sharding_strategy": "full_shard"' "$report" || fail "run_report.json: sharding_strategy"
[ "$(grep -c '"step_time_s"' "$report")" -eq 12 ] || fail "run_report.json: 12 steps"
grep -Eq '"tokens_per_s_per_gpu": [1-9]' "$report" || fail "run_report.json: tokens_per_s_per_gpu"
grep -Eq '"peak_backward": [1-9]' "$report" || fail "run_report.json: measured peak"
# The path the run took (trainer/train/run_path.h): two Gloo ranks on CPU, the host AdamW loop,
# the blocked eager attention, this LibTorch.
python3 - "$report" <<'PY' || fail "run_report.json: path"
import json, sys
p = json.load(open(sys.argv[1]))["path"]
want = {"world_size": "2", "comm_backend": "gloo", "device": "cpu", "optimizer_kernel": "host_one_pass",
        "attention_backend": "blocked_eager", "param_dtype": "fp32"}
bad = {k: p.get(k) for k in want if p.get(k) != want[k]}
assert not bad and p.get("libtorch", "").count(".") == 2, (bad, p)
PY
losses() { grep -o '"loss":[^,}]*' "$1" | cut -d: -f2; }

# The plain reference path on the config's global batch: same losses. Tolerance 1e-5
# relative: fp32 summation order only (see fsdp_parity_test.cpp; measured ~1e-7).
"$bin" run "$cfg" --reference --data "$work/corpus.bin" --steps 12 --metrics-dir "$work/ref" > "$work/ref.log" 2>&1 \
  || { cat "$work/ref.log"; fail "reference run"; }
paste <(losses "$work/fsdp/metrics.jsonl") <(losses "$work/ref/metrics.jsonl") |
  awk '{ d = $1 - $2; if (d < 0) d = -d; if (d / $2 > 1e-5) { print "loss mismatch: " $0; bad = 1 } }
       END { exit bad + 0 }' || fail "FSDP and reference losses differ"
[ "$(losses "$work/ref/metrics.jsonl" | wc -l)" -eq 12 ] || fail "reference metrics"

# Rank 1 fails after step 2; rank 0 would wait in a collective (timeout 120 s) until the
# launcher stops it. Must end well before the timeout with a non-zero code.
start=$(date +%s)
set +e
SHARDCAST_FAULT_RANK=1 SHARDCAST_FAULT_STEP=2 "$bin" launch --nproc-per-node 2 "$cfg" --data "$work/corpus.bin" \
  --steps 50 --metrics-dir "$work/fault" > "$work/fault.log" 2>&1
code=$?
set -e
elapsed=$(( $(date +%s) - start ))
[ "$code" -ne 0 ] || fail "launcher returned 0 after a rank failed"
grep -q 'injected fault' "$work/fault.log" || { cat "$work/fault.log"; fail "fault message missing"; }
grep -q 'stopping the other ranks' "$work/fault.log" || fail "launcher did not stop the other ranks"
[ "$elapsed" -lt 60 ] || fail "took ${elapsed}s to stop after a failure"

# Bad configs are user errors (exit 2) with the file and key named.
"$bin" launch --nproc-per-node 3 "$cfg" --data "$work/corpus.bin" > "$work/bad.log" 2>&1 && fail "world mismatch accepted"
grep -q 'WORLD_SIZE is 3' "$work/bad.log" || { cat "$work/bad.log"; fail "world mismatch message"; }
# Errors go to stderr, ranks' too: a missing token file is exit 2 (README "Exit codes") with the
# failing rank's message on the launcher's stderr and nothing on its stdout. Both ranks read the
# same file; whichever fails first makes the launcher stop the other, which may then be gone
# before it prints, so the message is a rank's, not necessarily rank 0's.
rc=0
"$bin" launch --nproc-per-node 2 "$cfg" --data "$work/none.bin" > "$work/err.out" 2> "$work/err.err" || rc=$?
[ "$rc" = 2 ] || { cat "$work/err.out" "$work/err.err"; fail "missing token file: exit $rc, want 2"; }
grep -q '^\[rank [01]\] .*none.bin' "$work/err.err" || { cat "$work/err.err"; fail "rank error not on stderr"; }
[ ! -s "$work/err.out" ] || { cat "$work/err.out"; fail "errors on stdout"; }
# `shardcast-train slurm`: the same script `shardcast emit` writes for the same run.toml, apart
# from the header comments and the script's own name; a config without [prediction] needs --time.
if [ -x "$build/shardcast" ]; then
  "$build/shardcast" emit "$cfg" --out "$work/emit" > /dev/null || fail "shardcast emit"
  (cd "$work/emit" && "$bin" slurm run.toml --out mine.sbatch > ../slurm.log) || { cat "$work/slurm.log"; fail "slurm"; }
  bash -n "$work/emit/mine.sbatch" || fail "slurm script: bash -n"
  [ -x "$work/emit/mine.sbatch" ] || fail "slurm script not executable"
  strip() { grep -v '^# Generated by\|^# Plan:\|^# Predicted' "$1" | sed "s/^  echo '[a-z.]*sbatch: /  echo 'SCRIPT: /"; }
  diff <(strip "$work/emit/launch.sbatch") <(strip "$work/emit/mine.sbatch") || fail "slurm script differs from emit's"
fi
set +e
"$bin" slurm "$cfg" --out "$work/noprediction.sbatch" > "$work/slurm2.log" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] || { cat "$work/slurm2.log"; fail "slurm without [prediction] or --time: exit $code, want 2"; }
grep -q 'pass --time HH:MM:SS' "$work/slurm2.log" || fail "slurm: message"
[ ! -e "$work/noprediction.sbatch" ] || fail "a refused slurm wrote its script"
"$bin" slurm "$cfg" --time 00:30:00 --out "$work/given.sbatch" > /dev/null || fail "slurm --time"
grep -q '^#SBATCH --time=00:30:00$' "$work/given.sbatch" || fail "slurm --time not used"
# An existing --out is replaced only with --overwrite; the config itself never (it would become a
# script that runs itself); a name with a leading '-' is submitted as ./-name.
cp "$work/given.sbatch" "$work/given.before"
"$bin" slurm "$cfg" --time 01:00:00 --out "$work/given.sbatch" > "$work/slurm3.log" 2>&1 && fail "slurm replaced an existing --out unasked"
cmp -s "$work/given.sbatch" "$work/given.before" || fail "a refused slurm changed the existing script"
"$bin" slurm "$cfg" --time 01:00:00 --out "$work/given.sbatch" --overwrite > /dev/null || fail "slurm --overwrite"
grep -q '^#SBATCH --time=01:00:00$' "$work/given.sbatch" || fail "slurm --overwrite did not replace"
cp "$cfg" "$work/self.toml"
"$bin" slurm "$work/self.toml" --time 01:00:00 --out "$work/self.toml" --overwrite > "$work/slurm4.log" 2>&1 && fail "slurm replaced its own config"
cmp -s "$cfg" "$work/self.toml" || fail "slurm changed its own config"
(cd "$work" && "$bin" slurm "$cfg" --time 01:00:00 --out=-lead.sbatch > slurm5.log) || fail "slurm --out=-lead.sbatch"
grep -q 'sbatch ./-lead.sbatch' "$work/slurm5.log" && grep -q 'Submit with: sbatch ./-lead.sbatch' "$work/-lead.sbatch" ||
  fail "a leading '-' is not submitted as ./-lead.sbatch"
echo "launch_e2e: OK"
