#!/usr/bin/env bash
# CPU validation sweep: trains tiny-2l and small-6l under every sharding strategy with 2 and 4
# local ranks and leaves one run directory per case (run.toml with the planner's [prediction]
# from `shardcast emit`, run_report.json, validation.json). `shardcast validate OUT/*/` prints predicted against measured;
# `shardcast calibrate --runs OUT/*/` fits the cpu profile to them.
#
# Repeats: this machine's vCPUs alternate between fast and slow phases lasting seconds (the
# same case measures 62 ms in one repeat and 97 ms in the next with nothing else running; see
# OUT/repeats.tsv and docs/validation-cpu.md). So every case runs REPEATS times, interleaved (all
# cases once, then all again, ...), each into OUT/.repeats/rK/NAME, and OUT/NAME links to the
# repeat with the lowest median step time — the same "fastest of interleaved repeats" that
# bench_trainer --repeats and the micro-benchmarks (best time) use, so prediction (from the
# micro-benchmarks) and measurement see the machine in the same state. Every repeat's median
# is listed in OUT/repeats.tsv so the spread is visible.
# SHARDCAST_SWEEP_TP="2 4" adds, per model and world, a full_shard run on a mesh of tp ranks of
# tensor parallel x world / tp of FSDP (parallelism.tp, dp_shard the rest), where tp divides the
# world and the model's kv heads; SHARDCAST_SWEEP_STRATEGIES picks the 1-D cases ("" = none).
#   usage: [SHARDCAST_SWEEP_MODELS="tiny-2l small-6l"] [SHARDCAST_SWEEP_WORLDS="2 4"]
#          [SHARDCAST_SWEEP_STRATEGIES="full_shard shard_grad_op hybrid_shard no_shard"]
#          [SHARDCAST_SWEEP_TP=""] [SHARDCAST_SWEEP_HARDWARE=cpu] [SHARDCAST_SWEEP_REPEATS=3]
#          cpu_sweep.sh BUILD_DIR OUT_DIR [STEPS]
set -euo pipefail
BUILD=${1:?build dir}; OUT=${2:?out dir}; STEPS=${3:-20}
REPEATS=${SHARDCAST_SWEEP_REPEATS:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
CORPUS="$OUT/corpus.bin"
[ -f "$CORPUS" ] || "$BUILD/shardcast-train" tokenize --out "$CORPUS" "$SRC"/docs/*.md "$SRC"/shared/*.h "$SRC"/trainer/*/*.h >/dev/null
TSV="$OUT/repeats.tsv"
printf 'run\trepeat\tmedian_step_ms\n' > "$TSV"

# write_config NAME MODEL WORLD STRATEGY DIR [TP]: the run.toml of one case.
write_config() {
  local name=$1 model=$2 world=$3 strategy=$4 dir=$5 tp=${6:-1} mb seq hsdp=0
  if [ "$model" = tiny-2l ]; then mb=8; seq=128; else mb=2; seq=256; fi
  if [ "$strategy" = hybrid_shard ]; then hsdp=$((world / 2)); fi
  cat > "$dir/$name.toml" <<TOML
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
tp = $tp
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
dir = "$dir/$name"
log_freq = 1000
[comm]
timeout_seconds = 120
backend = "gloo"
TOML
}

names=()
for rep in $(seq 1 "$REPEATS"); do
  rdir="$OUT/.repeats/r$rep"
  mkdir -p "$rdir"
  for model in ${SHARDCAST_SWEEP_MODELS:-tiny-2l small-6l}; do
    for world in ${SHARDCAST_SWEEP_WORLDS:-2 4}; do
      cases=()
      for strategy in ${SHARDCAST_SWEEP_STRATEGIES-full_shard shard_grad_op hybrid_shard no_shard}; do
        cases+=("$strategy:1")
      done
      kv=$(sed -n 's/^n_kv_heads = \([0-9]*\)/\1/p' "$SRC/configs/models/$model.toml")
      for tp in ${SHARDCAST_SWEEP_TP:-}; do
        if [ $((world % tp)) = 0 ] && [ $((kv % tp)) = 0 ]; then cases+=("full_shard:$tp"); fi
      done
      for c in "${cases[@]}"; do
        strategy=${c%%:*}; tp=${c##*:}
        name="$model-$world-$strategy"
        [ "$tp" != 1 ] && name="$model-$world-tp$tp"
        [ "$rep" = 1 ] && names+=("$name")
        write_config "$name" "$model" "$world" "$strategy" "$rdir" "$tp"
        # emit adds the planner's [prediction], so each run's validation.json compares with it.
        "$BUILD/shardcast" emit "$rdir/$name.toml" --out "$rdir/$name.emit" > /dev/null
        line=$("$BUILD/shardcast-train" launch --nproc-per-node "$world" "$rdir/$name.emit/run.toml" --data "$CORPUS" |
               grep -E "done:|error" || true)
        ms=$(sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p' <<<"$line")
        if [ -z "$ms" ]; then echo "error: $name repeat $rep did not finish: $line" >&2; exit 1; fi
        printf '%s\t%s\t%s\n' "$name" "$rep" "$ms" >> "$TSV"
        echo "== $name r$rep: $ms ms"
      done
    done
  done
done

# OUT/NAME -> the fastest repeat.
for name in "${names[@]}"; do
  best=$(awk -F'\t' -v n="$name" '$1 == n { print $3 "\t" $2 }' "$TSV" | sort -g | head -1 | cut -f2)
  rm -rf "${OUT:?}/$name"
  ln -s ".repeats/r$best/$name" "$OUT/$name"
done
echo "fastest of $REPEATS repeats linked as $OUT/<run>; every repeat in $TSV"
