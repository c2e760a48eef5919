#!/usr/bin/env bash
# ctest gpu.check_catches_broken_nccl_call: `make gpu-check` must fail on a broken NCCL call.
# Copies the sources gpu_check.sh needs (trainer/, shared/) to a temp tree, renames the
# reduce-scatter call inside NcclCollectives (compiled only under SHARDCAST_WITH_NCCL) to a
# member ProcessGroupNCCL does not have, and runs the check on that one file: it must exit
# non-zero and the compiler's error must name the injected call (so the failure is the
# injection, not a missing header). Exit 77 (ctest SKIP) when no CUDA toolkit is installed.
set -euo pipefail
src="$(cd "${1:?usage: gpu_check_test.sh SOURCE_DIR}" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/trainer" "$src/shared" "$tmp/"
f="$tmp/trainer/comm/collectives.cpp"
grep -q 'pg_->_reduce_scatter_base(out_shard, in_flat)' "$f" || {
  echo "gpu_check_test: the NCCL reduce-scatter call to break is not in collectives.cpp any more; update this test" >&2
  exit 1
}
sed -i 's/pg_->_reduce_scatter_base(out_shard, in_flat)/pg_->_reduce_scatter_base_broken(out_shard, in_flat)/' "$f"
set +e
out="$(bash "$src/tests/gpu/gpu_check.sh" --root "$tmp" trainer/comm/collectives.cpp 2>&1)"
rc=$?
set -e
if grep -q 'SKIPPED: no CUDA toolkit' <<<"$out"; then echo "$out"; exit 77; fi
if [ "$rc" -eq 0 ]; then
  echo "gpu_check_test: FAIL: gpu-check passed a broken NCCL call" >&2
  echo "$out" >&2
  exit 1
fi
if ! grep -q '_reduce_scatter_base_broken' <<<"$out"; then
  echo "gpu_check_test: FAIL: gpu-check failed, but not on the injected call:" >&2
  echo "$out" >&2
  exit 1
fi
echo "gpu_check_test: ok: gpu-check rejects the broken NCCL call (exit $rc)"
