# Shared helpers of the fault_*.sh tests (sourced). $1 of each test = the shardcast-train binary.
set -euo pipefail
TRAIN=${1:?usage: $0 path/to/shardcast-train}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export SHARDCAST_CONFIG_DIR="$SRC/configs"
WORK=$(mktemp -d /tmp/shardcast_fault.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# A tiny token file and a 2-rank tiny-2l config: write_config NAME STEPS TIMEOUT [extra TOML]
"$TRAIN" tokenize --out "$WORK/corpus.bin" "$SRC"/docs/*.md >/dev/null
write_config() {
  cat > "$WORK/$1.toml" <<TOML
[model]
preset = "tiny-2l"
[cluster]
hardware = "cpu"
nodes = 1
gpus_per_node = 2
[training]
micro_batch = 2
seq_len = 32
steps = $2
seed = 5
[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
[optimizer]
lr = 1e-3
[data]
path = "$WORK/corpus.bin"
[metrics]
dir = "$WORK/$1.run"
log_freq = 1
[comm]
timeout_seconds = $3
backend = "gloo"
${4:-}
TOML
}
# Wait until the run's metrics.jsonl has at least N lines (or fail after 120 s).
wait_steps() {
  for _ in $(seq 1 1200); do
    [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "no progress in $1"
}
# kill -9 inside the step-4 checkpoint save of $WORK/save.toml (interval 2, dir $WORK/ckpt,
# resume_from "latest"), then the checks every kill-in-save test makes: the interrupted save stays
# a temp directory, the restart resumes from step 2, cleans the temp directory and commits step 6.
# Sets resumed_loss (step 6). The launch output is in $WORK/killed.log and $WORK/resumed.log.
kill_in_save_then_resume() {
  local rc=0
  SHARDCAST_FAULT_KILL_IN_SAVE=4 "$TRAIN" launch --nproc-per-node 2 "$WORK/save.toml" > "$WORK/killed.log" 2>&1 || rc=$?
  [ $rc -ne 0 ] || fail "the run with a kill in save exited 0"
  [ -f "$WORK/ckpt/step_00000002/manifest.json" ] || fail "step 2 checkpoint missing"
  [ -d "$WORK/ckpt/step_00000004.tmp" ] || fail "expected the interrupted save's temp directory"
  [ ! -e "$WORK/ckpt/step_00000004" ] || fail "an interrupted save is visible as complete"
  "$TRAIN" launch --nproc-per-node 2 "$WORK/save.toml" > "$WORK/resumed.log" 2>&1 || { cat "$WORK/resumed.log"; fail "resume failed"; }
  grep -q "resumed from $WORK/ckpt/step_00000002" "$WORK/resumed.log" || { cat "$WORK/resumed.log"; fail "did not resume from step 2"; }
  [ ! -e "$WORK/ckpt/step_00000004.tmp" ] || fail "stale temp directory not cleaned"
  [ -f "$WORK/ckpt/step_00000006/manifest.json" ] || fail "final checkpoint missing"
  resumed_loss=$(tail -1 "$WORK/save.run/metrics.jsonl" | sed 's/.*"loss":\([^,]*\).*/\1/')
}
