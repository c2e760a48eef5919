#!/usr/bin/env bash
# The stack probes of docs/gpu-runs/2026-11-28-h200-stack/: tests/gpu/stack_probe.py on one GPU
# for each configuration below (PyTorch FSDP2 per block, pure bf16, SDPA at torch's default
# backend, per-block torch.compile where named), each under its own time cap.
#
# What it is: the measurements the planner's kempnerforge-profile predictions are compared with
# (docs/validation.md "Measured on one H200: the KempnerForge stack"). What it is not: a ctest (no
# GPU in CI); tests/gpu/gpu_scripts_test.sh checks that the probe refuses without CUDA.
# Usage: tests/gpu/stack_probes.sh OUT_DIR [NAME ...]   (default: the set STACK_PROBE_SET names,
#        h200 (default) or h100, in order)
#        STACK_PROBE_ARGS adds flags to every probe, e.g. "--gemm-shapes" (the GEMMs by shape, for
#        tests/gpu/gemm_shapes_vs_table.py).
# Writes OUT_DIR/NAME.json per configuration, OUT_DIR/probe.log and OUT_DIR/machine.txt.
# Exit: 0 when every named configuration wrote its JSON, 1 otherwise, 2 usage.
set -uo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -ge 1 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
out="$1"; shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1
k8b="--layers 32 --d-model 4096 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256"
declare -A args=(
  [k7b_mb2_compiled]="$k8b --seq-len 4096 --micro-batch 2 --ac full --compile --attention"
  [k7b_mb8_compiled]="$k8b --seq-len 4096 --micro-batch 8 --ac full --compile"
  [k7b_mb2_eager]="$k8b --seq-len 4096 --micro-batch 2 --ac full"
  [k13b24l_mb4_eager]="--layers 24 --d-model 5120 --heads 40 --kv-heads 8 --ffn 17920 --vocab 128256 --seq-len 4096 --micro-batch 4 --ac full"
  [llama2_7b_s2048_mb8_compiled]="--layers 32 --d-model 4096 --heads 32 --kv-heads 32 --ffn 11008 --vocab 32000 --seq-len 2048 --micro-batch 8 --ac full --compile --attention"
  [k7b_s8192_mb1_compiled]="$k8b --seq-len 8192 --micro-batch 1 --ac full --compile --attention"
  [llama32_1b_mb8_noac_compiled]="--layers 16 --d-model 2048 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 --tied --seq-len 2048 --micro-batch 8 --ac none --compile"
  [k8b16l_mb2_compiled]="--layers 16 --d-model 4096 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 --seq-len 4096 --micro-batch 2 --ac full --compile"
  [k8b16l_mb2_eager]="--layers 16 --d-model 4096 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 --seq-len 4096 --micro-batch 2 --ac full"
  [llama32_1b_mb8_noac_eager]="--layers 16 --d-model 2048 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 --tied --seq-len 2048 --micro-batch 8 --ac none"
)
# The H200 set (141 GB); the H100 set (80 GB) leaves out the 8B and 13B widths at 32 and 24 layers.
order="k7b_mb2_compiled k7b_mb8_compiled k7b_mb2_eager k13b24l_mb4_eager llama2_7b_s2048_mb8_compiled k7b_s8192_mb1_compiled llama32_1b_mb8_noac_compiled llama32_1b_mb8_noac_eager"
[ "${STACK_PROBE_SET:-h200}" = h100 ] && order="llama32_1b_mb8_noac_compiled llama32_1b_mb8_noac_eager llama2_7b_s2048_mb8_compiled k8b16l_mb2_compiled k8b16l_mb2_eager"
[ $# -gt 0 ] && order="$*"
for name in $order; do
  [ -n "${args[$name]:-}" ] || { echo "stack_probes: no configuration '$name' (have: $(echo ${!args[*]} | tr ' ' '\n' | sort | tr '\n' ' '))" >&2; exit 2; }
done
{ nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,clocks.max.mem,memory.total,driver_version --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$out/machine.txt" 2>&1
failed=0
for name in $order; do
  echo "== $name" | tee -a "$out/probe.log"
  # shellcheck disable=SC2086  # the configuration's flags split on purpose
  timeout "${STACK_PROBE_CAP_S:-150}" python3 "$src/tests/gpu/stack_probe.py" "$out/$name.json" --pure-bf16 ${args[$name]} ${STACK_PROBE_ARGS:-} \
    2>&1 | grep -v -e 'UserWarning: Warning: Profiler clears' -e '_warn_once(' | tee -a "$out/probe.log"
  [ -f "$out/$name.json" ] && grep -q '"run"' "$out/$name.json" || { echo "stack_probes: $name wrote no run" | tee -a "$out/probe.log"; failed=1; }
done
exit $failed
