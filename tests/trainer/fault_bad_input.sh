#!/usr/bin/env bash
# Truncated or garbage token files, configs and checkpoints: a clear error and a non-zero exit
# below 128 (no signal, no crash) for each.
source "$(dirname "$0")/fault_lib.sh"
expect_error() {  # expect_error NAME PATTERN CMD...
  local name=$1 pattern=$2; shift 2
  local rc=0
  "$@" > "$WORK/$name.log" 2>&1 || rc=$?
  [ $rc -ne 0 ] || fail "$name: exited 0"
  [ $rc -lt 128 ] || fail "$name: crashed (exit $rc)"
  grep -qi -- "$pattern" "$WORK/$name.log" || { cat "$WORK/$name.log"; fail "$name: no '$pattern' in the error"; }
  echo "ok: $name -> $(grep -i -m1 -- "$pattern" "$WORK/$name.log" | cut -c1-150)"
}
write_config good 2 30
head -c 700 "$WORK/corpus.bin" > "$WORK/truncated.bin"
expect_error truncated_tokens "truncated.bin" "$TRAIN" launch --nproc-per-node 2 "$WORK/good.toml" --data "$WORK/truncated.bin"
head -c 5000 /dev/urandom > "$WORK/garbage.bin"
expect_error garbage_tokens "garbage.bin" "$TRAIN" launch --nproc-per-node 2 "$WORK/good.toml" --data "$WORK/garbage.bin"
printf '[model]\npreset = "tiny-2l"\n[training]\nmicro_batch = "eight"\n' > "$WORK/bad.toml"
expect_error bad_config "micro_batch" "$TRAIN" run "$WORK/bad.toml"
head -c 3000 /dev/urandom > "$WORK/garbage.toml"
expect_error garbage_config "garbage.toml" "$TRAIN" run "$WORK/garbage.toml"
# The allocator trace is the CUDA caching allocator's: refused on CPU ranks and by --reference,
# before any file is written.
expect_error allocator_trace_on_cpu "needs a GPU run" "$TRAIN" launch --nproc-per-node 2 "$WORK/good.toml" \
  --allocator-trace "$WORK/trace.csv"
expect_error allocator_trace_reference "records an FSDP run on a GPU" "$TRAIN" run "$WORK/good.toml" --reference \
  --allocator-trace "$WORK/trace.csv"
[ ! -e "$WORK/trace.csv" ] && [ ! -e "$WORK/trace.csv.rank1" ] || fail "a refused --allocator-trace wrote a file"
# A checkpoint: corrupt a shard, truncate another, garble the manifest.
CK="[checkpoint]
dir = \"$WORK/ckpt\"
interval = 1"
write_config ck 1 30 "$CK"
"$TRAIN" launch --nproc-per-node 2 "$WORK/ck.toml" > /dev/null 2>&1 || fail "could not make a checkpoint"
C="$WORK/ckpt/step_00000001"
cp -r "$C" "$WORK/c1"; printf '\x55' | dd of="$WORK/c1/shard_00001.bin" bs=1 seek=4000 conv=notrunc 2>/dev/null
expect_error corrupt_shard "checksum mismatch" "$TRAIN" export "$WORK/c1" --out "$WORK/o1"
cp -r "$C" "$WORK/c2"; truncate -s 100 "$WORK/c2/shard_00000.bin"
expect_error truncated_shard "truncated" "$TRAIN" export "$WORK/c2" --out "$WORK/o2"
cp -r "$C" "$WORK/c3"; head -c 200 "$C/manifest.json" > "$WORK/c3/manifest.json"
expect_error garbage_manifest "manifest.json" "$TRAIN" export "$WORK/c3" --out "$WORK/o3"
# export never writes through a link planted at its temporary name: the link is removed and the
# file created exclusively, so the link's target stays as it was.
mkdir -p "$WORK/o4"; echo "someone else's" > "$WORK/victim.txt"
ln -s "$WORK/victim.txt" "$WORK/o4/model.safetensors.tmp"
"$TRAIN" export "$C" --out "$WORK/o4" > "$WORK/export4.log" 2>&1 || { cat "$WORK/export4.log"; fail "export beside a planted link"; }
[ "$(cat "$WORK/victim.txt")" = "someone else's" ] || fail "export wrote through a link at model.safetensors.tmp"
[ -f "$WORK/o4/model.safetensors" ] && [ ! -L "$WORK/o4/model.safetensors" ] || fail "export's file is not its own"
# A fresh run into a folder holding an earlier run's checkpoints would overwrite and prune them:
# refused before training, the checkpoint left as it was.
sum_before=$(cat "$C"/* | md5sum)
expect_error fresh_run_over_checkpoints "holds 1 checkpoint" "$TRAIN" launch --nproc-per-node 2 "$WORK/ck.toml"
[ "$(cat "$C"/* | md5sum)" = "$sum_before" ] || fail "a refused fresh run changed the earlier checkpoint"
# A metrics.dir that is the config's own folder would replace the config with the run's run.toml.
mkdir -p "$WORK/self"
sed -e "s#^dir = \"$WORK/good.run\"#dir = \"$WORK/self\"#" "$WORK/good.toml" > "$WORK/self/run.toml"
grep -q "^dir = \"$WORK/self\"" "$WORK/self/run.toml" || fail "setup: metrics.dir not rewritten"
printf '# my notes\n' >> "$WORK/self/run.toml"; chmod 600 "$WORK/self/run.toml"
cp "$WORK/self/run.toml" "$WORK/self.before"
expect_error metrics_dir_is_config_folder "is the folder of this config" "$TRAIN" run "$WORK/self/run.toml" --steps 1
cmp -s "$WORK/self/run.toml" "$WORK/self.before" || fail "the run replaced its own config"
# ... unless the run is exactly the config (the GUI's Run tab writes run.toml there): it runs and
# the file is left as it is, its comments and mode kept.
"$TRAIN" launch --nproc-per-node 2 "$WORK/self/run.toml" > "$WORK/self.log" 2>&1 || { cat "$WORK/self.log"; fail "a run in its config's folder"; }
cmp -s "$WORK/self/run.toml" "$WORK/self.before" && [ "$(stat -c %a "$WORK/self/run.toml")" = 600 ] ||
  fail "a run that is its config rewrote it"
[ -f "$WORK/self/validation.json" ] || fail "the run in its config's folder wrote no validation.json"
# Resuming a run from the corrupt checkpoint fails on every rank with the checksum error.
sed -e "s#^dir = \"$WORK/ckpt\"#dir = \"$WORK/ckpt\"\nresume_from = \"$WORK/c1\"#" "$WORK/ck.toml" > "$WORK/resume_bad.toml"
expect_error resume_corrupt "checksum mismatch" "$TRAIN" launch --nproc-per-node 2 "$WORK/resume_bad.toml"
# Planner-only knobs: the trainer refuses them by key instead of running a different config.
write_config sop 2 30 '[activation_checkpointing]
mode = "selective_op"'
expect_error planner_only_selective_op "activation_checkpointing.mode" "$TRAIN" launch --nproc-per-node 2 "$WORK/sop.toml"
sed 's/^reduce_dtype = "fp32"/reduce_dtype = "fp32"\ncompile = true/' "$WORK/good.toml" > "$WORK/compile.toml"
expect_error planner_only_compile "precision.compile" "$TRAIN" launch --nproc-per-node 2 "$WORK/compile.toml"
