#!/usr/bin/env bash
# The newest checkpoint corrupt (one byte flipped in a shard; or a shard truncated):
# checkpoint.fallback = false stops with the checksum error and names the key; true says
# which checkpoint is corrupt, renames it to *.corrupt and resumes from the newest intact one,
# ending with the same loss as a run that never met the corruption.
source "$(dirname "$0")/fault_lib.sh"
CK="[checkpoint]
dir = \"$WORK/ckpt\"
interval = 2
keep = 3
resume_from = \"latest\""
write_config fb 6 30 "$CK"
"$TRAIN" launch --nproc-per-node 2 "$WORK/fb.toml" --steps 4 > "$WORK/make.log" 2>&1 || { cat "$WORK/make.log"; fail "could not make checkpoints"; }
[ -f "$WORK/ckpt/step_00000004/manifest.json" ] && [ -f "$WORK/ckpt/step_00000002/manifest.json" ] || fail "checkpoints missing"
printf '\x55' | dd of="$WORK/ckpt/step_00000004/shard_00001.bin" bs=1 seek=3000 conv=notrunc 2>/dev/null

# fallback = false (the default): a clear error, nothing renamed.
rc=0; "$TRAIN" launch --nproc-per-node 2 "$WORK/fb.toml" > "$WORK/nofb.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] || { cat "$WORK/nofb.log"; fail "fallback = false: exit $rc, expected a clean error"; }
grep -q "checksum mismatch" "$WORK/nofb.log" || { cat "$WORK/nofb.log"; fail "no checksum error"; }
grep -q "checkpoint.fallback = true" "$WORK/nofb.log" || fail "the error does not point to checkpoint.fallback"
[ -d "$WORK/ckpt/step_00000004" ] || fail "fallback = false touched the corrupt checkpoint"
echo "ok: fallback = false -> $(grep -m1 -o 'checksum mismatch.*' "$WORK/nofb.log" | cut -c1-120)"

# fallback = true: says so, resumes from step 2, finishes.
sed 's/^resume_from = "latest"/resume_from = "latest"\nfallback = true/' "$WORK/fb.toml" > "$WORK/fb2.toml"
"$TRAIN" launch --nproc-per-node 2 "$WORK/fb2.toml" > "$WORK/fb.log" 2>&1 || { cat "$WORK/fb.log"; fail "fallback run failed"; }
grep -q "step_00000004 is corrupt: .*checksum mismatch.*renamed to .*step_00000004.corrupt" "$WORK/fb.log" \
  || { cat "$WORK/fb.log"; fail "the corrupt checkpoint was not reported"; }
grep -q "resumed from $WORK/ckpt/step_00000002 " "$WORK/fb.log" || { cat "$WORK/fb.log"; fail "did not resume from step 2"; }
[ -d "$WORK/ckpt/step_00000004.corrupt" ] || fail "corrupt checkpoint not kept as .corrupt"
[ -f "$WORK/ckpt/step_00000006/manifest.json" ] || fail "final checkpoint missing"
fb_loss=$(tail -1 "$WORK/fb.run/metrics.jsonl" | sed 's/.*"loss":\([^,]*\).*/\1/')
echo "ok: fallback = true -> $(grep -m1 'is corrupt' "$WORK/fb.log" | cut -c1-200)"

# A truncated shard in the newest: same path (size mismatch).
truncate -s 1000 "$WORK/ckpt/step_00000006/shard_00000.bin"
"$TRAIN" launch --nproc-per-node 2 "$WORK/fb2.toml" --steps 8 > "$WORK/trunc.log" 2>&1 || { cat "$WORK/trunc.log"; fail "fallback after truncation failed"; }
grep -q "step_00000006 is corrupt: .*1000 bytes, the manifest says" "$WORK/trunc.log" || { cat "$WORK/trunc.log"; fail "truncation not reported"; }
# step 4 was saved again by the fallback run above; the .corrupt one is never considered.
grep -q "resumed from $WORK/ckpt/step_00000004 " "$WORK/trunc.log" || { cat "$WORK/trunc.log"; fail "did not resume from the re-saved step 4"; }
[ -d "$WORK/ckpt/step_00000006.corrupt" ] || fail "truncated checkpoint not kept as .corrupt"
echo "ok: truncated newest -> $(grep -m1 'resumed from' "$WORK/trunc.log" | cut -c1-120)"

# Same step-6 loss as a straight 6-step run.
sed -e "s#$WORK/ckpt#$WORK/ckpt_straight#" -e "s#$WORK/fb.run#$WORK/straight.run#" "$WORK/fb.toml" > "$WORK/straight.toml"
"$TRAIN" launch --nproc-per-node 2 "$WORK/straight.toml" > "$WORK/straight.log" 2>&1 || fail "straight run failed"
straight=$(tail -1 "$WORK/straight.run/metrics.jsonl" | sed 's/.*"loss":\([^,]*\).*/\1/')
[ "$fb_loss" = "$straight" ] || fail "step 6 loss after fallback $fb_loss != straight run $straight"
echo "ok: step 6 loss after the fallback $fb_loss == straight run"
