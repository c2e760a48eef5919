#!/usr/bin/env bash
# CPU validation sweep: trains tiny-2l and small-6l under every sharding strategy with 2 and 4
# local ranks (a few steps each) and leaves one run directory per case (run.toml,
# run_report.json, validation.json). `shardcast calibrate --fit OUT/*` then compares the
# planner's prediction with each run and fits the cpu profile; `shardcast validate OUT/*`
# prints the table. Timing is only meaningful on an otherwise idle machine.
#   usage: [SHARDCAST_SWEEP_MODELS="tiny-2l small-6l"] [SHARDCAST_SWEEP_WORLDS="2 4"] [SHARDCAST_SWEEP_HARDWARE=cpu] cpu_sweep.sh BUILD_DIR OUT_DIR [STEPS]
set -euo pipefail
BUILD=${1:?build dir}; OUT=${2:?out dir}; STEPS=${3:-10}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
CORPUS="$OUT/corpus.bin"
[ -f "$CORPUS" ] || "$BUILD/shardcast-train" tokenize --out "$CORPUS" "$SRC"/docs/*.md "$SRC"/shared/*.h "$SRC"/trainer/*/*.h >/dev/null
for model in ${SHARDCAST_SWEEP_MODELS:-tiny-2l small-6l}; do
  if [ $model = tiny-2l ]; then mb=8; seq=128; else mb=2; seq=256; fi
  for world in ${SHARDCAST_SWEEP_WORLDS:-2 4}; do
    for strategy in full_shard shard_grad_op hybrid_shard no_shard; do
      hsdp=0
      if [ $strategy = hybrid_shard ]; then hsdp=$((world / 2)); fi
      name="$model-$world-$strategy"
      dir="$OUT/$name"
      cat > "$OUT/$name.toml" <<TOML
[model]
preset = "$model"
[cluster]
hardware = "${SHARDCAST_SWEEP_HARDWARE:-cpu}"
nodes = 1
gpus_per_node = $world
[parallelism]
sharding_strategy = "$strategy"
hsdp_shard_size = $hsdp
max_inflight_all_gathers = 2
[training]
micro_batch = $mb
seq_len = $seq
grad_accum = 1
steps = $STEPS
seed = 1234
max_grad_norm = 1.0
[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
[optimizer]
lr = 1e-3
[metrics]
dir = "$dir"
log_freq = 1000
[comm]
timeout_seconds = 120
backend = "gloo"
TOML
      echo "== $name"
      "$BUILD/shardcast-train" launch --nproc-per-node $world "$OUT/$name.toml" --data "$CORPUS" | grep -E "done:|error" || true
    done
  done
done
