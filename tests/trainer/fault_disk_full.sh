#!/usr/bin/env bash
# Disk full: a small tmpfs (mounted in a private user+mount namespace with `unshare -rm`, so
# no root is needed) holds the first checkpoint but not the second. The second save must fail
# with a clear error, the run must exit non-zero, and the first checkpoint must stay intact
# (its checksums verified by exporting it). Skipped (exit 77) where namespaces are not allowed.
source "$(dirname "$0")/fault_lib.sh"
if ! unshare -rm true 2>/dev/null; then echo "skip: unshare -rm not permitted here"; exit 77; fi
mkdir -p "$WORK/disk"
CK="[checkpoint]
dir = \"$WORK/disk/ckpt\"
interval = 2
keep = 2"
write_config full 4 30 "$CK"
# One tiny-2l checkpoint: 2 shard files of 788,352 bytes (3 fp32 tensors per unit) + a manifest
# of a few KB, ~1.6 MB in 4 KiB blocks. 3 MiB holds the first, not a second beside it. The
# free-space check asks exactly for the blocks the files take (+ 1 for the directory).
rc=0
unshare -rm bash -c "mount -t tmpfs -o size=3m tmpfs '$WORK/disk' && \
  '$TRAIN' launch --nproc-per-node 2 '$WORK/full.toml' > '$WORK/full.log' 2>&1; rc=\$?; \
  cp -r '$WORK/disk/ckpt' '$WORK/ckpt_copy' 2>/dev/null; exit \$rc" || rc=$?
[ $rc -ne 0 ] || { cat "$WORK/full.log"; fail "run with a full disk exited 0"; }
[ $rc -lt 128 ] || fail "crashed (exit $rc)"
grep -q "not enough free disk space" "$WORK/full.log" || { cat "$WORK/full.log"; fail "no clear disk-full error"; }
[ -f "$WORK/ckpt_copy/step_00000002/manifest.json" ] || fail "the previous checkpoint is gone"
[ ! -e "$WORK/ckpt_copy/step_00000004" ] || fail "a checkpoint was committed on a full disk"
"$TRAIN" export "$WORK/ckpt_copy/step_00000002" --out "$WORK/hf" > /dev/null || fail "previous checkpoint is corrupt"
# The need is exact: shard files and manifest of step 2, each in whole 4 KiB blocks, + 1 block.
blocks() { echo $(( ($1 + 4095) / 4096 * 4096 )); }
shard=$(stat -c %s "$WORK/ckpt_copy/step_00000002/shard_00000.bin")
manifest=$(stat -c %s "$WORK/ckpt_copy/step_00000002/manifest.json")
expect=$(( 2 * $(blocks $shard) + $(blocks $manifest) + 4096 ))
grep -q "need $expect bytes (.*2 shard file(s) of $shard bytes + the manifest, in 4096-byte blocks)" "$WORK/full.log" \
  || { grep 'not enough' "$WORK/full.log"; fail "the need is not the exact $expect bytes"; }
echo "ok: $(grep -m1 -o 'not enough free disk space.*' "$WORK/full.log" | cut -c1-240)"
