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
