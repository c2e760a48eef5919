#!/usr/bin/env bash
# Restarting a run: a finished run started again says so and exits 0 with metrics.jsonl and
# run_report.json untouched; --steps beyond the checkpoint trains on and appends; a run
# stopped after its last checkpoint resumes and rewrites the lost steps, so metrics.jsonl
# holds every step exactly once, in order, the kept records byte for byte.
source "$(dirname "$0")/fault_lib.sh"
CK="[checkpoint]
dir = \"$WORK/ckpt\"
interval = 4
resume_from = \"latest\""
write_config fin 8 30 "$CK"
M="$WORK/fin.run/metrics.jsonl"
steps_of() { sed 's/.*"step":\([0-9]*\).*/\1/' "$1" | tr '\n' ' '; }

# 1. Run to the end, then again.
"$TRAIN" launch --nproc-per-node 2 "$WORK/fin.toml" > "$WORK/first.log" 2>&1 || { cat "$WORK/first.log"; fail "first run failed"; }
cp "$M" "$WORK/metrics.first"; cp "$WORK/fin.run/run_report.json" "$WORK/report.first"
rc=0; "$TRAIN" launch --nproc-per-node 2 "$WORK/fin.toml" > "$WORK/again.log" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$WORK/again.log"; fail "restart of a finished run exited $rc"; }
grep -q "the run is complete, nothing to train" "$WORK/again.log" || { cat "$WORK/again.log"; fail "no 'complete' message"; }
cmp -s "$M" "$WORK/metrics.first" || fail "metrics.jsonl changed by the restart of a finished run"
cmp -s "$WORK/fin.run/run_report.json" "$WORK/report.first" || fail "run_report.json changed"
echo "ok: restart of a finished run: exit 0, $(wc -l < "$M") records intact: $(grep -o 'checkpoint: already.*to train on)' "$WORK/again.log")"

# 2. --steps larger: trains on from step 9 and appends.
"$TRAIN" launch --nproc-per-node 2 "$WORK/fin.toml" --steps 10 > "$WORK/more.log" 2>&1 || { cat "$WORK/more.log"; fail "--steps 10 failed"; }
[ "$(steps_of "$M")" = "1 2 3 4 5 6 7 8 9 10 " ] || fail "steps after --steps 10: $(steps_of "$M")"
head -8 "$M" | cmp -s - "$WORK/metrics.first" || fail "records 1..8 changed when training on"
python3 -c "import json,sys; r=json.load(open('$WORK/fin.run/run_report.json')); assert [s['step'] for s in r['steps']]==list(range(1,11)), r['steps']" \
  || fail "run_report.json does not cover steps 1..10"
echo "ok: --steps 10 appended steps 9..10; run_report.json covers 1..10"

# 3. A run stopped at step 6 (after the step-4 checkpoint): the resume rewrites 5 and 6 once.
write_config stop 8 30 "${CK//ckpt/ckpt2}"
M2="$WORK/stop.run/metrics.jsonl"
rc=0; SHARDCAST_FAULT_RANK=1 SHARDCAST_FAULT_STEP=6 "$TRAIN" launch --nproc-per-node 2 "$WORK/stop.toml" > "$WORK/stop.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "the injected fault did not stop the run"
head -4 "$M2" > "$WORK/kept4"
printf '{"step":7,"lo' >> "$M2"   # a record cut short by a kill
"$TRAIN" launch --nproc-per-node 2 "$WORK/stop.toml" > "$WORK/resume.log" 2>&1 || { cat "$WORK/resume.log"; fail "resume failed"; }
grep -q "incomplete record" "$WORK/resume.log" || { cat "$WORK/resume.log"; fail "the cut record was dropped without a note"; }
[ "$(steps_of "$M2")" = "1 2 3 4 5 6 7 8 " ] || fail "steps after the resume: $(steps_of "$M2")"
head -4 "$M2" | cmp -s - "$WORK/kept4" || fail "records 1..4 changed by the resume"
# Step 8 loss equals the uninterrupted run's (same seed and data).
[ "$(tail -1 "$M2" | sed 's/.*"loss":\([^,]*\).*/\1/')" = "$(sed -n 8p "$WORK/metrics.first" | sed 's/.*"loss":\([^,]*\).*/\1/')" ] \
  || fail "step 8 loss after the resume differs from the straight run"
echo "ok: stopped at step 6, resumed from step 4: steps $(steps_of "$M2")each once, step 8 loss = straight run"
