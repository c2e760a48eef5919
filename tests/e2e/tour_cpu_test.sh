#!/usr/bin/env bash
# The README tour's CPU commands after a tiny demo setup (a quick calibrate, a small corpus),
# checked for what a newcomer must never read: an MFU above 100% without its reason, an error
# outside the stated band without a verdict that says so, an empty predicted table.
#   usage: tour_cpu_test.sh SHARDCAST SHARDCAST_TRAIN SOURCE_DIR
# Runs in a temporary directory holding links to the repository's configs/, docs/ and shared/,
# so the tour's relative paths (configs/train/tiny-2rank.toml, runs/tiny-2rank) work as written.
set -uo pipefail
sc=$(realpath "$1"); tr=$(realpath "$2"); src=$(realpath "$3")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" && ln -s "$src/configs" configs && ln -s "$src/docs" docs && ln -s "$src/shared" shared && mkdir build
export SHARDCAST_CONFIG_DIR="$src/configs"
unset SHARDCAST_RUNTIME
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() {  # run LOG CMD...: the command's stdout + stderr into LOG, exit code checked
  local log=$1; shift
  "$@" > "$log" 2>&1 || { bad "$* exited $?"; sed 's/^/    /' "$log" | tail -20; }
}
# Every "mfu X%" above 100 must carry its reason on the line, and the run must print the note.
check_mfu() {  # check_mfu LOG
  awk '{ if (match($0, /mfu [0-9.]+%/)) { v = substr($0, RSTART + 4, RLENGTH - 5) + 0;
           if (v > 100 && index($0, "above the profile'"'"'s peak") == 0) { print "unexplained: " $0; bad = 1 }
           if (v > 100) above = 1 } }
       END { exit bad ? 1 : (above ? 2 : 0) }' "$1"
  local rc=$?
  [ $rc = 1 ] && bad "$1: MFU above 100% printed without its reason"
  if [ $rc = 2 ] && ! grep -q "note: MFU [0-9]*% is above 100%: this machine computes faster" "$1"; then
    bad "$1: MFU above 100% but no note saying why"
  fi
  return $rc
}
# Each verdict line of `validate RUN_DIR` must agree with its numbers: |error| <= band <=> inside.
check_verdicts() {  # check_verdicts LOG EXPECTED_COUNT
  local n
  n=$(grep -c 'tokens/s/rank predicted' "$1")
  [ "$n" = "$2" ] || bad "$1: $n verdict lines, expected $2"
  awk '/tokens\/s\/rank predicted/ {
         match($0, /\([+-][0-9.]+%\)/); e = substr($0, RSTART + 1, RLENGTH - 3) + 0; if (e < 0) e = -e
         # the band: the digits of "band (±N%)", whatever width awk gives "±" (mawk counts bytes)
         match($0, /band \(±[0-9.]+%\)/); b = substr($0, RSTART, RLENGTH); gsub(/[^0-9.]/, "", b); b = b + 0
         inside = index($0, "inside the stated 1σ band") > 0; outside = index($0, "outside the stated 1σ band") > 0
         if (!inside && !outside) { print "no verdict: " $0; bad = 1 }
         # the band is printed rounded to whole percent: only a clear disagreement fails
         if (inside && e > b + 0.5) { print "inside, but error above the band: " $0; bad = 1 }
         if (outside && e < b - 0.5) { print "outside, but error within the band: " $0; bad = 1 } }
       END { exit bad }' "$1" || bad "$1: a verdict disagrees with its numbers"
}

# The demo's setup, small: this machine's profile (quick), a corpus.
run calibrate.log "$sc" calibrate --quick --hardware-out build/local.toml
run tokenize.log "$tr" tokenize --out build/corpus.bin docs/*.md shared/*.h
grep -q 'e-[0-9][0-9]' calibrate.log && bad "calibrate printed a value like 1e-31: $(grep 'e-[0-9][0-9]' calibrate.log)"

# The tour: launch on the measured profile, validate, plan on it, profile.
run launch.log "$tr" launch --nproc-per-node 2 configs/train/tiny-2rank.toml --data build/corpus.bin \
  --hardware build/local.toml --steps 30
check_mfu launch.log
# (recorded absolute, so `shardcast validate RUN_DIR` finds it from any directory)
grep -qF "hardware = \"$(pwd -P)/build/local.toml\"" runs/tiny-2rank/run.toml || bad "the run directory does not record --hardware"
run validate.log "$sc" validate runs/tiny-2rank
grep -q 'profile build/local.toml' validate.log || bad "validate did not predict on the run's profile: $(head -1 validate.log)"
grep -q 'no \[prediction\] table in runs/tiny-2rank/run.toml' validate.log || bad "validate: the empty predicted table is not explained"
if grep -A1 '^  quantity' validate.log | tail -1 | grep -q '^$'; then bad "validate printed an empty predicted table"; fi
check_verdicts validate.log 1
run plan.log "$sc" plan configs/train/tiny-2rank.toml --hardware build/local.toml --json
cp plan.log build/plan.json
run profile.log "$tr" profile configs/train/tiny-2rank.toml --nproc-per-node 2 --data build/corpus.bin \
  --hardware build/local.toml --plan build/plan.json --steps 2 --warmup 1
check_mfu profile.log

# A profile whose peak is far below this machine's (1 GFLOP/s): every MFU is above 100%, and
# each must say why; the verdict of validate must say "outside" where the error is.
sed 's/^fp32_tflops = .*/fp32_tflops = 0.001/' build/local.toml > build/slow.toml
run launch_slow.log "$tr" launch --nproc-per-node 2 configs/train/tiny-2rank.toml --data build/corpus.bin \
  --hardware build/slow.toml --steps 5 --metrics-dir runs/slow
check_mfu launch_slow.log; [ $? = 2 ] || bad "launch_slow.log: a 1 GFLOP/s profile printed no MFU above 100%"
grep -q 'warning: median MFU' launch_slow.log || bad "launch_slow.log: no end-of-run warning for a median MFU above 100%"
run validate_two.log "$sc" validate runs/tiny-2rank runs/slow
check_verdicts validate_two.log 2
grep -q 'runs/slow\|slow: .*outside the stated 1σ band' validate_two.log || true
grep -q '^  slow: .*outside the stated 1σ band' validate_two.log || bad "validate: the slow profile's run is not outside its band"

# A bad --hardware is refused by name (exit 2), never replaced.
"$tr" launch --nproc-per-node 2 configs/train/tiny-2rank.toml --data build/corpus.bin --hardware build/none.toml \
  > bad_hw.log 2>&1; rc=$?
[ $rc = 2 ] && grep -q 'build/none.toml' bad_hw.log || bad "--hardware build/none.toml: exit $rc, $(tail -1 bad_hw.log)"

[ $fail = 0 ] && echo "tour_cpu: OK"
exit $fail
