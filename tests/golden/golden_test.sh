#!/usr/bin/env bash
# ctest golden_outputs: the planner's answers today against tests/golden/expected/, byte for
# byte (golden.sh says what is recorded). Tolerance: none. The outputs are printed text of
# deterministic computations on one machine's double arithmetic; a refactor that moves code
# but not arithmetic leaves every byte, so any difference is a changed answer, to be either
# fixed or recorded with its reason (regenerate expected/ in that commit).
# Usage: golden_test.sh SHARDCAST_BINARY
set -u
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$here/golden.sh" "$1" "$tmp/now" || { echo "FAIL: golden.sh failed"; exit 1; }
if diff -r "$here/expected" "$tmp/now" > "$tmp/diff"; then
  echo "ok: every golden output is unchanged ($(find "$here/expected" -type f | wc -l) files)"
  exit 0
fi
echo "FAIL: outputs differ from tests/golden/expected/ (first 80 lines of the diff):"
head -80 "$tmp/diff"
echo "If the change is intended, regenerate in the same commit and say why:"
echo "  bash tests/golden/golden.sh build/shardcast tests/golden/expected"
exit 1
