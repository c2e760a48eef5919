#!/usr/bin/env bash
# checkpoint.async_mode = "async": kill -9 of rank 0 while its background thread writes the
# step-4 checkpoint (after the shard files, before the commit). The half-written checkpoint
# stays invisible, the next start resumes from step 2, and step 6 ends with the same loss as
# an uninterrupted run. An uninterrupted async run writes byte-identical shard files to a
# synchronous one (same CRC-32s in the manifests).
source "$(dirname "$0")/fault_lib.sh"
CK="[checkpoint]
dir = \"$WORK/ckpt\"
interval = 2
keep = 3
resume_from = \"latest\"
async_mode = \"async\""
write_config save 6 30 "$CK"
kill_in_save_then_resume
grep -q "saved $WORK/ckpt/step_00000002 (written in the background)" "$WORK/killed.log" \
  || { cat "$WORK/killed.log"; fail "step 2 was not saved in the background"; }
# The same 6 steps without interruption: async, and synchronous.
sed -e "s#$WORK/ckpt#$WORK/ckpt_async#" -e "s#$WORK/save.run#$WORK/async.run#" "$WORK/save.toml" > "$WORK/async.toml"
sed -e "s#$WORK/ckpt#$WORK/ckpt_sync#" -e "s#$WORK/save.run#$WORK/sync.run#" -e '/^async_mode/d' "$WORK/save.toml" > "$WORK/sync.toml"
"$TRAIN" launch --nproc-per-node 2 "$WORK/async.toml" > "$WORK/async.log" 2>&1 || fail "straight async run failed"
"$TRAIN" launch --nproc-per-node 2 "$WORK/sync.toml" > "$WORK/sync.log" 2>&1 || fail "straight sync run failed"
async_loss=$(tail -1 "$WORK/async.run/metrics.jsonl" | sed 's/.*"loss":\([^,]*\).*/\1/')
[ "$resumed_loss" = "$async_loss" ] || fail "step 6 loss differs: resumed $resumed_loss, straight $async_loss"
crcs() { grep -o '"crc32": *[0-9]*' "$1" | tr -d ' \n'; }
for s in 2 4 6; do
  d=$(printf 'step_%08d' $s)
  a=$(crcs "$WORK/ckpt_async/$d/manifest.json"); b=$(crcs "$WORK/ckpt_sync/$d/manifest.json")
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$d: async CRCs '$a' != sync CRCs '$b'"
done
echo "ok: killed in the background save of step 4, resumed from step 2; step 6 loss $resumed_loss == straight run;" \
     "async and sync checkpoints have the same CRC-32s"
