#!/usr/bin/env bash
# ctest trainer.tokenize_sentencepiece_cli: `shardcast-train train-tokenizer` writes a model,
# `tokenize --sentencepiece` writes a token file with it (fewer tokens than the byte tokenizer's
# on the same files); a tiny model (vocab 256) refuses that file by name; a bad --vocab and a
# file that is no model exit 2. Skips (77) without Debian's spm_* programs.
# Usage: tokenize_cli_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
bin="$(cd "$1" && pwd)/shardcast-train"
src="$(cd "$2" && pwd)"
command -v spm_train >/dev/null || { echo "skip: no spm_train (Debian package sentencepiece)"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$bin" train-tokenizer --out "$tmp/docs.model" --vocab 2000 "$src"/docs/*.md > "$tmp/train.log" 2>&1 \
  || { cat "$tmp/train.log"; fail "train-tokenizer"; }
[ -s "$tmp/docs.model" ] || fail "no model written"
out=$("$bin" tokenize --sentencepiece "$tmp/docs.model" --out "$tmp/sp.bin" "$src"/docs/*.md) || fail "tokenize --sentencepiece: $out"
grep -q "SentencePiece .* 2000 pieces" <<<"$out" || fail "tokenize did not name the model: $out"
sp=$(sed -E 's/^wrote ([0-9]+) tokens.*/\1/' <<<"$out")
bytes=$("$bin" tokenize --out "$tmp/bytes.bin" "$src"/docs/*.md | sed -E 's/^wrote ([0-9]+) tokens.*/\1/')
[ "$sp" -gt 0 ] && [ "$((sp * 2))" -lt "$bytes" ] || fail "$sp subword tokens against $bytes bytes"
echo "docs/*.md: $bytes byte tokens, $sp subword tokens (2000 pieces)"
# The tiny model's vocabulary (256) cannot read ids up to 2000: refused, naming the file.
out=$("$bin" run "$src/configs/train/tiny-2rank.toml" --reference --data "$tmp/sp.bin" --steps 1 --metrics-dir "$tmp/run" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && grep -q "sp.bin" <<<"$out" || fail "a 256-vocab model trained on a 2000-piece file (exit $rc): $out"
"$bin" train-tokenizer --out "$tmp/x.model" --vocab 100 "$src"/docs/*.md > /dev/null 2>&1
[ $? -eq 2 ] || fail "--vocab 100 should exit 2"
echo "not a model" > "$tmp/junk.model"
out=$("$bin" tokenize --sentencepiece "$tmp/junk.model" --out "$tmp/j.bin" "$src"/README.md 2>&1)
[ $? -eq 2 ] && grep -q "junk.model" <<<"$out" || fail "a junk model should exit 2 naming it: $out"
echo "ok"
