#!/usr/bin/env bash
# Most checks of tests/gpu/run_gpu_checks.sh in ONE command of a lent GPU machine whose commands
# stop after a few minutes and whose device time is scarce (docs/trainer.md "On a GPU machine").
#
# What it is: builds with tests/gpu/build_on_gpu.sh (make -k: every compile error, not the
# first), and while the build runs, times PyTorch FSDP2 alone on PREP_DIR/run.toml (the FSDP2
# side of bench_vs_fsdp2.py under the build's CPU load: a smoke run, not a comparison). Then
# runs the checks in the order of their worth, each under a time cap taken from what is left of
# BUDGET_S: nccl-one-rank, fused-adamw (gpu_smoke), allocator-trace (the caching allocator's
# trace of 6 steps of each prepared plan, expandable segments off and on), train
# (gpu_train_check.sh), checkpoint-resume (run_gpu_checks.sh's, on the build made here),
# kernels (microbench --gpu), bench-vs-fsdp2, gloo-cuda-two-ranks. A check past its cap gets
# its threads' stacks written (OUT's NAME.stacks, eu-stack from gpu-deps/) before it is stopped. When the build fails it packs the machine's torch headers
# instead (OUT_DIR/torch-include.tar.xz.*), so compile errors can be fixed on a machine without
# that torch (SHARDCAST_TORCH_INCLUDE=DIR make gpu-check). Everything else it wrote is packed in
# OUT_DIR/results.tar.gz (logs, metrics, validation.json files, kernels.csv; no corpus).
# What it is not: run_gpu_checks.sh, which also runs checkpoint-resume and the N-GPU parity
# checks, with no caps.
#
# Usage: tests/gpu/one_command.sh OUT_DIR PREP_DIR [BUDGET_S]
#   OUT_DIR   where the packed results go (the device tool's $OUT)
#   PREP_DIR  made here by `tests/gpu/one_command.sh --prepare PREP_DIR HARDWARE`: corpus.bin,
#             the llama3.2-1b run.toml gpu_train_check.sh would emit (data.path relative to
#             PREP_DIR), the planner binary `shardcast` (no LibTorch; built here, BUILD=DIR) and
#             `commit` (this checkout's HEAD, "-dirty" when it differs; every record names it)
#   BUDGET_S  seconds this command may take in all (default 540; at most 570: the device tool
#             stops a command at 600 s, and results are packed only at the end)
# Environment: NVIDIA_SMI (default nvidia-smi), SHARDCAST_GPU_STEPS (train steps, default 300,
#   issue 55's length: gpu_record.py fails a shorter run; 300 steps of both shapes take about
#   200 s of the plan's steps, so the train check wants a call of its own:
#   SHARDCAST_GPU_ONLY=train first, then the rest right after on the warm machine, whose build
#   outputs stay),
#   SHARDCAST_GPU_ONLY (space-separated check names: only those, in the order above; default
#   all but fused-adamw, allocator-trace and checkpoint-resume, the first call's set),
#   SHARDCAST_FSDP2_ROUNDS (2), SHARDCAST_FSDP2_STEPS (20), SHARDCAST_FSDP2_COMPILE (1: FSDP2 compiled
#   per block; 0 eager), SHARDCAST_FSDP2_LOSS_CURVE (50: steps of both from the same weights and
#   tokens, loss by loss), SHARDCAST_FSDP2_SHAPE (1b; 8b: the prepared 8B shape), JOBS (build
#   parallelism, default nproc).
# Exit: 0 built and every check that ran passed; 1 otherwise; 2 usage; 3 no GPU.
# Ran on one H200 on 2026-11-27 (docs/gpu-runs/2026-11-27-h200/ and -h200-b/); ctest
# gpu.train_check_plan_only runs --prepare and the refusals.
set -uo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
usage() { sed -n '2,41p' "$0" >&2; exit 2; }

if [ "${1:-}" = --prepare ]; then   # here, without a GPU: the carried inputs
  [ $# -eq 3 ] || usage
  prep="$2" hw="$3" build="${BUILD:-$src/build}"
  # The GPU machine builds with the Debian packages carried in gpu-deps/ (no package registry
  # there): without them its build fails after the loan has started.
  deps="${SHARDCAST_GPU_DEPS:-$src/gpu-deps}"   # where build_on_gpu.sh looks (tests name another)
  ls "$deps"/*.deb >/dev/null 2>&1 || { echo "one_command: --prepare: no $deps/*.deb: run" \
    "tests/gpu/fetch_build_deps.sh download first (and carry gpu-deps with PREP_DIR)" >&2; exit 1; }
  mkdir -p "$prep" && prep="$(cd "$prep" && pwd)"
  # Subword tokens (issue 55, "real text"): a SentencePiece model of 4000 pieces trained here on
  # docs/*.md (trainer/data/subword_tokenizer.h), then the docs and headers encoded with it.
  "$build/shardcast-train" train-tokenizer --out "$prep/tokenizer.model" --vocab 4000 "$src"/docs/*.md >/dev/null || exit 1
  "$build/shardcast-train" tokenize --sentencepiece "$prep/tokenizer.model" --out "$prep/corpus.bin" \
    "$src"/docs/*.md "$src"/shared/*.h "$src"/trainer/*/*.h > "$prep/corpus.txt" || exit 1
  bash "$src/tests/gpu/gpu_train_check.sh" "$build" "$prep/plan" --corpus "$prep/corpus.bin" --hardware "$hw" \
    --steps "${SHARDCAST_GPU_STEPS:-300}" --plan-only || exit 1
  sed "s|^path = \".*corpus.bin\"|path = \"corpus.bin\"|" "$prep/plan/train-llama3.2-1b/emit/run.toml" > "$prep/run.toml"
  # More shapes of the allocation sequence for allocator-trace: each chosen model with full
  # activation checkpointing at micro-batches 2 and 8, where the plan fits (emit exits 3 where
  # it does not: skipped), emitted as gpu_train_check.sh emits its runs.
  while IFS=$'\t' read -r name _; do
    model="$name"; [ -f "$prep/plan/$name.toml" ] && model="$prep/plan/$name.toml"
    for mb in 2 8; do
      "$build/shardcast" emit --model "$model" --hardware "$hw" --gpus 1 --seq-len 2048 --strategy full_shard \
        --micro-batch "$mb" --grad-accum 1 --ac full --param-dtype bf16 --reduce-dtype fp32 --runtime shardcast-train \
        --steps 6 --data "$prep/corpus.bin" --out "$prep/plan/alloc-$name-mb$mb-acfull/emit" > /dev/null 2>&1
      case $? in
        0) ;; 3) rm -rf "$prep/plan/alloc-$name-mb$mb-acfull"; echo "one_command: $name micro_batch $mb, ac full: does not fit $hw (not traced)" ;;
        *) echo "one_command: emit of $name micro_batch $mb, ac full failed" >&2; exit 1 ;;
      esac
    done
  done < "$prep/plan/models.txt"
  # The planner needs no LibTorch: built here, it saves the GPU machine ~54 translation units
  # (it links libfmt and libtomlplusplus, which gpu-deps/ carries).
  cp "$build/shardcast" "$prep/shardcast"
  # The plans' run.toml files name files under PREP_DIR by this machine's path: the GPU
  # machine replaces it by its own.
  echo "$prep" > "$prep/prepared_at"
  # The hardware the plans were fixed for: the train check on the GPU machine plans with it, and
  # says so when the machine's GPU is another.
  echo "$hw" > "$prep/hardware"
  # The commit the lent machine builds (it gets the tree without .git): every record names it
  # (tests/gpu/gpu_record.py reads SHARDCAST_COMMIT, exported from this file below).
  head="$(git -C "$src" rev-parse HEAD 2>/dev/null)" || { echo "one_command: --prepare needs the git checkout (commit)" >&2; exit 1; }
  [ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] || head="$head-dirty"
  echo "$head" > "$prep/commit"
  echo "one_command: $prep ready ($(du -sh "$prep" | cut -f1))"
  exit 0
fi

[ $# -ge 2 ] && [ $# -le 3 ] || usage
out="$1" prep="$2" budget="${3:-540}"
[[ "$budget" =~ ^[1-9][0-9]*$ ]] && [ "$budget" -le 570 ] \
  || { echo "one_command: BUDGET_S '$budget': a whole number of seconds, at most 570 (the device tool stops a command at 600 s, before the results are packed)" >&2; exit 2; }
[ -f "$prep/run.toml" ] && [ -f "$prep/corpus.bin" ] || { echo "one_command: $prep: no run.toml and corpus.bin (--prepare)" >&2; exit 2; }
command -v "${NVIDIA_SMI:-nvidia-smi}" >/dev/null && "${NVIDIA_SMI:-nvidia-smi}" -L 2>/dev/null | grep -q '^GPU ' \
  || { echo "one_command: refusing: no NVIDIA GPU (nvidia-smi -L lists none); --prepare runs without one" >&2; exit 3; }
mkdir -p "$out" && out="$(cd "$out" && pwd)"
prep="$(cd "$prep" && pwd)"
t0=$(date +%s)
[ -f "$prep/commit" ] && export SHARDCAST_COMMIT="$(cat "$prep/commit")"
left() { echo $((budget - ($(date +%s) - t0))); }
work="$src/gpu-results"   # packed into OUT_DIR at the end (.gitignore)
rm -rf "$work" && mkdir -p "$work"
# The run.toml's data path, absolute on this machine.
sed "s|^path = \"corpus.bin\"|path = \"$prep/corpus.bin\"|" "$prep/run.toml" > "$work/run-llama3.2-1b.toml"

{ nvidia-smi; nvidia-smi -q | grep -iE 'product name|driver version|cuda version|power limit|max clocks' ; nproc; free -g
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
} > "$work/machine.txt" 2>&1

only="${SHARDCAST_GPU_ONLY:-nccl-one-rank train kernels bench-vs-fsdp2 gloo-cuda-two-ranks}"
selected() { grep -qw -- "$1" <<<"$only"; }
# FSDP2 alone during the build (its own NCCL port), when bench-vs-fsdp2 is to run.
fsdp2_pid=""
if selected bench-vs-fsdp2; then
# exec: the background pid is timeout's, which passes a kill on to python (a failed build stops it).
( cd "$src/trainer/bench" && exec timeout 240 python3 bench_vs_fsdp2.py --mode fsdp2 --config "$work/run-llama3.2-1b.toml" \
    --steps 12 --result "$work/fsdp2-during-build.json" --port 29611 > "$work/fsdp2-during-build.log" 2>&1 ) &
fsdp2_pid=$!
fi

echo "one_command: building ($(left) s left)"
targets=(--target shardcast-train --target gpu_smoke)
[ -x "$prep/shardcast" ] || targets+=(--target shardcast)
MAKEFLAGS=-k timeout $(( $(left) - 60 )) bash "$src/tests/gpu/build_on_gpu.sh" --jobs "${JOBS:-$(nproc)}" \
  "${targets[@]}" > "$work/build.log" 2>&1
build_rc=$?
[ -x "$prep/shardcast" ] && [ -d "$src/build-gpu" ] && cp "$prep/shardcast" "$src/build-gpu/shardcast"
cp "$src/build-gpu/build.log" "$work/make.log" 2>/dev/null
cp "$src/build-gpu/configure.log" "$work/configure.log" 2>/dev/null
failed=0
pack() {
  tar -C "$src" --exclude='*.bin' --exclude='ckpts' --exclude='resumed-ckpts' --exclude='*.safetensors' \
    -czf "$out/results.tar.gz" gpu-results
  echo "one_command: $failed failed; results in $out/results.tar.gz ($(($(date +%s) - t0)) s)"
}
if [ "$build_rc" -ne 0 ]; then
  # No check will run: FSDP2's timing during the build is not waited for (up to 240 s of the loan).
  [ -z "$fsdp2_pid" ] || kill -- "$fsdp2_pid" 2>/dev/null
  echo "one_command: build failed (exit $build_rc):"
  grep -E 'error|Error' "$work/make.log" 2>/dev/null | head -40 || true
  tail -n 15 "$work/build.log"   # build_on_gpu.sh's own refusals (no make.log then)
  inc="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "include"))')"
  tar -C "$(dirname "$inc")" -cf - include | xz -T0 -6 | split -b 15M - "$out/torch-include.tar.xz."
  failed=1; pack; exit 1
fi
echo "one_command: built at $(($(date +%s) - t0)) s"
[ -z "$fsdp2_pid" ] || { wait "$fsdp2_pid"; echo "fsdp2 during build: exit $?" >> "$work/fsdp2-during-build.log"; }
# The carried packages' libraries (libfmt, libtomlplusplus) for the binaries and scripts below.
[ -f "$src/gpu-deps/env.sh" ] && . "$src/gpu-deps/env.sh"
# eu-stack (elfutils, carried in gpu-deps/) after the machine's own tools.
[ -x "$src/gpu-deps/prefix/usr/bin/eu-stack" ] && export PATH="$PATH:$src/gpu-deps/prefix/usr/bin"

# The checks, each capped by what is left (minus 20 s for packing).
export SHARDCAST_GPU_STEPS="${SHARDCAST_GPU_STEPS:-300}"
bin="$src/build-gpu/shardcast-train"
# Each check's weight: its cap is its weight's share of what is left, among the selected
# checks not yet run (one check alone gets all of it), and at least 30 s; a selected check
# with under 10 s left is not run and counts as failed.
weights="nccl-one-rank:5 fused-adamw:3 allocator-trace:25 train:45 checkpoint-resume:10 kernels:25 bench-vs-fsdp2:40 gloo-cuda-two-ranks:10"
capped() {  # name, command...
  local name=$1 w=0 sum=0 seen=0 nw; shift
  selected "$name" || { echo "== $name: skipped (SHARDCAST_GPU_ONLY)"; return; }
  for nw in $weights; do
    [ "${nw%%:*}" = "$name" ] && { seen=1; w=${nw##*:}; }
    [ "$seen" = 1 ] && selected "${nw%%:*}" && sum=$((sum + ${nw##*:}))
  done
  # At least 30 s (or all that is left): a light check's share of a long list was under its
  # start-up time (fused-adamw got 8 s of 368 on 2026-11-27 and was skipped).
  local rest=$(( $(left) - 20 )) cap
  cap=$(( rest * w / sum )); [ "$cap" -lt 30 ] && cap=$(( rest < 30 ? rest : 30 ))
  if [ "$cap" -lt 10 ]; then echo "== $name: NOT RUN (no time left)"; failed=$((failed + 1)); return; fi
  echo "== $name (cap $cap s)"
  # Its own session (setsid: session id = its pid), so that every process it starts can be
  # found and stopped at the cap.
  setsid "$@" > "$work/$name.log" 2>&1 &
  local pid=$! t=0 rc
  while kill -0 "$pid" 2>/dev/null && [ "$t" -lt "$cap" ]; do sleep 1; t=$((t + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    if command -v eu-stack >/dev/null; then
      for p in $(pgrep -s "$pid"); do echo "== pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline")"; eu-stack -p "$p"; done \
        > "$work/$name.stacks" 2>&1
    fi
    kill -KILL -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    echo "FAILED: stopped at its cap of $cap s (stacks: $name.stacks)"; tail -15 "$work/$name.log"; failed=$((failed + 1))
    return
  fi
  wait "$pid"; rc=$?
  if [ "$rc" -eq 0 ]; then tail -3 "$work/$name.log"
  else echo "FAILED (exit $rc)"; tail -15 "$work/$name.log"; failed=$((failed + 1)); fi
}
# The plans' run.toml files of PREP_DIR with this machine's paths.
root_here="$(cat "$prep/prepared_at" 2>/dev/null || echo "$prep")"
allocator_trace() {  # short runs of each prepared plan, the allocator's trace of each
  local d="$work/allocator-trace" m es
  mkdir -p "$d"
  for m in $(cd "$prep/plan" && { ls -d train-* 2>/dev/null; ls -d alloc-* 2>/dev/null; }); do  # the train plans first
    [ -f "$prep/plan/$m/emit/run.toml" ] || continue
    sed "s|$root_here|$prep|g" "$prep/plan/$m/emit/run.toml" > "$d/$m.toml"
    for es in 0 1; do
      echo "== $m, expandable_segments $es"
      if [ "$es" = 1 ]; then export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True PYTORCH_ALLOC_CONF=expandable_segments:True
      else unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF; fi
      "$bin" run "$d/$m.toml" --steps 6 --metrics-dir "$d/$m-es$es" --allocator-trace "$d/$m-es$es.csv" || return 1
      "$src/build-gpu/shardcast" validate "$d/$m-es$es" || true
    done
  done
}
capped nccl-one-rank python3 "$src/tests/gpu/gpu_record.py" smoke "$src/build-gpu/gpu_smoke" nccl-one-rank "$work/nccl-one-rank"
capped fused-adamw python3 "$src/tests/gpu/gpu_record.py" smoke "$src/build-gpu/gpu_smoke" fused-adamw "$work/fused-adamw"
export -f allocator_trace; export work prep bin src root_here   # setsid runs programs, not functions
capped allocator-trace bash -c allocator_trace
# The train check plans with the hardware PREP_DIR was prepared for: the same planner binary and
# inputs, so the plans fixed before the loan (PREP_DIR/plan/). On another GPU than that (the
# device tool may lend an H200 for an H100) it plans for this one and says the plan was not fixed
# before the run: the check does not pass then.
prep_hw="$(cat "$prep/hardware" 2>/dev/null)"
here_hw=H100-80GB-SXM
# The list first: under pipefail, grep -q leaving early could fail the pipe on a match.
gpu_list="$("${NVIDIA_SMI:-nvidia-smi}" -L 2>/dev/null)"
grep -q H200 <<<"$gpu_list" && here_hw=H200-141GB-SXM
train_check() {
  bash "$src/tests/gpu/gpu_train_check.sh" "$src/build-gpu" "$work/train" --corpus "$prep/corpus.bin" \
    --steps "$SHARDCAST_GPU_STEPS" --hardware "$here_hw" || return 1
  if [ -n "$prep_hw" ] && [ "$prep_hw" != "$here_hw" ]; then
    echo "train: NOT MET: the plans were fixed for $prep_hw (--prepare), this machine is $here_hw: re-planned here"
    return 1
  fi
}
export -f train_check; export here_hw prep_hw
capped train bash -c train_check
[ -f "$work/train.log" ] && grep -E '^(train-|  )' "$work/train.log"
capped checkpoint-resume env SHARDCAST_GPU_BUILD=reuse SHARDCAST_GPU_ONLY=checkpoint-resume \
  bash "$src/tests/gpu/run_gpu_checks.sh" "$work/checkpoint-resume"
capped kernels "$bin" microbench --gpu --out "$work/kernels.csv"
cfg="$work/train/train-llama3.2-1b/emit/run.toml"; [ -f "$cfg" ] || cfg="$work/run-llama3.2-1b.toml"
# SHARDCAST_FSDP2_SHAPE=8b: the pairing and the loss curve on the prepared 8B shape (issue 55's
# "on the same shape" as the MFU target), from PREP_DIR's plan with this machine's paths.
if [ "${SHARDCAST_FSDP2_SHAPE:-1b}" = 8b ]; then
  m8="$(cd "$prep/plan" && ls -d train-llama3*-8b* 2>/dev/null | head -1)"
  if [ -n "$m8" ] && [ -f "$prep/plan/$m8/emit/run.toml" ]; then
    sed "s|$root_here|$prep|g" "$prep/plan/$m8/emit/run.toml" > "$work/run-$m8.toml" && cfg="$work/run-$m8.toml"
  else
    echo "one_command: SHARDCAST_FSDP2_SHAPE=8b: no 8B plan under $prep/plan (--prepare): pairing llama3.2-1b"
  fi
fi
# Issue 55 pairs with compiled FSDP2 (torch.compile per block, as torchtitan); SHARDCAST_FSDP2_COMPILE=0
# pairs with eager FSDP2, as the records of 2026-11-27 did.
fsdp2_compile=(--fsdp2-compile); [ "${SHARDCAST_FSDP2_COMPILE:-1}" = 0 ] && fsdp2_compile=()
capped bench-vs-fsdp2 python3 "$src/trainer/bench/bench_vs_fsdp2.py" --build "$src/build-gpu" --config "$cfg" \
  --rounds "${SHARDCAST_FSDP2_ROUNDS:-2}" --steps "${SHARDCAST_FSDP2_STEPS:-20}" "${fsdp2_compile[@]}" \
  --loss-curve "${SHARDCAST_FSDP2_LOSS_CURVE:-50}" --out "$work/bench-vs-fsdp2.json"
capped gloo-cuda-two-ranks python3 "$src/tests/gpu/gpu_record.py" smoke "$src/build-gpu/gpu_smoke" gloo-cuda-two-ranks \
  "$work/gloo-cuda-two-ranks"
pack
[ "$failed" -eq 0 ]
