#!/usr/bin/env bash
# The GPU path's checks, for a person on a machine with 1 to 8 NVIDIA GPUs and a CUDA build of
# PyTorch >= 2.7 (pip, C++11 ABI) as its python3, plus either the Debian packages of `make deps`
# or the folder of `tests/gpu/fetch_build_deps.sh download` (gpu-deps/, carried along).
# Its checks ran once, through tests/gpu/one_command.sh, on one H200 (2026-11-27,
# docs/gpu-runs/2026-11-27-h200/); CI has no GPU (`make gpu-check` only compiles the NCCL path;
# ctests run the scripts' non-GPU parts). Read docs/trainer.md "On a GPU machine" first.
#
# Usage: tests/gpu/run_gpu_checks.sh [OUT_DIR]      (default: gpu-checks-<date>)
# Builds this repository against the machine's torch in build-gpu/ (tests/gpu/build_on_gpu.sh),
# then runs, in this order, each writing OUT_DIR/<check>/validation.json
# ({"check", "passed", "tolerance", "entries": [{quantity, reference, measured, rel_error}],
# "provenance": {gpus, torch, trainer_commit, paths}}: tests/gpu/gpu_record.py):
#   nccl-one-rank        a one-rank NCCL group through the flat all-gather and reduce-scatter
#                        in bf16, then one FSDP rank in bf16 over it against the CPU reference
#   gloo-cuda-two-ranks  two ranks on one GPU over Gloo with CUDA tensors, against the CPU reference
#   checkpoint-resume    min(N,2) GPU ranks (NCCL when 2): 8 steps straight; 8 steps saving at 4
#                        and 8, then a resume from step 4 to 8; losses of steps 5..8 must agree
#   parity-<strategy>    N ≥ 2: N GPU ranks over NCCL against the CPU reference on the same global
#                        batch (full_shard, shard_grad_op; hybrid_shard when N ≥ 4 and even)
#   train-<model>        tests/gpu/gpu_train_check.sh: bf16 full_shard runs on one GPU of
#                        llama3.2-1b and the largest Llama shape that fits (SHARDCAST_GPU_STEPS
#                        steps, default 300) against the plan; prints the targets met / not met
#   bench-vs-fsdp2       trainer/bench/bench_vs_fsdp2.py on train-llama3.2-1b's run.toml:
#                        OUT_DIR/bench-vs-fsdp2/{table.txt, result.json}
#   kernels              shardcast-train microbench --gpu: OUT_DIR/kernels/kernels.csv
# Exit: 0 all checks passed, 1 a check failed or could not run, 3 no GPU (build_on_gpu.sh).
# Environment: SHARDCAST_GPU_HARDWARE (hardware preset for MFU and the plans; default
#   H100-80GB-SXM, H200-141GB-SXM on an H200), SHARDCAST_GPU_STEPS (default 300),
#   SHARDCAST_GPU_ONLY (space-separated check names: run only those, after the build),
#   SHARDCAST_GPU_BUILD (`reuse`: no build; build-gpu/ already holds shardcast-train and
#   gpu_smoke, as tests/gpu/one_command.sh leaves it), PYTHON (default python3), JOBS (build
#   parallelism; default nproc).
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-gpu-checks-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
py="${PYTHON:-python3}"
hw="${SHARDCAST_GPU_HARDWARE:-H100-80GB-SXM}"
fail() { echo "run_gpu_checks: $*" >&2; exit 1; }

# The build refuses (exit 3) without an NVIDIA GPU and a CUDA torch, before building anything.
build="$src/build-gpu"
set +e
if [ "${SHARDCAST_GPU_BUILD:-}" = reuse ]; then
  [ -x "$build/shardcast-train" ] && [ -x "$build/gpu_smoke" ] || fail "SHARDCAST_GPU_BUILD=reuse: no $build/shardcast-train and gpu_smoke"
  echo "build_on_gpu: reused $build (SHARDCAST_GPU_BUILD=reuse), torch $("$py" -c 'import torch; print(torch.__version__)')" > "$out/build.log"
  rc=0
else
  bash "$src/tests/gpu/build_on_gpu.sh" --build-dir "$build" --jobs "${JOBS:-$(nproc)}" > "$out/build.log" 2>&1
  rc=$?
fi
set -e
if [ "$rc" -ne 0 ]; then tail -30 "$out/build.log" >&2; echo "run_gpu_checks: build_on_gpu.sh exit $rc (log: $out/build.log)" >&2; exit "$rc"; fi
n=$(nvidia-smi -L | grep -c '^GPU ' || true)
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then n=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .); fi
[ "$n" -le 8 ] || n=8
if [ -z "${SHARDCAST_GPU_HARDWARE:-}" ] && nvidia-smi -L | grep -q H200; then hw=H200-141GB-SXM; fi
echo "run_gpu_checks: $n GPU(s), $(grep '^build_on_gpu: .*torch' "$out/build.log"), output in $out"
bin="$build/shardcast-train"
"$bin" tokenize --out "$out/corpus.bin" "$src"/docs/*.md "$src"/shared/*.h "$src"/trainer/*/*.h > /dev/null

export out
failed=0
check() {  # name, command...: runs it, counts a failure
  local name=$1; shift
  if [ -n "${SHARDCAST_GPU_ONLY:-}" ] && ! grep -qw -- "${name%%-*}" <<<"$SHARDCAST_GPU_ONLY" \
     && ! grep -qw -- "$name" <<<"$SHARDCAST_GPU_ONLY"; then echo "== $name: skipped (SHARDCAST_GPU_ONLY)"; return 0; fi
  echo "== $name"
  if "$@" > "$out/$name.log" 2>&1; then tail -1 "$out/$name.log"; else echo "FAILED ($out/$name.log)"; tail -20 "$out/$name.log"; failed=$((failed + 1)); fi
}

# gpu_smoke's checks through gpu_record.py: each validation.json then names the GPU, driver,
# torch, trainer commit and the path it took, or the check does not pass.
record="$src/tests/gpu/gpu_record.py"
check nccl-one-rank python3 "$record" smoke "$build/gpu_smoke" nccl-one-rank "$out/nccl-one-rank"
check gloo-cuda-two-ranks python3 "$record" smoke "$build/gpu_smoke" gloo-cuda-two-ranks "$out/gloo-cuda-two-ranks"

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
  local rc=0
  "$py" - "$@" <<'PY' || rc=1
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
  # The record's provenance, with the path from the measured run's run_report.json.
  python3 "$record" stamp "$out/$1/validation.json" --run-report "$(dirname "$4")/run_report.json" || rc=1
  return "$rc"
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

# (b) bf16 training runs against the plan (one GPU, world size 1, full_shard).
check train bash "$src/tests/gpu/gpu_train_check.sh" "$build" "$out/train" --corpus "$out/corpus.bin" \
  --steps "${SHARDCAST_GPU_STEPS:-300}" --hardware "$hw"
[ -f "$out/train.log" ] && grep -E '^(train-|  )' "$out/train.log" || true   # the tables and targets
# (c) the same model and batch under PyTorch FSDP2, paired rounds.
fsdp2() {
  local cfg="$out/train/train-llama3.2-1b/emit/run.toml"
  [ -f "$cfg" ] || { echo "no $cfg (the train check writes it)"; return 1; }
  mkdir -p "$out/bench-vs-fsdp2"
  "$py" "$src/trainer/bench/bench_vs_fsdp2.py" --build "$build" --config "$cfg" --rounds 3 --steps 50 \
    --out "$out/bench-vs-fsdp2/result.json" | tee "$out/bench-vs-fsdp2/table.txt"
}
check bench-vs-fsdp2 fsdp2
# (d) kernel ceilings.
kernels() { mkdir -p "$out/kernels" && "$bin" microbench --gpu --out "$out/kernels/kernels.csv"; }
check kernels kernels

echo "run_gpu_checks: $failed check(s) failed; results under $out"
[ "$failed" -eq 0 ]
