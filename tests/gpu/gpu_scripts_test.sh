#!/usr/bin/env bash
# ctests of the GPU scripts' parts that run without a GPU (tests/gpu/CMakeLists.txt):
#   gpu_scripts_test.sh SOURCE_DIR build       build_on_gpu.sh: usage errors exit 2 naming the
#       flag; no nvidia-smi, no GPU listed, torch without CUDA each exit 3 before any build
#       (stub nvidia-smi and a stub `torch` module on PYTHONPATH).
#   gpu_scripts_test.sh SOURCE_DIR deps        fetch_build_deps.sh unpack: a .deb built here is
#       unpacked into the prefix and env.sh names the prefix, the stub torch's CMake folder and
#       nccl.h; an empty folder and an unknown mode are refused.
#   gpu_scripts_test.sh SOURCE_DIR fsdp2       trainer/bench/bench_vs_fsdp2.py compiles, and
#       refuses a torch older than 2.6 (stub torch 1.13) with exit 2 naming the version;
#       tests/gpu/host_time_probe.py and stack_probe.py compile and exit 1 on a torch without CUDA,
#       writing nothing; stack_probes.sh without an OUT_DIR, or with an unknown configuration, exits 2.
#   gpu_scripts_test.sh SOURCE_DIR gemms       tests/gpu/fsdp2_probe.py gemm_by_shape on stand-in
#       profiler events, and gemm_shapes_vs_table.py on a synthetic probe against the shipped H100
#       kernel table (a matched shape's ratio, the totals, a probe without shapes exit 1, usage exit 2);
#       float8_linear_probe.py --compare of a synthetic rowwise grid against torchao's shipped one,
#       and its refusals (no CUDA exit 1, torch < 2.5 or bad flags exit 2, nothing written).
#   gpu_scripts_test.sh SOURCE_DIR plan BUILD_DIR   gpu_train_check.sh --plan-only picks two
#       models (llama3.2-1b and the largest shape that fits) with full_shard run.tomls whose
#       plans are within 90 % of the GPU's memory; it refuses to train without a GPU (exit 3).
#       tests/gpu/one_command.sh --prepare writes its folder; without a GPU the command exits 3.
#   gpu_scripts_test.sh SOURCE_DIR microbench SHARDCAST_TRAIN   a CPU build's
#       `microbench --gpu` exits 2 saying it has no CUDA; `--out`, `--models` without `--gpu` exit 2.
set -euo pipefail
src="$(cd "${1:?usage: gpu_scripts_test.sh SOURCE_DIR build|deps|fsdp2}" && pwd)"
what="${2:?usage: gpu_scripts_test.sh SOURCE_DIR build|deps|fsdp2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
# expect NAME WANT_RC PATTERN command...: runs it, checks its exit code and that its output
# matches PATTERN (grep -E).
expect() {
  local name=$1 want=$2 pat=$3; shift 3
  set +e
  out="$("$@" 2>&1)"
  rc=$?
  set -e
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pat" <<<"$out"; then
    echo "FAIL: $name: exit $rc (want $want), output must match /$pat/:" >&2
    echo "$out" | tail -15 >&2
    failures=$((failures + 1))
  else
    echo "ok: $name (exit $rc)"
  fi
}
# A stub `torch` module: version $1, cuda.is_available() $2.
stub_torch() {
  mkdir -p "$tmp/py/torch" "$tmp/torchcmake"
  cat > "$tmp/py/torch/__init__.py" <<PY
__version__ = "$1"
class cuda:
    @staticmethod
    def is_available():
        return $2
class utils:
    cmake_prefix_path = "$tmp/torchcmake"
def compiled_with_cxx11_abi():
    return True
PY
}
py="${PYTHON:-python3}"

case "$what" in
build)
  b="$src/tests/gpu/build_on_gpu.sh"
  expect "unknown flag" 2 "unknown argument '--bogus'" bash "$b" --bogus
  expect "--jobs 0" 2 "--jobs 0: must be an integer" bash "$b" --jobs 0
  expect "--jobs without value" 2 "--jobs needs a value" bash "$b" --jobs
  expect "--deps missing folder" 2 "--deps $tmp/none: no such folder" bash "$b" --deps "$tmp/none"
  expect "no nvidia-smi" 3 "refusing: '$tmp/none/nvidia-smi' not found" \
    env NVIDIA_SMI="$tmp/none/nvidia-smi" bash "$b" --build-dir "$tmp/build"
  printf '#!/bin/sh\necho "No devices were found"\n' > "$tmp/smi-none"
  printf '#!/bin/sh\necho "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"\n' > "$tmp/smi-one"
  chmod +x "$tmp/smi-none" "$tmp/smi-one"
  expect "no GPU listed" 3 "refusing: '$tmp/smi-none -L' lists no GPU" \
    env NVIDIA_SMI="$tmp/smi-none" bash "$b" --build-dir "$tmp/build"
  stub_torch 2.11.0+cpu False
  expect "torch without CUDA" 3 "refusing: torch 2.11.0\+cpu: torch.cuda.is_available\(\) is False" \
    env NVIDIA_SMI="$tmp/smi-one" PYTHONPATH="$tmp/py" PYTHON="$py" bash "$b" --build-dir "$tmp/build"
  [ ! -e "$tmp/build/CMakeCache.txt" ] || { echo "FAIL: a refused build configured $tmp/build" >&2; failures=$((failures + 1)); }
  ;;
deps)
  f="$src/tests/gpu/fetch_build_deps.sh"
  expect "unknown mode" 2 "unknown mode 'install'" bash "$f" install
  mkdir -p "$tmp/empty"
  expect "no .deb files" 1 "no .deb files in $tmp/empty" bash "$f" unpack "$tmp/empty"
  # A .deb of one pkg-config file, as Debian's -dev packages lay them out.
  mkdir -p "$tmp/pkg/DEBIAN" "$tmp/pkg/usr/lib/x86_64-linux-gnu/pkgconfig" "$tmp/deps"
  printf 'Package: shardcast-test-dev\nVersion: 1.0\nArchitecture: all\nMaintainer: test <t@t>\nDescription: test\n' \
    > "$tmp/pkg/DEBIAN/control"
  printf 'prefix=/usr\nincludedir=${prefix}/include\nName: t\nDescription: t\nVersion: 1\nCflags: -I${includedir}\n' \
    > "$tmp/pkg/usr/lib/x86_64-linux-gnu/pkgconfig/shardcast-test.pc"
  dpkg-deb --build "$tmp/pkg" "$tmp/deps/shardcast-test-dev_1.0_all.deb" > /dev/null
  stub_torch 2.11.0+cu130 True
  mkdir -p "$tmp/cuda/include" && touch "$tmp/cuda/include/nccl.h"
  expect "unpack" 0 "1 packages unpacked into $tmp/deps/prefix" \
    env PYTHONPATH="$tmp/py" PYTHON="$py" CUDA_HOME="$tmp/cuda" bash "$f" unpack "$tmp/deps"
  e="$tmp/deps/env.sh"
  for want in "CMAKE_PREFIX_PATH=\"$tmp/deps/prefix/usr:$tmp/torchcmake" "PKG_CONFIG_SYSROOT_DIR=\"$tmp/deps/prefix\"" \
              "SHARDCAST_NCCL_INCLUDE=\"$tmp/cuda/include\""; do
    grep -qF "$want" "$e" || { echo "FAIL: env.sh lacks $want:" >&2; cat "$e" >&2; failures=$((failures + 1)); }
  done
  [ -f "$tmp/deps/prefix/usr/lib/x86_64-linux-gnu/pkgconfig/shardcast-test.pc" ] \
    || { echo "FAIL: the .deb was not unpacked into the prefix" >&2; failures=$((failures + 1)); }
  if command -v pkg-config >/dev/null; then
    read -r flags < <(. "$e" && pkg-config --cflags shardcast-test)
    [ "$flags" = "-I$tmp/deps/prefix/usr/include" ] \
      || { echo "FAIL: pkg-config through env.sh gave '$flags'" >&2; failures=$((failures + 1)); }
  fi
  # The ar + tar path (a machine without dpkg): the same files.
  rm -rf "$tmp/deps/prefix"
  expect "unpack with ar" 0 "1 packages unpacked" \
    env DEB_UNPACKER=ar PYTHONPATH="$tmp/py" PYTHON="$py" CUDA_HOME="$tmp/cuda" bash "$f" unpack "$tmp/deps"
  [ -f "$tmp/deps/prefix/usr/lib/x86_64-linux-gnu/pkgconfig/shardcast-test.pc" ] \
    || { echo "FAIL: ar + tar did not unpack the .deb" >&2; failures=$((failures + 1)); }
  rm -rf "$tmp/py/torch"
  expect "no torch" 1 "cannot import torch" env PYTHONPATH="$tmp/py" PYTHON="$py" CUDA_HOME="$tmp/cuda" bash "$f" unpack "$tmp/deps"
  ;;
fsdp2)
  s="$src/trainer/bench/bench_vs_fsdp2.py"
  "$py" -m py_compile "$s" && echo "ok: py_compile"
  stub_torch 1.13.1 False
  expect "torch 1.13 refused" 2 "needs torch >= 2.6.*1.13.1" env PYTHONPATH="$tmp/py" "$py" "$s" --build "$tmp"
  p="$src/tests/gpu/host_time_probe.py"
  "$py" -m py_compile "$p" && echo "ok: py_compile host_time_probe.py"
  expect "host_time_probe without CUDA" 1 "sees no CUDA device" env PYTHONPATH="$tmp/py" "$py" "$p" "$tmp/h.json"
  [ ! -e "$tmp/h.json" ] || { echo "FAIL: host_time_probe wrote $tmp/h.json without a GPU" >&2; failures=$((failures + 1)); }
  expect "host_time_probe --syncs bogus" 1 "--syncs: 'bogus' is not none | step" \
    env PYTHONPATH="$tmp/py" "$py" "$p" "$tmp/h.json" --syncs none,bogus
  p="$src/tests/gpu/stack_probe.py"
  "$py" -m py_compile "$p" && echo "ok: py_compile stack_probe.py"
  expect "stack_probe without CUDA" 1 "sees no CUDA device" env PYTHONPATH="$tmp/py" "$py" "$p" "$tmp/s.json" \
    --layers 2 --d-model 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 256 --seq-len 16 --micro-batch 1
  [ ! -e "$tmp/s.json" ] || { echo "FAIL: stack_probe wrote $tmp/s.json without a GPU" >&2; failures=$((failures + 1)); }
  expect "stack_probes.sh without OUT_DIR" 2 "Usage: tests/gpu/stack_probes.sh" bash "$src/tests/gpu/stack_probes.sh"
  expect "stack_probes.sh unknown configuration" 2 "no configuration 'k7b_nope'" \
    bash "$src/tests/gpu/stack_probes.sh" "$tmp/probes" k7b_nope
  ;;
gemms)
  # fsdp2_probe.gemm_by_shape on stand-ins for the profiler's FunctionEvents: kernels summed per
  # (op, M, K, N) and per step, addmm's shapes after its bias, an op without kernels skipped, a
  # batched call counted under 0 x 0 so that the rows add up.
  expect "gemm_by_shape groups the kernels" 0 "^ok$" env PYTHONPATH="$src/tests/gpu" "$py" -c '
from types import SimpleNamespace as E
from fsdp2_probe import gemm_by_shape
k = lambda us: E(duration=us)
ev = [E(name="aten::mm", input_shapes=[[8192, 4096], [4096, 14336]], kernels=[k(1000.0)]),
      E(name="aten::mm", input_shapes=[[8192, 4096], [4096, 14336]], kernels=[k(900.0), k(100.0)]),
      E(name="aten::addmm", input_shapes=[[14336], [8192, 4096], [4096, 14336], [], []], kernels=[k(500.0)]),
      E(name="aten::matmul", input_shapes=[[8192, 4096], [4096, 14336]], kernels=[]),
      E(name="aten::mm", input_shapes=[[2, 8, 4], [4, 8]], kernels=[k(40.0)]),
      E(name="aten::add", input_shapes=[[8], [8]], kernels=[k(7.0)])]
r = gemm_by_shape(ev, 2)
want = [{"op": "aten::mm", "m": 8192, "k": 4096, "n": 14336, "calls": 1.0, "ms": 1.0},
        {"op": "aten::addmm", "m": 8192, "k": 4096, "n": 14336, "calls": 0.5, "ms": 0.25},
        {"op": "aten::mm", "m": 0, "k": 0, "n": 0, "calls": 0.5, "ms": 0.02}]
assert r == want, r
print("ok")'
  # gemm_shapes_vs_table.py on a synthetic probe and the shipped H100 table: the table's time of
  # 8192x4096 . 4096x14336 is 1465.42 us, the probe says 2000 us per call: ratio 0.733; a shape
  # the table lacks is summed apart.
  cat > "$tmp/probe.json" <<'JSON'
{"run": {"gemm_by_shape": [
 {"op": "aten::mm", "m": 8192, "k": 4096, "n": 14336, "calls": 32.0, "ms": 64.0},
 {"op": "aten::mm", "m": 8192, "k": 4096, "n": 6144, "calls": 32.0, "ms": 30.0}]}}
JSON
  g="$src/tests/gpu/gemm_shapes_vs_table.py"
  expect "gemm_shapes_vs_table: a matched shape" 0 "8192x4096 \. 4096x14336 +32\.0 +2000\.0 +1465\.4 +0\.733" \
    "$py" "$g" "$tmp/probe.json" "$src/configs/kernels/H100-80GB-SXM.csv"
  expect "gemm_shapes_vs_table: totals" 0 "step 64\.00 ms, table 46\.89 ms per step, table/step 0\.733; shapes the table lacks: 30\.00 ms of 94\.00 ms" \
    "$py" "$g" "$tmp/probe.json" "$src/configs/kernels/H100-80GB-SXM.csv"
  echo '{"run": {"tokens_per_s": 1}}' > "$tmp/old.json"
  expect "gemm_shapes_vs_table: a probe without shapes" 1 "run the probe with --gemm-shapes" \
    "$py" "$g" "$tmp/old.json" "$src/configs/kernels/H100-80GB-SXM.csv"
  expect "gemm_shapes_vs_table: usage" 2 "usage: gemm_shapes_vs_table.py PROBE_JSON KERNEL_CSV" "$py" "$g" "$tmp/old.json"
  # float8_linear_probe.py: --compare of a synthetic rowwise grid against the shipped torchao table
  # (cells 1024^3, 1024x1024x2048, 1024x1024x4096 published 0.42, 0.42, 0.50; here 0.42, 0.462, 0.60:
  # ratios 1.000, 1.100, 1.200, median 1.100; its tensorwise cell at 1024x2048x1024 against the README's
  # 0.80 as text, 0.88: 1.100), and its refusals.
  f="$src/tests/gpu/float8_linear_probe.py"
  "$py" -m py_compile "$f" && echo "ok: py_compile float8_linear_probe.py"
  cat > "$tmp/ours.csv" <<'CSV'
# gpu: stand-in
gpu,recipe,m,k,n,speedup
H100,rowwise,1024,1024,1024,0.42
H100,rowwise,1024,1024,2048,0.462
H100,rowwise,1024,1024,4096,0.60
H100,tensorwise,1024,1024,1024,0.9
H100,tensorwise,1024,2048,1024,0.88
CSV
  expect "float8_linear_probe --compare: median" 0 "rowwise, 3 cells: this / torchao median 1\.100 \(range 1\.000 \.\.\. 1\.200\)" \
    "$py" "$f" --compare "$tmp/ours.csv" "$src/configs/kernels/float8_linear.csv"
  expect "float8_linear_probe --compare: a cell" 0 "1024 +1024 +2048 +0\.46 +0\.42 +1\.100" \
    "$py" "$f" --compare "$tmp/ours.csv" "$src/configs/kernels/float8_linear.csv"
  expect "float8_linear_probe --compare: a README tensorwise cell" 0 "tensorwise 1024x2048x1024: this 0\.88, torchao README 0\.80, ratio 1\.100" \
    "$py" "$f" --compare "$tmp/ours.csv" "$src/configs/kernels/float8_linear.csv"
  printf 'gpu,recipe,m,k,n,speedup\nH100,tensorwise,1024,1024,1024,0.9\n' > "$tmp/tw.csv"
  expect "float8_linear_probe --compare: no rowwise cell" 1 "no rowwise cell in both grids" \
    "$py" "$f" --compare "$tmp/tw.csv" "$src/configs/kernels/float8_linear.csv"
  expect "float8_linear_probe --compare: usage" 2 "usage: float8_linear_probe.py --compare OURS_CSV PUBLISHED_CSV" \
    "$py" "$f" --compare "$tmp/ours.csv"
  expect "float8_linear_probe: bad --sizes" 2 "usage error: --sizes '1k'" "$py" "$f" "$tmp/f8.csv" --sizes 1k
  expect "float8_linear_probe: bad --recipes" 2 "usage error: --recipes takes tensorwise,rowwise,rowwise_with_gw_hp" \
    "$py" "$f" "$tmp/f8.csv" --recipes mxfp8
  stub_torch 2.11.0 False
  expect "float8_linear_probe without CUDA" 1 "sees no CUDA device; nothing written" \
    env PYTHONPATH="$tmp/py" "$py" "$f" "$tmp/f8.csv" --sizes 1024
  stub_torch 1.13.1 True
  expect "float8_linear_probe on torch 1.13" 2 "torch 1\.13\.1 is older than 2\.5" \
    env PYTHONPATH="$tmp/py" "$py" "$f" "$tmp/f8.csv" --sizes 1024
  [ ! -e "$tmp/f8.csv" ] || { echo "FAIL: float8_linear_probe wrote $tmp/f8.csv without a GPU" >&2; failures=$((failures + 1)); }
  ;;
microbench)
  bin="${3:?usage: gpu_scripts_test.sh SOURCE_DIR microbench SHARDCAST_TRAIN}"
  expect "--gpu on a CPU build" 2 "usage error: microbench --gpu: this shardcast-train is built against a LibTorch without CUDA" \
    "$bin" microbench --gpu --out "$tmp/k.csv"
  [ ! -e "$tmp/k.csv" ] || { echo "FAIL: a refused --gpu wrote $tmp/k.csv" >&2; failures=$((failures + 1)); }
  expect "--out without --gpu" 2 "usage error: microbench --out is an option of the --gpu table; add --gpu" \
    "$bin" microbench --out "$tmp/k.csv"
  expect "--models without --gpu" 2 "usage error: microbench --models is an option of the --gpu table" \
    "$bin" microbench --models llama3-8b
  expect "--tokens out of range" 2 "--tokens" "$bin" microbench --gpu --tokens 0
  expect "--gemm-inputs without --gpu" 2 "usage error: microbench --gemm-inputs is an option of the --gpu table" \
    "$bin" microbench --gemm-inputs warm
  expect "--gemm-inputs not rotated or warm" 2 "--gemm-inputs: cold not in \{rotated,warm\}" \
    "$bin" microbench --gpu --gemm-inputs cold
  ;;
plan)
  bdir="${3:?usage: gpu_scripts_test.sh SOURCE_DIR plan BUILD_DIR}"
  g="$src/tests/gpu/gpu_train_check.sh"
  expect "--steps 0" 2 "--steps '0'" bash "$g" "$bdir" "$tmp/plan" --steps 0
  expect "--steps 20" 2 "last 20 steps with the first" bash "$g" "$bdir" "$tmp/plan" --steps 20
  expect "no GPU without --plan-only" 3 "refusing: no NVIDIA GPU" env NVIDIA_SMI="$tmp/none/nvidia-smi" bash "$g" "$bdir" "$tmp/plan"
  expect "--plan-only" 0 "llama3.2-1b: micro_batch [0-9]+, ac (none|full), seq_len 2048 on H100-80GB-SXM" \
    bash "$g" "$bdir" "$tmp/plan" --plan-only --hardware H100-80GB-SXM
  # Two models: llama3.2-1b and the largest shape that fits, each with its emitted run.toml.
  [ "$(wc -l < "$tmp/plan/models.txt")" -eq 2 ] || { echo "FAIL: models.txt:" >&2; cat "$tmp/plan/models.txt" >&2; failures=$((failures + 1)); }
  while IFS=$'\t' read -r name d; do
    grep -q '^sharding_strategy = "full_shard"' "$d/emit/run.toml" && grep -q '^\[prediction\]' "$d/emit/run.toml" \
      || { echo "FAIL: $d/emit/run.toml is not a full_shard run with a [prediction]" >&2; failures=$((failures + 1)); }
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["memory"]; sys.exit(0 if m["device_total_bytes"] <= 0.9*m["capacity_bytes"] else 1)' \
      "$d/plan.json" || { echo "FAIL: $name's plan is over 90% of the GPU's memory" >&2; failures=$((failures + 1)); }
    # The per-category times `shardcast-train profile --plan` compares with (time.ops_s).
    python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["time"]["ops_s"]; sys.exit(0 if o["matmul"] > 0 and len(o) == 10 else 1)' \
      "$d/plan.json" || { echo "FAIL: $name's plan.json has no time.ops_s breakdown" >&2; failures=$((failures + 1)); }
  done < "$tmp/plan/models.txt"
  # tests/gpu/one_command.sh: --prepare makes what a lent machine needs, and the command itself
  # refuses without a GPU (exit 3) before writing anything, and without a prepared folder (exit 2).
  o="$src/tests/gpu/one_command.sh"
  # Without the carried packages the GPU machine's build would fail after the loan started.
  expect "one_command --prepare without gpu-deps" 1 "no-deps/[*][.]deb: run tests/gpu/fetch_build_deps.sh download" \
    env BUILD="$bdir" SHARDCAST_GPU_DEPS="$tmp/no-deps" bash "$o" --prepare "$tmp/prep0" H100-80GB-SXM
  mkdir -p "$tmp/gpu-deps" && : > "$tmp/gpu-deps/libfmt-dev.deb"
  expect "one_command --prepare" 0 "one_command: .* ready" env BUILD="$bdir" SHARDCAST_GPU_DEPS="$tmp/gpu-deps" \
    bash "$o" --prepare "$tmp/prep" H100-80GB-SXM
  for f in corpus.bin run.toml shardcast; do
    [ -s "$tmp/prep/$f" ] || { echo "FAIL: one_command --prepare wrote no $f" >&2; failures=$((failures + 1)); }
  done
  grep -q '^path = "corpus.bin"' "$tmp/prep/run.toml" || { echo "FAIL: prepared run.toml's data.path is not relative" >&2; failures=$((failures + 1)); }
  expect "one_command without a prepared folder" 2 "no run.toml and corpus.bin" bash "$o" "$tmp/out" "$tmp/none"
  expect "one_command without a GPU" 3 "refusing: no NVIDIA GPU" env NVIDIA_SMI="$tmp/none/nvidia-smi" bash "$o" "$tmp/out" "$tmp/prep"
  [ "$(cat "$tmp/prep/hardware" 2>/dev/null)" = H100-80GB-SXM ] \
    || { echo "FAIL: one_command --prepare did not record the hardware its plans were fixed for" >&2; failures=$((failures + 1)); }
  # A budget the device tool's 600 s limit would cut before the results are packed.
  expect "one_command BUDGET_S above 570" 2 "at most 570" bash "$o" "$tmp/out" "$tmp/prep" 590
  [ ! -e "$tmp/out" ] || { echo "FAIL: one_command wrote $tmp/out without a GPU" >&2; failures=$((failures + 1)); }
  ;;
*) echo "gpu_scripts_test: unknown part '$what' (build | deps | fsdp2 | gemms | microbench | plan)" >&2; exit 2 ;;
esac
[ "$failures" -eq 0 ] || { echo "gpu_scripts_test $what: $failures failure(s)" >&2; exit 1; }
echo "gpu_scripts_test $what: all passed"
