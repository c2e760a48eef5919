#!/usr/bin/env bash
# The GPU path's checks, for a person on a machine with 1 to 8 NVIDIA GPUs, a CUDA build of
# PyTorch 2.x (pip, C++11 ABI) and the CUDA toolkit of the same major version (LibTorch's CMake
# config looks for it), plus the Debian packages of `make deps`. NEVER RUN by this project: its CI has no GPU (`make gpu-check` only
# compiles the NCCL path, and a ctest only parses this script). Read docs/trainer.md first.
#
# Usage: tests/gpu/run_gpu_checks.sh [OUT_DIR]      (default: gpu-checks-<date>)
# Builds this repository against the machine's torch (torch.utils.cmake_prefix_path) in
# build-gpu/, then runs, each writing OUT_DIR/<check>/validation.json
# ({"check", "passed", "tolerance", "entries": [{quantity, reference, measured, rel_error}]}):
#   nccl-one-rank        a one-rank NCCL group through the flat all-gather and reduce-scatter
#                        in bf16, then one FSDP rank in bf16 over it against the CPU reference
#   gloo-cuda-two-ranks  two ranks on one GPU over Gloo with CUDA tensors, against the CPU reference
#   checkpoint-resume    min(N,2) GPU ranks (NCCL when 2): 8 steps straight; 8 steps saving at 4
#                        and 8, then a resume from step 4 to 8; losses of steps 5..8 must agree
#   parity-<strategy>    N ≥ 2: N GPU ranks over NCCL against the CPU reference on the same global
#                        batch (full_shard, shard_grad_op; hybrid_shard when N ≥ 4 and even)
# Exit: 0 all checks passed, 1 a check failed or could not run.
# Environment: SHARDCAST_GPU_HARDWARE (hardware preset for MFU; default H100-80GB-SXM),
#   PYTHON (default python3), JOBS (build parallelism; default nproc).
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-gpu-checks-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
py="${PYTHON:-python3}"
hw="${SHARDCAST_GPU_HARDWARE:-H100-80GB-SXM}"
fail() { echo "run_gpu_checks: $*" >&2; exit 1; }

command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: this script needs NVIDIA GPUs"
n=$(nvidia-smi -L | grep -c '^GPU ' || true)
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then n=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .); fi
[ "$n" -ge 1 ] || fail "no GPU visible"
[ "$n" -le 8 ] || n=8
read -r prefix version cuda abi < <("$py" -c '
import torch
print(torch.utils.cmake_prefix_path, torch.__version__, int(torch.cuda.is_available()), int(torch.compiled_with_cxx11_abi()))') \
  || fail "$py cannot import torch (pip install torch, a CUDA build)"
[ "$cuda" = 1 ] || fail "torch $version has no CUDA (or sees no GPU)"
[ "$abi" = 1 ] || fail "torch $version was built with the pre-C++11 ABI; the project links Debian's fmt/CLI11 (C++11 ABI): use torch >= 2.7 or a cxx11-abi LibTorch"
echo "run_gpu_checks: $n GPU(s), torch $version, output in $out"

# ProcessGroupNCCL.hpp includes <nccl.h>: pip wheels keep it in the nvidia-nccl package.
nccl_flags=""
if ! [ -f /usr/include/nccl.h ] && ! ls /usr/local/cuda*/include/nccl.h >/dev/null 2>&1; then
  nccl_inc=$("$py" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null || true)
  [ -n "$nccl_inc" ] && [ -f "$nccl_inc/nccl.h" ] || fail "no nccl.h (install the NCCL headers or pip's nvidia-nccl)"
  nccl_flags="-isystem $nccl_inc"
fi
build="$src/build-gpu"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DSHARDCAST_BUILD_GUI=OFF \
  -DCMAKE_CXX_FLAGS="$nccl_flags" \
  > "$out/cmake.log" 2>&1 || { cat "$out/cmake.log"; fail "cmake failed"; }
grep -q 'LibTorch CUDA/NCCL path = ON' "$out/cmake.log" || fail "cmake did not find CUDA in $prefix (see $out/cmake.log)"
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target shardcast-train gpu_smoke > "$out/build.log" 2>&1 \
  || { tail -50 "$out/build.log"; fail "build failed (log: $out/build.log)"; }
bin="$build/shardcast-train"
"$bin" tokenize --out "$out/corpus.bin" "$src"/docs/*.md "$src"/shared/*.h "$src"/trainer/*/*.h > /dev/null

export out
failed=0
check() {  # name, command...: runs it, counts a failure
  local name=$1; shift
  echo "== $name"
  if "$@" > "$out/$name.log" 2>&1; then tail -1 "$out/$name.log"; else echo "FAILED ($out/$name.log)"; tail -20 "$out/$name.log"; failed=$((failed + 1)); fi
}

check nccl-one-rank "$build/gpu_smoke" nccl-one-rank "$out/nccl-one-rank"
check gloo-cuda-two-ranks "$build/gpu_smoke" gloo-cuda-two-ranks "$out/gloo-cuda-two-ranks"

# A run.toml for the GPU runs: tiny-2l, fp32 (so the CPU reference is a tight oracle).
config() {  # file, ranks, strategy, extra TOML
  cat > "$1" <<TOML
[model]
preset = "tiny-2l"
[cluster]
hardware = "$hw"
nodes = 1
gpus_per_node = $2
[parallelism]
sharding_strategy = "$3"
hsdp_shard_size = $([ "$3" = hybrid_shard ] && echo 2 || echo 0)
max_inflight_all_gathers = 2
[training]
micro_batch = 8
seq_len = 128
grad_accum = 1
steps = 10
seed = 1234
max_grad_norm = 1.0
[activation_checkpointing]
mode = "none"
[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
[optimizer]
name = "adamw"
lr = 3e-3
[lr_schedule]
warmup_steps = 3
decay = "cosine"
[data]
path = "$out/corpus.bin"
[metrics]
dir = "$out/runs"
log_freq = 1
[comm]
timeout_seconds = 120
backend = "nccl"
$4
TOML
}

# OUT_DIR/<name>/validation.json from two metrics.jsonl:
# name, tolerance, reference file, measured file, first step compared.
compare_losses() {
  "$py" - "$@" <<'PY'
import json, sys, os
name, tol, ref, got, first = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
def losses(p):
    return {r["step"]: r["loss"] for r in map(json.loads, open(p))}
r, g = losses(ref), losses(got)
steps = [s for s in sorted(g) if s >= first]
entries, ok = [], bool(steps)
for s in steps:
    if s not in r:
        ok = False; continue
    err = abs(g[s] - r[s]) / abs(r[s])
    ok = ok and err <= tol
    entries.append({"quantity": f"loss_step_{s}", "reference": r[s], "measured": g[s], "rel_error": err})
d = os.path.join(os.environ["out"], name)
os.makedirs(d, exist_ok=True)
json.dump({"schema": 1, "check": name, "passed": ok, "tolerance": tol, "entries": entries},
          open(os.path.join(d, "validation.json.tmp"), "w"), indent=2)
os.replace(os.path.join(d, "validation.json.tmp"), os.path.join(d, "validation.json"))
print(f"{name}: {'PASSED' if ok else 'FAILED'} (tolerance {tol:.0e}, {len(entries)} steps) -> {d}/validation.json")
sys.exit(0 if ok else 1)
PY
}

# Checkpoint save and resume on min(N,2) GPUs. Tolerance 1e-4 relative: the same kernels run
# in both, but CUDA's embedding backward accumulates with atomics (run-to-run order differs).
ck_ranks=$([ "$n" -ge 2 ] && echo 2 || echo 1)
ck() {
  local d="$out/runs/ckpt"; mkdir -p "$d"
  config "$d/straight.toml" "$ck_ranks" full_shard ""
  # Same training.steps in every run: the lr schedule depends on it.
  config "$d/save.toml" "$ck_ranks" full_shard "[checkpoint]
dir = \"$d/ckpts\"
interval = 4
keep = 2"
  config "$d/resume.toml" "$ck_ranks" full_shard "[checkpoint]
dir = \"$d/resumed-ckpts\"
resume_from = \"$d/ckpts/step_00000004\""
  "$bin" launch --nproc-per-node "$ck_ranks" "$d/straight.toml" --steps 8 --metrics-dir "$d/straight" &&
  "$bin" launch --nproc-per-node "$ck_ranks" "$d/save.toml" --steps 8 --metrics-dir "$d/save" &&
  "$bin" launch --nproc-per-node "$ck_ranks" "$d/resume.toml" --steps 8 --metrics-dir "$d/resumed" &&
  compare_losses checkpoint-resume 1e-4 "$d/straight/metrics.jsonl" "$d/resumed/metrics.jsonl" 5
}
check checkpoint-resume ck

# N-GPU parity against the CPU reference (the plain single-process path on the same global
# batch). Tolerance 1e-4: cuBLAS (TF32 off: LibTorch's default for matmul) and the CPU BLAS
# sum in different orders (~1e-6 per step, see tests/trainer/fsdp_parity_test.cpp), fed back
# through 10 AdamW steps.
if [ "$n" -ge 2 ]; then
  strategies="full_shard shard_grad_op"
  [ "$n" -ge 4 ] && [ $((n % 2)) -eq 0 ] && strategies="$strategies hybrid_shard"
  for s in $strategies; do
    par() {
      local d="$out/runs/parity-$1"; mkdir -p "$d"
      config "$d/run.toml" "$n" "$1" ""
      "$bin" launch --nproc-per-node "$n" "$d/run.toml" --metrics-dir "$d/gpu" &&
      "$bin" run "$d/run.toml" --reference --metrics-dir "$d/cpu-reference" &&
      compare_losses "parity-$1" 1e-4 "$d/cpu-reference/metrics.jsonl" "$d/gpu/metrics.jsonl" 1
    }
    check "parity-$s" par "$s"
  done
else
  echo "== parity: skipped (1 GPU; needs 2 or more)"
fi

echo "run_gpu_checks: $failed check(s) failed; results under $out"
[ "$failed" -eq 0 ]
