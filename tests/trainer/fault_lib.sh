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
