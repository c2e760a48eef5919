#!/usr/bin/env bash
# Golden outputs of the planner: every answer a user reads, recorded byte for byte.
#
# What it is: the guard of every change that should move no output (a refactor, a move of
# files). It runs `shardcast` over a fixed set of questions — validate on the published sets,
# plan --json on a matrix of configurations (every runtime, strategy, checkpointing mode, fp8
# recipe, compile, 1 to 16384 GPUs, several GPU types), plan's human page, search, scale, the
# budget question and every file emit writes for three plans — and writes each answer, with
# its exit code and stderr, under OUT_DIR. tests/golden/expected/ holds the recorded answers;
# the ctest `golden_outputs` runs this into a temporary folder and compares byte for byte.
#
# A change that moves an output regenerates expected/ in the same commit and says why:
#   bash tests/golden/golden.sh build/shardcast tests/golden/expected
#
# Usage: golden.sh SHARDCAST_BINARY OUT_DIR
set -u
sc="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
mkdir -p "$2"; out="$(cd "$2" && pwd)"
root="$(cd "$(dirname "$0")/../.." && pwd)"
export SHARDCAST_CONFIG_DIR="$root/configs"
unset SHARDCAST_RUNTIME  # the answers are for the documented default runtime
mkdir -p "$out"
rm -f "$out"/*.txt
rm -rf "$out/emit"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME ARGS...: the answer of one command, its stderr and exit code, into OUT_DIR/NAME.txt.
run() {
  local name="$1"; shift
  local f="$out/$name.txt"
  ( cd "$work" && "$sc" "$@" ) > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  { echo "# shardcast $*"; echo "# exit $rc"; cat "$work/stdout"; echo "# stderr"; cat "$work/stderr"; } >> "$f"
}

pub="$root/configs/published"
run validate_calibration validate --published "$pub/calibration.csv" --json
run validate_holdout validate --published "$pub/holdout.csv" --json
run validate_outside validate --published "$pub/outside.csv" --annotations "$pub/annotations.csv" --json
run validate_outside_pairs validate --published "$pub/outside.csv" --annotations "$pub/annotations.csv" --pairs
run validate_calibration_baseline validate --published "$pub/calibration.csv" --baseline

# plan --json over a matrix: each index picks every dimension by its own stride, so the 720
# rows cover every value of each dimension and many of their pairs.
runtimes=(shardcast-train torchtitan fms-fsdp llm-foundry accelerate atorch lightning-thunder olmo-core
          kempnerforge tinyllama litgpt lit-llama torchtitan-2024-04 torchtitan-2024-05 torchtitan-2024-06
          torchtitan-2024-10 torchtitan-2025-02 torchtitan-2025-07 llm-foundry-2023-05 olmo-core-2024-09
          litgpt-2024-03)
strategies=(full_shard shard_grad_op hybrid_shard no_shard)
acs=(full selective none selective_op)
fp8s=(none rowwise tensorwise rowwise_with_gw_hp)
gpus=(1 8 16 64 128 512 1024 4096 16384 2)
hws=(H100-80GB-SXM A100-80GB-SXM H200-141GB-SXM B200 GB200 MI300X A100-40GB-SXM H100-96GB-HBM2e cpu)
models=(llama3-8b llama2-7b llama3-70b llama3.2-1b tinyllama-1.1b llama2-13b llama3.1-405b mpt-7b tiny-2l)
seqs=(8192 4096 2048 1024)
# Seq lens within each model's max_seq_len; fp8 and compile only where the runtime runs them
# (the refusals are answers too: a few rows of each stay in the matrix below).
maxseq() { case "$1" in llama2-*|mpt-7b|tinyllama-1.1b) echo 4096;; tiny-2l) echo 256;; *) echo 8192;; esac; }
fp8_runtime() { case "$1" in torchtitan|torchtitan-2025-*|llm-foundry|olmo-core) return 0;; *) return 1;; esac; }
for i in $(seq 0 719); do
  rt=${runtimes[$((i % 21))]}
  st=${strategies[$((i / 3 % 4))]}
  ac=${acs[$((i / 2 % 4))]}
  fp=${fp8s[$((i / 5 % 4))]}
  n=${gpus[$((i / 7 % 10))]}
  hw=${hws[$((i / 11 % 9))]}
  md=${models[$((i / 13 % 9))]}
  sl=${seqs[$((i / 17 % 4))]}
  mx=$(maxseq "$md"); [ "$sl" -gt "$mx" ] && sl=$mx
  [ "$hw" = cpu ] && { md=${models[$((3 + i % 2 * 5))]}; n=$((1 + i % 4)); sl=256; }
  mb=$((1 + i % 3))
  args=(plan --model "$md" --hardware "$hw" --gpus "$n" --strategy "$st" --ac "$ac" --micro-batch "$mb"
        --seq-len "$sl" --runtime "$rt" --json)
  [ "$n" -lt 8 ] && args+=(--gpus-per-node "$n")
  if [ "$fp" != none ] && { fp8_runtime "$rt" || [ $((i % 29)) = 0 ]; }; then args+=(--fp8 "$fp"); fi
  case "$rt" in shardcast-train|llm-foundry*|tinyllama|fms-fsdp|accelerate) [ $((i % 31)) = 0 ] && args+=(--compile);;
    *) [ $((i % 2)) = 1 ] && args+=(--compile);; esac
  [ $((i % 9)) = 4 ] && args+=(--grad-accum 4)
  run plan_matrix "${args[@]}"
done

# torchtitan's generations around the 2026 split (FlexAttention document masks, chunked loss, CUDA
# graphs) and the Blackwell formats, each with its refusals: one row per question.
for rt in torchtitan-2025-10 torchtitan-2026-06 torchtitan; do
  for extra in "" "--mean-doc-len 1024" "--fp8 mxfp8" "--fp8 nvfp4" "--fp8 tensorwise"; do
    # shellcheck disable=SC2086
    run plan_generations plan --model llama3-8b --hardware GB200 --gpus 4 --micro-batch 2 --seq-len 8192 \
      --ac selective_op --compile --runtime "$rt" --json $extra
  done
  run plan_generations plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 \
    --ac selective_op --compile --runtime "$rt" --fp8 mxfp8 --json
done

# plan's human page, the timeline and the runtime's options as printed.
run plan_human plan --model llama2-7b --hardware A100-80GB-SXM --gpus 128 --strategy hybrid_shard --micro-batch 2 \
  --seq-len 4096 --ac none --runtime fms-fsdp
run plan_human plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac full \
  --runtime torchtitan --compile --fp8 rowwise
run plan_human plan --model llama3-70b --hardware H100-80GB-SXM --gpus 128 --micro-batch 1 --seq-len 8192 \
  --grad-accum 8 --ac full --sync-every-micro-step false
run plan_human plan --model llama3-8b --hardware B200 --gpus 8 --micro-batch 1 --seq-len 8192 --ac full --power-limit-w 700
run plan_human plan "$root/configs/examples/fms-llama2-7b-128xA100.toml"
run plan_human plan "$root/configs/train/tiny-2rank.toml"
run plan_timeline plan --model llama3-8b --hardware H100-80GB-SXM --gpus 16 --micro-batch 1 --seq-len 8192 --ac full \
  --runtime torchtitan --timeline "$work/trace.json"
cat "$work/trace.json" >> "$out/plan_timeline.txt"

run search search --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --top 5
run search search --model llama3-70b --hardware H100-80GB-SXM --gpus 256 --runtime torchtitan --top 10
run scale scale --model llama3-8b --hardware H100-80GB-SXM --from 8 --to 1024
run scale scale --model llama3-70b --hardware H100-80GB-SXM --from 64 --to 16384 --runtime torchtitan
run budget scale --model llama3-70b --seq-len 4096 --tokens 2T --deadline 30d --runtime torchtitan \
  --gpu-types H100-80GB-SXM,H200-141GB-SXM,B200,MI300X

# Every file emit writes, for three plans.
emit_one() {  # NAME ARGS...
  local name="$1"; shift
  run "emit_$name" emit "$@" --out "$work/emit_$name"
  mkdir -p "$out/emit/$name"
  ( cd "$work/emit_$name" 2>/dev/null && for f in $(find . -type f | sort); do
      mkdir -p "$out/emit/$name/$(dirname "$f")"; cp "$f" "$out/emit/$name/$f"; done )
}
emit_one 8b_64 --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --strategy full_shard --micro-batch 1 \
  --seq-len 8192 --ac full --data /data/corpus.bin
emit_one 70b_torchtitan --model llama3-70b --hardware H100-80GB-SXM --gpus 256 --micro-batch 1 --seq-len 8192 \
  --ac full --runtime torchtitan --compile --fp8 rowwise --data /data/corpus.bin
emit_one 7b_fms --model llama2-7b --hardware A100-80GB-SXM --gpus 128 --strategy hybrid_shard --micro-batch 2 \
  --seq-len 4096 --ac none --runtime fms-fsdp --data /data/corpus.bin
# emit's files name the folder they were written to: the temporary one is written as OUT.
grep -rl "$work" "$out" 2>/dev/null | while read -r f; do sed -i "s#$work#OUT#g" "$f"; done
grep -rl "$root" "$out" 2>/dev/null | while read -r f; do sed -i "s#$root#ROOT#g" "$f"; done
# Wall-clock times of search and the budget question vary from run to run: written as T.
sed -i -E 's/(configurations in )[0-9.]+ s/\1T s/; s/(fit in [^;]*; )[0-9.]+ s$/\1T s/' "$out/search.txt" "$out/budget.txt" "$out/scale.txt"
exit 0
