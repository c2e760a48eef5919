#!/bin/bash
# Test double of `shardcast-train launch` for run_tab_test: checks the arguments the GUI
# passes, then writes metrics.jsonl step by step (and run_report.json at the end) the way the
# trainer does. FAKE_TRAINER_STEPS steps, FAKE_TRAINER_SLEEP seconds apart.
set -eu
[ "$1" = launch ] || { echo "expected launch, got $1" >&2; exit 2; }
[ "$2" = --nproc-per-node ] || { echo "expected --nproc-per-node" >&2; exit 2; }
nproc=$3; toml=$4
[ "$5" = --metrics-dir ] || { echo "expected --metrics-dir" >&2; exit 2; }
dir=$6
[ -f "$toml" ] || { echo "no $toml" >&2; exit 2; }
grep -q '^\[prediction\]' "$toml" || { echo "run.toml has no [prediction]" >&2; exit 2; }
data=$(sed -n 's/^path = "\(.*\)"$/\1/p' "$toml" | head -1)
[ -f "$data" ] || { echo "data.path '$data' is not a file" >&2; exit 2; }
steps=${FAKE_TRAINER_STEPS:-5}
echo "fake trainer: $nproc ranks, $steps steps"
: > "$dir/metrics.jsonl"
for s in $(seq 1 "$steps"); do
  echo "{\"step\":$s,\"loss\":$(echo "6 - $s * 0.1" | bc),\"lr\":0.001,\"grad_norm\":1.0,\"tokens_per_s_per_gpu\":1000,\"mfu\":0.1,\"hfu\":0.12,\"step_time_s\":0.5,\"mem_peak_bytes\":1000000}" >> "$dir/metrics.jsonl"
  echo "step $s/$steps"
  sleep "${FAKE_TRAINER_SLEEP:-0.05}"
done
echo "warning on stderr" >&2
cat > "$dir/run_report.json" <<JSON
{"schema":1,"config_file":"$toml","hardware":"cpu","world_size":$nproc,"sharding_strategy":"full_shard","steps":[],
 "summary":{"median_step_time_s":0.5,"tokens_per_s_per_gpu":1000,"mfu":0.1,"hfu":0.12,"mem_peak_bytes":1000000,
            "mem_components_bytes":{}}}
JSON
exit "${FAKE_TRAINER_EXIT:-0}"
