#!/usr/bin/env bash
# The newest checkpoint corrupt (one byte flipped in a shard; then a shard truncated):
# checkpoint.fallback = false stops with the checksum error and names the key; true says
# which checkpoint is corrupt, renames it to *.corrupt and resumes from the newest intact one,
# ending with the same loss as the run that never met the corruption.
source "$(dirname "$0")/fault_lib.sh"
CK="[checkpoint]
dir = \"$WORK/ckpt\"
interval = 2
keep = 3
resume_from = \"latest\""
write_config fb 6 30 "$CK"
loss6() { sed -n 6p "$1" | sed 's/.*"loss":\([^,]*\).*/\1/'; }
"$TRAIN" launch --nproc-per-node 2 "$WORK/fb.toml" > "$WORK/make.log" 2>&1 || { cat "$WORK/make.log"; fail "could not make checkpoints"; }
straight=$(loss6 "$WORK/fb.run/metrics.jsonl")
for s in 2 4 6; do [ -f "$WORK/ckpt/step_0000000$s/manifest.json" ] || fail "checkpoint $s missing"; done
printf '\x55' | dd of="$WORK/ckpt/step_00000006/shard_00001.bin" bs=1 seek=3000 conv=notrunc 2>/dev/null

# fallback = false (the default): a clear error, nothing renamed.
rc=0; "$TRAIN" launch --nproc-per-node 2 "$WORK/fb.toml" > "$WORK/nofb.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] || { cat "$WORK/nofb.log"; fail "fallback = false: exit $rc, expected a clean error"; }
grep -q "checksum mismatch" "$WORK/nofb.log" || { cat "$WORK/nofb.log"; fail "no checksum error"; }
grep -q "checkpoint.fallback = true" "$WORK/nofb.log" || fail "the error does not point to checkpoint.fallback"
[ -d "$WORK/ckpt/step_00000006" ] || fail "fallback = false touched the corrupt checkpoint"
echo "ok: fallback = false -> $(grep -m1 -o 'checksum mismatch.*' "$WORK/nofb.log" | cut -c1-120)"

# fallback = true: says so, keeps it as .corrupt, resumes from step 4, same step-6 loss.
sed 's/^resume_from = "latest"/resume_from = "latest"\nfallback = true/' "$WORK/fb.toml" > "$WORK/fb2.toml"
"$TRAIN" launch --nproc-per-node 2 "$WORK/fb2.toml" > "$WORK/fb.log" 2>&1 || { cat "$WORK/fb.log"; fail "fallback run failed"; }
grep -q "step_00000006 is corrupt: .*checksum mismatch.*renamed to .*step_00000006.corrupt" "$WORK/fb.log" \
  || { cat "$WORK/fb.log"; fail "the corrupt checkpoint was not reported"; }
grep -q "resumed from $WORK/ckpt/step_00000004 " "$WORK/fb.log" || { cat "$WORK/fb.log"; fail "did not resume from step 4"; }
[ -d "$WORK/ckpt/step_00000006.corrupt" ] || fail "corrupt checkpoint not kept as .corrupt"
[ -f "$WORK/ckpt/step_00000006/manifest.json" ] || fail "final checkpoint not saved again"
[ "$(loss6 "$WORK/fb.run/metrics.jsonl")" = "$straight" ] || fail "step 6 loss after fallback != $straight"
echo "ok: fallback = true -> $(grep -m1 'is corrupt' "$WORK/fb.log" | cut -c1-220)"

# A truncated shard in the newest (size mismatch): the same path; the first .corrupt stays.
truncate -s 1000 "$WORK/ckpt/step_00000006/shard_00000.bin"
"$TRAIN" launch --nproc-per-node 2 "$WORK/fb2.toml" > "$WORK/trunc.log" 2>&1 || { cat "$WORK/trunc.log"; fail "fallback after truncation failed"; }
grep -q "step_00000006 is corrupt: .*1000 bytes, the manifest says" "$WORK/trunc.log" || { cat "$WORK/trunc.log"; fail "truncation not reported"; }
grep -q "resumed from $WORK/ckpt/step_00000004 " "$WORK/trunc.log" || { cat "$WORK/trunc.log"; fail "did not resume from step 4"; }
[ -d "$WORK/ckpt/step_00000006.corrupt" ] && [ -d "$WORK/ckpt/step_00000006.corrupt.1" ] || fail "expected .corrupt and .corrupt.1"
[ "$(loss6 "$WORK/fb.run/metrics.jsonl")" = "$straight" ] || fail "step 6 loss after the second fallback != $straight"
echo "ok: truncated newest -> $(grep -m1 'resumed from' "$WORK/trunc.log" | cut -c1-120); step 6 loss $straight both times"
