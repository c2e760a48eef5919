#!/usr/bin/env bash
# End-to-end contract of the closed loop through the CLIs, no timing asserted (this
# machine's noise is larger than any useful bound; docs/validation-cpu.md has the measured
# numbers): calibrate --hardware-out writes a profile plan accepts; the CPU sweep leaves run
# dirs with validation.json; validate compares them; calibrate --runs refuses too few runs and
# otherwise writes a profile with leave-one-out errors that plan accepts.
# Usage: closed_loop_e2e.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$2
sc="$build/shardcast"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$sc" calibrate --quick --hardware-out "$work/local.toml" > "$work/cal.log" 2>&1 || { cat "$work/cal.log"; fail "calibrate --hardware-out"; }
grep -q '^fp32_tflops = ' "$work/local.toml" || fail "profile lacks fp32_tflops"
"$sc" plan --model tiny-2l --hardware "$work/local.toml" --gpus 2 --micro-batch 8 --seq-len 128 > "$work/plan.log" \
  || { cat "$work/plan.log"; fail "plan on the measured profile"; }

# 8 short runs (tiny-2l, every strategy, 2 and 4 ranks), one repeat each.
SHARDCAST_SWEEP_MODELS=tiny-2l SHARDCAST_SWEEP_REPEATS=1 SHARDCAST_SWEEP_HARDWARE="$work/local.toml" \
  bash "$src/trainer/microbench/cpu_sweep.sh" "$build" "$work/sweep" 6 > "$work/sweep.log" 2>&1 \
  || { cat "$work/sweep.log"; fail "cpu_sweep.sh"; }
runs=("$work"/sweep/tiny-2l-*/)
[ "${#runs[@]}" -eq 8 ] || fail "expected 8 run dirs, got ${#runs[@]}"
for r in "${runs[@]}"; do
  [ -s "$r/validation.json" ] || fail "$r has no validation.json"
  # the run.toml came from `shardcast emit`, so the trainer compared against its [prediction]
  grep -q '"step_time_s"' "$r/validation.json" || { cat "$r/validation.json"; fail "$r: validation.json has no step_time_s entry"; }
done
[ "$(wc -l < "$work/sweep/repeats.tsv")" -eq 9 ] || fail "repeats.tsv: header + 8 rows"

"$sc" validate --hardware "$work/local.toml" "${runs[@]}" > "$work/validate.log" || { cat "$work/validate.log"; fail "validate"; }
[ "$(grep -cE '^  tiny-2l-[^ :]+ +[0-9]' "$work/validate.log")" -eq 8 ] || { cat "$work/validate.log"; fail "validate: 8 rows"; }
# ... and a verdict against the stated band for each
[ "$(grep -cE '^  tiny-2l-[^ :]+: tokens/s/rank predicted .*(inside|outside) the stated 1σ band' "$work/validate.log")" -eq 8 ] ||
  { cat "$work/validate.log"; fail "validate: 8 verdicts"; }
grep -q 'n = 8; step time MAPE' "$work/validate.log" || fail "validate: summary line"

# 4 fitted keys need 8 runs: 3 are refused with exit 2, naming the reason, and nothing is written.
set +e
"$sc" calibrate --runs "${runs[@]:0:3}" --hardware "$work/local.toml" --out "$work/few.toml" > "$work/few.log" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] || { cat "$work/few.log"; fail "too few runs: exit $code, want 2"; }
grep -q 'too few' "$work/few.log" || fail "too few runs: message"
[ ! -e "$work/few.toml" ] || fail "a refused fit wrote its output"

"$sc" calibrate --runs "${runs[@]}" --hardware "$work/local.toml" --out "$work/fitted.toml" > "$work/fit.log" \
  || { cat "$work/fit.log"; fail "calibrate --runs"; }
# 4 keys on 8 runs: fitted, but leave-one-out would fit 4 keys on 7 runs, so it says why it is absent.
grep -q 'leave-one-out needs more than 8 runs' "$work/fit.log" || { cat "$work/fit.log"; fail "calibrate --runs: no held-out reason"; }
"$sc" calibrate --runs "${runs[@]}" --hardware "$work/local.toml" --fit-params step_overhead_s,attention_eff \
  --out "$work/fit2.toml" > "$work/fit2.log" || { cat "$work/fit2.log"; fail "calibrate --runs --fit-params"; }
grep -q 'held out .*% (each run predicted by a fit without it)' "$work/fit2.log" || { cat "$work/fit2.log"; fail "calibrate --runs: leave-one-out"; }
grep -q '^step_overhead_s = ' "$work/fitted.toml" || fail "fitted profile lacks step_overhead_s"
"$sc" plan --model tiny-2l --hardware "$work/fitted.toml" --gpus 2 --micro-batch 8 --seq-len 128 > /dev/null \
  || fail "plan on the fitted profile"
echo "closed_loop_e2e: OK"
