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
