#!/usr/bin/env bash
# kill -9 during a checkpoint save: the half-written checkpoint stays invisible, the next start
# resumes from the last complete one, and the resumed run ends with the same loss as a run
# that was never interrupted.
source "$(dirname "$0")/fault_lib.sh"
CK="[checkpoint]
dir = \"$WORK/ckpt\"
interval = 2
keep = 3
resume_from = \"latest\""
write_config save 6 30 "$CK"
kill_in_save_then_resume
# The same 6 steps without interruption, in a fresh directory.
sed -e "s#$WORK/ckpt#$WORK/ckpt2#" -e "s#$WORK/save.run#$WORK/straight.run#" "$WORK/save.toml" > "$WORK/straight.toml"
"$TRAIN" launch --nproc-per-node 2 "$WORK/straight.toml" > "$WORK/straight.log" 2>&1 || fail "straight run failed"
straight_loss=$(tail -1 "$WORK/straight.run/metrics.jsonl" | sed 's/.*"loss":\([^,]*\).*/\1/')
[ "$resumed_loss" = "$straight_loss" ] || fail "step 6 loss differs: resumed $resumed_loss, straight $straight_loss"
echo "ok: resumed from step 2 after a kill in the step-4 save; step 6 loss $resumed_loss == straight run"
# A resume from an older checkpoint re-saves a step that exists (step 4): killed in that save, the
# step-4 checkpoint already there stays whole (it is replaced only once the new one is complete),
# and the metrics records of the steps retrained (3..6) are kept beside the log, not lost.
sum4=$(cat "$WORK/ckpt/step_00000004"/* | md5sum)
sed -e "s#^resume_from = \"latest\"#resume_from = \"$WORK/ckpt/step_00000002\"#" "$WORK/save.toml" > "$WORK/again.toml"
rc=0
SHARDCAST_FAULT_KILL_IN_SAVE=4 "$TRAIN" launch --nproc-per-node 2 "$WORK/again.toml" > "$WORK/again.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "the re-save with a kill exited 0"
[ -f "$WORK/ckpt/step_00000004/manifest.json" ] && [ "$(cat "$WORK/ckpt/step_00000004"/* | md5sum)" = "$sum4" ] ||
  fail "a killed re-save of step 4 lost the step-4 checkpoint there"
# (The first resume from step 2, above, kept steps 3..4 under the plain name; this one its own .2.)
[ -f "$WORK/save.run/metrics.replaced_from_step_00000003.jsonl" ] || fail "the first resume's records are gone"
aside="$WORK/save.run/metrics.replaced_from_step_00000003.2.jsonl"
[ -f "$aside" ] && grep -q '"step":6' "$aside" && grep -q '"step":3' "$aside" ||
  fail "the records of steps 3..6 were not kept beside the log"
echo "ok: a killed re-save of step 4 left the step-4 checkpoint whole; steps 3..6's records kept in $(basename "$aside")"
