#!/usr/bin/env bash
# The step-time cost of checkpoint saves, synchronous against checkpoint.async_mode = "async":
# small-6l, 2 ranks x 1 thread, full_shard, a save every INTERVAL steps; R interleaved rounds
# of (no checkpoints, sync, async), order rotated each round. Per run: the training loop's
# wall time, saves included (rank 0 prints it: "trained steps 1..N in X s wall"). Per round:
# cost of one save = (t_mode − t_none) / saves, as a fraction of the no-checkpoint step time,
# and the time the training thread was blocked in saves (rank 0 prints it).
#   trainer/bench/bench_async_checkpoint.sh [BUILD_DIR] [ROUNDS=5] [STEPS=12] [INTERVAL=2]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRC/build}; ROUNDS=${2:-5}; STEPS=${3:-12}; INTERVAL=${4:-2}
TRAIN="$BUILD/shardcast-train"
[ -x "$TRAIN" ] || { echo "$TRAIN not found (build the shardcast-train target)" >&2; exit 1; }
export SHARDCAST_CONFIG_DIR="$SRC/configs" OMP_NUM_THREADS=1
WORK=$(mktemp -d /tmp/bench_async_ckpt.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$TRAIN" tokenize --out "$WORK/corpus.bin" "$SRC"/docs/*.md "$SRC"/shared/*.cpp > /dev/null
config() {  # config NAME [checkpoint TOML]
  cat > "$WORK/$1.toml" <<TOML
[model]
preset = "small-6l"
[cluster]
hardware = "cpu"
nodes = 1
gpus_per_node = 2
[parallelism]
sharding_strategy = "full_shard"
[training]
micro_batch = 2
seq_len = 256
steps = $STEPS
seed = 1
[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
[data]
path = "$WORK/corpus.bin"
[metrics]
dir = "$WORK/$1.run"
log_freq = 1000
[comm]
backend = "gloo"
timeout_seconds = 600
${2:-}
TOML
}
SAVES=$(( STEPS / INTERVAL ))
modes=(none sync async)
declare -A T B
for r in $(seq 1 "$ROUNDS"); do
  for i in 0 1 2; do
    m=${modes[$(( (i + r) % 3 ))]}
    rm -rf "$WORK/ckpt"
    case $m in
      none) config $m ;;
      sync) config $m "[checkpoint]
dir = \"$WORK/ckpt\"
interval = $INTERVAL
keep = 2" ;;
      async) config $m "[checkpoint]
dir = \"$WORK/ckpt\"
interval = $INTERVAL
keep = 2
async_mode = \"async\"" ;;
    esac
    "$TRAIN" launch --nproc-per-node 2 "$WORK/$m.toml" > "$WORK/$m.log" 2>&1 || { cat "$WORK/$m.log"; exit 1; }
    [ "$m" = none ] || shard=$(stat -c %s "$WORK"/ckpt/step_*/shard_00000.bin | tail -1)
    T[$m,$r]=$(grep -o 'trained steps [0-9.]* in [0-9.]* s' "$WORK/$m.log" | awk '{print $5}')
    blocked=$(grep -o 'training blocked [0-9.]* s' "$WORK/$m.log" | awk '{print $3}' || true)
    B[$m,$r]=${blocked:-0}
    echo "  round $r $m: loop ${T[$m,$r]} s${blocked:+, blocked in saves $blocked s}" >&2
  done
done
python3 - "$ROUNDS" "$STEPS" "$SAVES" "${shard:-0}" <<PY
import statistics, sys
R, steps, saves, shard = map(int, sys.argv[1:])
T = {$(for r in $(seq 1 "$ROUNDS"); do for m in none sync async; do printf '("%s",%s): %s, ' $m $r "${T[$m,$r]}"; done; done)}
B = {$(for r in $(seq 1 "$ROUNDS"); do for m in none sync async; do printf '("%s",%s): %s, ' $m $r "${B[$m,$r]}"; done; done)}
print(f"\nbench_async_checkpoint: small-6l full_shard, 2 ranks x 1 thread, {steps} steps, a save every "
      f"{steps // saves} steps ({saves} saves of 2 shard files of {shard / 2**20:.1f} MiB), {R} interleaved rounds")
print(f"{'mode':<7} {'loop s (median)':>16} {'loop / no-ckpt loop':>28} {'cost per save, in steps':>28} "
      f"{'blocked ms per save':>26}")
for m in ("none", "sync", "async"):
    t = [T[(m, r)] for r in range(1, R + 1)]
    ratio = sorted(T[(m, r)] / T[("none", r)] for r in range(1, R + 1))
    cost = sorted((T[(m, r)] - T[("none", r)]) / saves / (T[("none", r)] / steps) for r in range(1, R + 1))
    print(f"{m:<7} {statistics.median(t):>16.2f} {statistics.median(ratio):>12.3f}x [{ratio[0]:.3f} .. {ratio[-1]:.3f}]"
          f" {statistics.median(cost):>12.2f} [{cost[0]:.2f} .. {cost[-1]:.2f}]"
          + (f" {1000 * statistics.median(blk):>12.0f} [{1000 * blk[0]:.0f} .. {1000 * blk[-1]:.0f}]"
             if (blk := sorted(B[(m, r)] / saves for r in range(1, R + 1))) and m != "none" else ""))
print("loop: rank 0's wall time of the training loop, saves and their CPU interference included. cost per save "
      "= (loop − no-ckpt loop of the same round) / saves / no-ckpt step time. blocked: time the training thread "
      "spent in saves (sync: the whole save; async: the host copy + waiting for the previous save). "
      "Ratios and costs are paired per round; [min .. max] over rounds.")
PY
