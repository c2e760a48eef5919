#!/usr/bin/env bash
# Hostile inputs of issue 52, one row each on the real binaries: planted links on output
# names, directories and devices given as files, oversized files, preset names that are paths,
# a --trainer path that carries shell, a second trainer on a run directory, and rank 0's store
# reachable only on MASTER_ADDR. Each row: the exit code, a line of the message, and for the
# attacks, that nothing ran and nothing outside was written.
#   usage: hostile_inputs_test.sh SHARDCAST [SHARDCAST_TRAIN]   (rows of a missing binary skip)
set -u
SC=$1
TRAIN=${2:-}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export SHARDCAST_CONFIG_DIR="$SRC/configs"
T=$(mktemp -d /tmp/shardcast_hostile.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; [ -f "$T/out" ] && sed 's/^/    /' "$T/out" | head -20; fail=1; }
# row NAME EXIT NEEDLE COMMAND...: COMMAND exits EXIT and prints NEEDLE (fixed string).
row() {
  local name=$1 want=$2 needle=$3; shift 3
  "$@" > "$T/out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then bad "$name: exit $rc, expected $want"
  elif ! grep -qF -- "$needle" "$T/out"; then bad "$name: no '$needle' in the message"
  else ok "$name"; fi
}
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

echo "victim: unchanged" > "$T/victim"
PLAN=(plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --ac full)

# --- write_file_atomic: links planted at the old temporary names (<out>.tmp.<pid>, the next
# PIDs) and at the output itself never redirect the write.
# One process plants links for the next 1000 PIDs (a shell loop of `ln` would use them up).
python3 - "$T" <<'PY'
import os, sys
t = sys.argv[1]
last = int(open("/proc/sys/kernel/ns_last_pid").read())
for pid in range(last + 1, last + 1001):
    os.symlink(os.path.join(t, "victim"), os.path.join(t, "trace.json.tmp.%d" % pid))
PY
row "plan --timeline with links planted at trace.json.tmp.<pid>" 0 "" "$SC" "${PLAN[@]}" --timeline "$T/trace.json"
check "the victim behind the planted links is untouched" "[ \"\$(cat $T/victim)\" = 'victim: unchanged' ]"
check "trace.json is a regular file with the trace" "[ -f $T/trace.json ] && [ ! -L $T/trace.json ] && grep -q traceEvents $T/trace.json"
ln -s "$T/victim" "$T/linked.json"
row "plan --timeline onto a link" 0 "" "$SC" "${PLAN[@]}" --timeline "$T/linked.json"
check "a link at the output is replaced, not followed" "[ ! -L $T/linked.json ] && [ \"\$(cat $T/victim)\" = 'victim: unchanged' ]"
check "no temporary file is left behind" "[ -z \"\$(ls -A $T | grep '^\\.')\" ]"
find "$T" -maxdepth 1 -name 'trace.json.tmp.*' -delete
mkdir "$T/adir"
row "--timeline naming a directory" 2 "$T/adir: is a directory" "$SC" "${PLAN[@]}" --timeline "$T/adir"

# --- preset names are names; a path must be a .toml file and is said to be a path.
sed 's|^preset = .*|preset = "../../../../etc/passwd"|' "$SRC/configs/examples/llama3-8b-8xH100.toml" > "$T/model.toml"
row "run.toml model.preset = ../../../../etc/passwd" 2 "model.preset: not a model preset: '../../../../etc/passwd' is read as a path" "$SC" check "$T/model.toml"
sed 's|^hardware = .*|hardware = "../../../../etc/passwd"|' "$SRC/configs/examples/llama3-8b-8xH100.toml" > "$T/hw.toml"
row "run.toml cluster.hardware = ../../../../etc/passwd" 2 "cluster.hardware: '../../../../etc/passwd' is read as a path" "$SC" check "$T/hw.toml"
{ echo 'runtime = "../../../../etc/passwd"'; cat "$SRC/configs/examples/llama3-8b-8xH100.toml"; } | grep -v '^runtime = "[a-z]' > "$T/rt.toml"
row "run.toml runtime = ../../../../etc/passwd" 2 "runtime: '../../../../etc/passwd' is read as a path" "$SC" check "$T/rt.toml"
sed 's|^hardware = .*|hardware = "..H100"|' "$SRC/configs/examples/llama3-8b-8xH100.toml" > "$T/dots.toml"
row "run.toml cluster.hardware = ..H100 (a name with ..)" 2 "cluster.hardware: '..H100' is not a preset name" "$SC" check "$T/dots.toml"
row "--hardware /dev/zero" 2 "is read as a path (it contains '/'), and a path must name a .toml file" "$SC" plan --model llama3-8b --hardware /dev/zero --gpus 8

# --- inputs are bounded: devices, directories and oversized files refused before reading.
ln -s /dev/zero "$T/zero.toml"
row "--hardware a .toml link to /dev/zero" 2 "zero.toml: is not a regular file" timeout 20 "$SC" plan --model llama3-8b --hardware "$T/zero.toml" --gpus 8
row "--model a .toml link to /dev/zero" 2 "zero.toml: is not a regular file" timeout 20 "$SC" show-model "$T/zero.toml"
mkdir "$T/model_dir.toml"
row "--model a directory" 2 "model_dir.toml: is a directory, not a model file" "$SC" show-model "$T/model_dir.toml"
truncate -s $((16 * 1024 * 1024 + 1)) "$T/big.toml"
row "--hardware a .toml over 16 MiB" 2 "big.toml: is 16777217 bytes, over the limit of 16777216 bytes" "$SC" plan --model llama3-8b --hardware "$T/big.toml" --gpus 8
row "import log /dev/zero" 2 "/dev/zero: is not a regular file" timeout 20 "$SC" import torchtitan /dev/zero \
  --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op --out "$T/imp"
truncate -s $((256 * 1024 * 1024 + 1)) "$T/big.log"
row "import log over 256 MiB" 2 "big.log: is 268435457 bytes, over the limit of 268435456 bytes" "$SC" import torchtitan "$T/big.log" \
  --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op --out "$T/imp"

# --- calibrate --trainer: an argument vector, no shell.
row "calibrate --trainer with a quote and a command" 2 "cannot run it" "$SC" calibrate --hardware-out "$T/hw_out.toml" \
  --trainer "$T/none'; touch $T/pwned; echo '"
check "the command in the --trainer path did not run" "[ ! -e $T/pwned ]"
mkdir "$T/it's here"
printf '#!/bin/sh\necho "$@" > "%s/ran_with"\necho not-json\n' "$T" > "$T/it's here/fake-train"
chmod +x "$T/it's here/fake-train"
row "calibrate --trainer a path with a quote runs that file" 1 "" "$SC" calibrate --hardware-out "$T/hw_out.toml" --trainer "$T/it's here/fake-train"
check "it got the arguments microbench --json" "[ \"\$(cat $T/ran_with 2>/dev/null)\" = 'microbench --json' ]"

if [ -n "$TRAIN" ] && [ -x "$TRAIN" ]; then
  row "tokenize /dev/zero" 2 "/dev/zero: is not a regular file" timeout 20 "$TRAIN" tokenize --out "$T/c.bin" /dev/zero
  "$TRAIN" tokenize --out "$T/corpus.bin" "$SRC"/docs/*.md > /dev/null
  write_cfg() {  # write_cfg FILE WORLD STEPS: a tiny fp32 run on the CPU into $T/run
    cat > "$1" <<TOML
[model]
preset = "tiny-2l"
[cluster]
hardware = "cpu"
nodes = 1
gpus_per_node = $2
[training]
micro_batch = 1
seq_len = 32
steps = $3
[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
[data]
path = "$T/corpus.bin"
[metrics]
dir = "$T/run"
log_freq = 1
[comm]
timeout_seconds = 60
backend = "gloo"
TOML
  }
  # --- two trainers on one run directory: the second refuses, naming the first's PID.
  write_cfg "$T/one.toml" 1 100000
  "$TRAIN" run "$T/one.toml" > "$T/first.log" 2>&1 &
  first=$!; pids+=("$first")
  for _ in $(seq 1 600); do [ -s "$T/run/metrics.jsonl" ] && break; sleep 0.1; done
  row "a second trainer on the same run directory" 2 "is in use by another shardcast-train (PID $first" "$TRAIN" run "$T/one.toml"
  check "the first trainer is still running" "kill -0 $first 2>/dev/null"
  kill "$first" 2>/dev/null; wait "$first" 2>/dev/null
  # --- rank 0's store with MASTER_ADDR=127.0.0.1 listens on loopback only.
  ext=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^127\.' | grep -v '^::1$' | grep -v '^$' | head -1)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  write_cfg "$T/two.toml" 2 1
  sed -i "s|dir = \"$T/run\"|dir = \"$T/run2\"|" "$T/two.toml"
  # Rank 0 alone: its store serves and waits for rank 1 (up to comm.timeout_seconds).
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=0 "$TRAIN" run "$T/two.toml" > "$T/rank0.log" 2>&1 &
  r0=$!; pids+=("$r0")
  probe() { python3 - "$1" "$2" <<'PY'
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close(); print("accepted")
except ConnectionRefusedError: print("refused")
except OSError as e: print("error", e)
PY
  }
  up=no
  for _ in $(seq 1 300); do [ "$(probe 127.0.0.1 "$port")" = accepted ] && { up=yes; break; }; sleep 0.1; done
  check "rank 0's store accepts on 127.0.0.1:$port" "[ $up = yes ]"
  if [ -z "$ext" ]; then
    echo "skip: this machine has no non-loopback address to probe the store on"
  else
    got=$(probe "$ext" "$port")
    check "rank 0's store refuses $ext:$port (got: $got)" "[ '$got' = refused ]"
  fi
  kill "$r0" 2>/dev/null; wait "$r0" 2>/dev/null
else
  echo "skip: the shardcast-train rows (no trainer binary given)"
fi

exit $fail
