#!/usr/bin/env bash
# End-to-end: what `shardcast emit --data` writes runs with `shardcast-train launch` unchanged,
# and `shardcast check` says OK exactly when the trainer starts: emit for tiny-2l on 2 CPU
# ranks, check the emitted run.toml, launch it as written, then validate the run directory
# against the plan. Without --data, check refuses the run.toml as the trainer would (data.path)
# and the launchers read SHARDCAST_DATA. No timing is asserted.
# Usage: emit_launch_e2e.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$2
sc="$build/shardcast"
tr="$build/shardcast-train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"

"$tr" tokenize --out "$work/corpus.bin" "$src"/docs/*.md > /dev/null

# Without --data: written, but check refuses it the way shardcast-train run would.
"$sc" emit --model tiny-2l --hardware cpu --gpus 2 --seq-len 128 --strategy full_shard --micro-batch 2 --ac none \
  --steps 4 --out "$work/nodata" > /dev/null 2> "$work/nodata.err" || fail "emit without --data exited $?"
grep -q 'SHARDCAST_DATA' "$work/nodata.err" || fail "emit does not say what must be set"
grep -q 'SHARDCAST_DATA:?' "$work/nodata/launch_torchrun.sh" || fail "launch_torchrun.sh does not require SHARDCAST_DATA"
grep -q 'SHARDCAST_DATA:?' "$work/nodata/launch.sbatch" || fail "launch.sbatch does not require SHARDCAST_DATA"
bash -n "$work/nodata/launch_torchrun.sh" || fail "launch_torchrun.sh: bash -n"
bash -n "$work/nodata/launch.sbatch" || fail "launch.sbatch: bash -n"
# launch.sbatch's guard (its cksum of run.toml, computed by shared/slurm_script.cpp posix_cksum)
# run as written: it passes on the emitted run.toml (so the CRC is the system cksum's) and
# refuses it once edited, naming the file and the fix.
sed -n '/^if \[ "$(cksum < run.toml)"/,/^fi$/p' "$work/nodata/launch.sbatch" > "$work/guard.sh"
[ "$(wc -l < "$work/guard.sh")" -eq 4 ] || fail "launch.sbatch has no run.toml cksum guard"
(cd "$work/nodata" && bash "$work/guard.sh") || fail "the guard refused the emitted run.toml"
cp "$work/nodata/run.toml" "$work/run.toml.emitted"
echo "# edited after emit" >> "$work/nodata/run.toml"
set +e
(cd "$work/nodata" && bash "$work/guard.sh") 2> "$work/guard.err"; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "the guard let an edited run.toml through (exit $rc)"
grep -q 'run.toml in .* is not the file this script was written for' "$work/guard.err" || fail "guard message: $(cat "$work/guard.err")"
cp "$work/run.toml.emitted" "$work/nodata/run.toml"
set +e
"$sc" check "$work/nodata/run.toml" > /dev/null 2> "$work/check.err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "check of a run.toml without data.path: exit $rc, expected 2"
grep -q 'data.path' "$work/check.err" || fail "check does not name data.path"
set +e
"$tr" run "$work/nodata/run.toml" > /dev/null 2> "$work/run.err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "shardcast-train run without data: exit $rc, expected 2"
"$sc" check "$work/nodata/run.toml" --data "$work/corpus.bin" > /dev/null || fail "check --data refused"

# With --data: check says OK and the trainer runs the file as written.
"$sc" emit --model tiny-2l --hardware cpu --gpus 2 --seq-len 128 --strategy full_shard --micro-batch 2 --ac none \
  --steps 4 --data "$work/corpus.bin" --out "$work/out" > "$work/emit.log" 2>&1 || { cat "$work/emit.log"; fail "emit exited"; }
grep -q '^runtime = "shardcast-train"' "$work/out/run.toml" || fail "run.toml does not name its runtime"
"$sc" check "$work/out/run.toml" > /dev/null || fail "check refused the emitted run.toml"
"$tr" launch --nproc-per-node 2 "$work/out/run.toml" > "$work/launch.log" 2>&1 || { cat "$work/launch.log"; fail "launch exited"; }
run=$(ls -d "$work"/runs/* | head -1)
[ -s "$run/validation.json" ] || fail "no validation.json in $run"
[ "$(wc -l < "$run/metrics.jsonl")" -eq 4 ] || fail "metrics.jsonl should have 4 lines"
"$sc" validate "$run" > "$work/validate.log" 2>&1 || { cat "$work/validate.log"; fail "validate RUN_DIR exited"; }

# A relative --data is kept as given and emit says where it resolves: the launchers run in their
# own folder (a stand-in torchrun records the directory it ran in and its arguments), also with an
# exported CDPATH that holds another folder of the same name (a plain `cd rel` would go there).
mkdir -p "$work/elsewhere/rel" "$work/bin"
( cd "$work" && "$sc" emit --model tiny-2l --hardware cpu --gpus 2 --seq-len 128 --strategy full_shard --micro-batch 2 \
    --ac none --steps 4 --data corpus.bin --out rel > "$work/rel.log" 2>&1 ) || { cat "$work/rel.log"; fail "emit --data corpus.bin exited"; }
grep -qxF 'path = "corpus.bin"' "$work/rel/run.toml" || fail "a relative --data is not kept as given"
grep -q 'data.path "corpus.bin" is relative: the launchers run in rel' "$work/rel.log" || fail "emit does not say where a relative data.path resolves"
printf '#!/bin/sh\npwd > "%s/torchrun.cwd"\nfor a in "$@"; do echo "$a"; done > "%s/torchrun.args"\n' "$work" "$work" > "$work/bin/torchrun"
chmod +x "$work/bin/torchrun"
( cd "$work" && CDPATH="$work/elsewhere" PATH="$work/bin:$PATH" rel/launch_torchrun.sh ) || fail "launch_torchrun.sh exited $?"
[ "$(cat "$work/torchrun.cwd")" = "$work/rel" ] || fail "launch_torchrun.sh ran in $(cat "$work/torchrun.cwd"), not its folder"
[ "$(tail -2 "$work/torchrun.args" | tr '\n' ' ')" = "run run.toml " ] || fail "launch_torchrun.sh arguments: $(cat "$work/torchrun.args")"
echo "ok: emit --data -> check -> launch -> validate; a relative --data kept and noted; the launcher runs in its folder"
