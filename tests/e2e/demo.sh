#!/usr/bin/env bash
# `make demo`: the main job on its embedded defaults. Every step must succeed.
set -euo pipefail
build="${1:-build}"
cd "$(dirname "$0")/../.."
sc="$build/shardcast"

section() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

section "Presets"
"$sc" presets

section "Llama-2-7B"
"$sc" show-model llama2-7b --seq-len 4096

section "Plan: fms-fsdp's headline run, Llama-2-7B on 128 A100-80GB (configs/examples/fms-llama2-7b-128xA100.toml)"
"$sc" plan configs/examples/fms-llama2-7b-128xA100.toml
echo "published: 4550 tokens/s/GPU (foundation-model-stack/fms-fsdp README @ed74fd5, 128 A100, 400 Gb/s)"

section "Search: Llama-3-8B on 64 H100-80GB"
"$sc" search --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --top 5

section "Scale: Llama-3-8B on H100-80GB, 8 to 1024 GPUs"
"$sc" scale --model llama3-8b --hardware H100-80GB-SXM --from 8 --to 1024

# The closed loop on this machine: calibrate (cached), plan + emit tiny-2l, train it on
# 2 local ranks, predicted vs measured. Needs the trainer (LibTorch).
if [ ! -x "$build/shardcast-train" ]; then
  echo "error: $build/shardcast-train was not built (is libtorch-dev installed? run 'make deps')" >&2
  exit 1
fi
bash trainer/microbench/demo_closed_loop.sh "$build"
printf '\n\033[1m== demo done\033[0m\n'
echo "demo done: it showed the presets, Llama-2-7B, a plan, a search and a scale on published hardware, then this machine's closed loop (calibrate, plan + emit, train 2 ranks, predicted vs measured); files: $build/local.toml (this machine's profile) and $build/demo-closed-loop/ (run.toml, launchers, run/ with metrics.jsonl, run_report.json, validation.json); setup output: $build/demo-setup.log"
