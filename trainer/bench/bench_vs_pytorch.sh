#!/usr/bin/env bash
# shardcast-train (no_shard, full_shard) against PyTorch DDP over Gloo on the small-6l Llama,
# 2 ranks x 1 thread, in interleaved rounds; prints paired tokens/s ratios and peak memory
# (see bench_vs_pytorch.py). Needs a python3 with torch (Debian: apt-get install python3-torch);
# without one it says so and exits 0 (skipped).
#   trainer/bench/bench_vs_pytorch.sh [BUILD_DIR] [--rounds 5] [--steps 12] [--micro-batch 2] [--seq-len 256]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRC/build}
[ $# -gt 0 ] && shift
TRAIN="$BUILD/shardcast-train"
[ -x "$TRAIN" ] || { echo "bench_vs_pytorch: $TRAIN not found (build the shardcast-train target)" >&2; exit 1; }
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" > /dev/null && "$p" -c "import torch, torch.distributed" 2> /dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "bench_vs_pytorch: skipped: no python3 with torch found (Debian: apt-get install python3-torch)"
  exit 0
fi
WORK=$(mktemp -d /tmp/bench_vs_pytorch.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# A byte-level corpus from the repository's text (throughput does not depend on the text).
"$TRAIN" tokenize --out "$WORK/corpus.bin" "$SRC"/docs/*.md "$SRC"/shared/*.cpp "$SRC"/trainer/*/*.cpp > /dev/null
exec "$PY" "$SRC/trainer/bench/bench_vs_pytorch.py" compare --model "$SRC/configs/models/small-6l.toml" \
  --data "$WORK/corpus.bin" --trainer "$TRAIN" "$@"
