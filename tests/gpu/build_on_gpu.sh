#!/usr/bin/env bash
# Builds shardcast and shardcast-train against the GPU machine's own torch (a CUDA pip wheel:
# torch.utils.cmake_prefix_path), with the NCCL path on, for tests/gpu/run_gpu_checks.sh and
# by hand. Refuses, before any build, where no NVIDIA GPU is found or torch has no CUDA.
#
# Usage: tests/gpu/build_on_gpu.sh [--build-dir DIR] [--deps DIR] [--jobs N] [--target T]...
#   --build-dir DIR  build folder (default: build-gpu/ at the repository root)
#   --deps DIR       the folder of tests/gpu/fetch_build_deps.sh download (default: gpu-deps/
#                    when it holds .deb files): unpacked there and its env.sh sourced, for a
#                    machine without Debian's fmt, toml++, CLI11, nlohmann-json, Eigen, GoogleTest
#   --jobs N         build parallelism (default: nproc)
#   --target T       a target to build, repeatable (default: shardcast shardcast-train gpu_smoke)
# Environment: PYTHON (default python3), NVIDIA_SMI (default nvidia-smi), CUDA_HOME, CUDACXX (nvcc,
#   when not on PATH), TORCH_CUDA_ARCH_LIST (default: the GPU's compute capability).
# Exit: 0 built; 1 configure or build failed; 2 usage error; 3 no GPU here (no nvidia-smi, no
#   GPU listed, or torch without CUDA / not seeing the GPU, or a pre-C++11-ABI torch).
# Prints the build folder last. Tests: ctest gpu.build_on_gpu_refuses (the usage errors and the
# refusal, with stub nvidia-smi and torch).
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
usage() { sed -n '6,18p' "$0" >&2; exit 2; }
bad() { echo "build_on_gpu: $*" >&2; exit 2; }
nogpu() { echo "build_on_gpu: refusing: $* (this script builds the CUDA/NCCL path and needs an NVIDIA GPU)" >&2; exit 3; }
fail() { echo "build_on_gpu: $*" >&2; exit 1; }
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || bad "$1 needs a value"; }

build="$src/build-gpu"
deps=""
jobs="$(nproc)"
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) need_value "$@"; build="$2"; shift 2 ;;
    --deps) need_value "$@"; deps="$2"; shift 2 ;;
    --jobs) need_value "$@"; [[ "$2" =~ ^[1-9][0-9]{0,3}$ ]] || bad "--jobs $2: must be an integer in [1, 9999]"; jobs="$2"; shift 2 ;;
    --target) need_value "$@"; targets+=("$2"); shift 2 ;;
    -h|--help) usage ;;
    *) bad "unknown argument '$1' (see --help)" ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(shardcast shardcast-train gpu_smoke)
if [ -n "$deps" ]; then
  [ -d "$deps" ] || bad "--deps $deps: no such folder (tests/gpu/fetch_build_deps.sh download writes it)"
elif ls "$src"/gpu-deps/*.deb >/dev/null 2>&1; then
  deps="$src/gpu-deps"
fi

# --- the GPU and torch, before anything is built
smi="${NVIDIA_SMI:-nvidia-smi}"
command -v "$smi" >/dev/null 2>&1 || nogpu "'$smi' not found"
n=$("$smi" -L 2>/dev/null | grep -c '^GPU ' || true)
[ "$n" -ge 1 ] || nogpu "'$smi -L' lists no GPU"
py="${PYTHON:-python3}"
# The last stdout line only: import-time warnings go to stderr, kept for the message.
errf="$(mktemp)"
trap 'rm -f "$errf"' EXIT
info=$("$py" -c '
import torch
print(torch.__version__, int(torch.cuda.is_available()), int(torch.compiled_with_cxx11_abi()), torch.utils.cmake_prefix_path)' 2>"$errf") \
  || nogpu "$py cannot import torch: $(tail -3 "$errf")"
read -r version cuda abi prefix <<<"$(tail -1 <<<"$info")"
[ "$cuda" = 1 ] || nogpu "torch $version: torch.cuda.is_available() is False (a CPU build of torch, or it sees no GPU)"
[ "$abi" = 1 ] || nogpu "torch $version was built with the pre-C++11 ABI; the project links fmt/CLI11 with the C++11 ABI (torch >= 2.7)"
echo "build_on_gpu: $n GPU(s), torch $version, LibTorch CMake config under $prefix"

# --- the Debian packages, when carried
if [ -n "$deps" ]; then
  bash "$src/tests/gpu/fetch_build_deps.sh" unpack "$deps" > /dev/null || fail "could not unpack $deps"
  # shellcheck disable=SC1091
  . "$deps/env.sh"
  echo "build_on_gpu: packages from $deps ($deps/env.sh)"
fi

# nccl.h (ProcessGroupNCCL.hpp includes it): env.sh's, else the toolkit's, else the wheel's.
nccl_inc="${SHARDCAST_NCCL_INCLUDE:-}"
if [ -z "$nccl_inc" ]; then
  for c in "${CUDA_HOME:-}" /usr/local/cuda /usr; do
    if [ -n "$c" ] && [ -f "$c/include/nccl.h" ]; then nccl_inc="$c/include"; break; fi
  done
fi
if [ -z "$nccl_inc" ]; then
  nccl_inc=$("$py" -c 'import glob, os, nvidia
print(next((os.path.dirname(h) for r in nvidia.__path__ for h in sorted(glob.glob(os.path.join(r, "**", "include", "nccl.h"), recursive=True))), ""))' 2>/dev/null || true)
fi
[ -n "$nccl_inc" ] && [ -f "$nccl_inc/nccl.h" ] || fail "no nccl.h (CUDA toolkit, /usr/include or pip's nvidia-nccl-cu*)"

# Gloo's headers: a pip torch includes them from ProcessGroupGloo.hpp without shipping them; the
# carried libgloo-dev puts them in the prefix, whose include folder fmt's target adds already.
tinc="$("$py" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "include"))' 2>/dev/null || true)"
if [ -f "$tinc/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp" ] && [ ! -f "$tinc/gloo/algorithm.h" ]; then
  gloo_inc=""
  for c in ${CMAKE_PREFIX_PATH//:/ } /usr /usr/local; do
    if [ -f "$c/include/gloo/algorithm.h" ]; then gloo_inc="$c/include"; break; fi
  done
  [ -n "$gloo_inc" ] || fail "torch $version's ProcessGroupGloo.hpp includes <gloo/algorithm.h>, which neither its wheel nor this machine has: carry gpu-deps/ (tests/gpu/fetch_build_deps.sh download, which takes libgloo-dev)"
  echo "build_on_gpu: Gloo's headers from $gloo_inc (torch's wheel has none)"
fi

# A CUDA torch's CMake config (Caffe2's public/cuda.cmake) runs find_package(CUDAToolkit) and
# enable_language(CUDA): CMake needs nvcc although no CUDA source is compiled here. Where nvcc is
# not on PATH, the toolkit's is named through CUDACXX. -DTORCH_CUDA_ARCH_LIST is $TORCH_CUDA_ARCH_LIST
# or this GPU's compute capability, so the config does not probe the GPU with a test program.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1; then
  for c in "${CUDA_HOME:-}" /usr/local/cuda; do
    if [ -n "$c" ] && [ -x "$c/bin/nvcc" ]; then export CUDACXX="$c/bin/nvcc"; break; fi
  done
  [ -n "${CUDACXX:-}" ] || fail "no nvcc (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin): find_package(Torch) of a CUDA torch needs the CUDA compiler (enable_language(CUDA) in Caffe2's public/cuda.cmake)"
fi
arch="${TORCH_CUDA_ARCH_LIST:-}"
if [ -z "$arch" ]; then
  arch=$("$py" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())' 2>/dev/null) \
    || fail "$py could not read the GPU's compute capability (torch.cuda.get_device_capability)"
fi

# torch >= 2.12 headers need C++20 (PyTorch moved its ATen consumers to C++20).
std=17
read -r major minor < <(sed -E 's/^([0-9]+)\.([0-9]+).*/\1 \2/' <<<"$version")
if [ "$major" -gt 2 ] || { [ "$major" -eq 2 ] && [ "$minor" -ge 12 ]; }; then std=20; fi

# -isystem of a system folder breaks libstdc++'s #include_next: only other folders are added.
cxxflags=""
case "$nccl_inc" in /usr/include|/usr/local/include) ;; *) cxxflags="-isystem $nccl_inc" ;; esac
case "${gloo_inc:-/usr/include}" in /usr/include|/usr/local/include) ;; *) cxxflags="$cxxflags -isystem $gloo_inc" ;; esac
# A pip torch ships fmt's headers (fmt 12 in 2.11) in its include folder, which CMake lists before
# the fmt whose library is linked (Debian's fmt 9): the trainer then compiled against fmt 12 and
# failed to link (fmt::v12::vformat undefined; seen 2026-11-27). The linked fmt's headers alone,
# through a folder of one link, go first (-I is searched before every -isystem folder).
tfmt="$tinc/fmt"
if [ -n "$tinc" ] && [ -d "$tfmt" ]; then
  fmt_inc=""
  for c in ${CMAKE_PREFIX_PATH//:/ } /usr /usr/local; do
    if [ -f "$c/include/fmt/core.h" ] && [ "$c/include/fmt" != "$tfmt" ]; then fmt_inc="$c/include"; break; fi
  done
  [ -n "$fmt_inc" ] || fail "no fmt headers besides torch's own ($tfmt): carry gpu-deps/ (libfmt-dev)"
  mkdir -p "$build/fmt-first"
  ln -sfn "$fmt_inc/fmt" "$build/fmt-first/fmt"
  cxxflags="-I$build/fmt-first $cxxflags"
  echo "build_on_gpu: fmt's headers from $fmt_inc ahead of torch's bundled $tfmt"
fi

mkdir -p "$build"
log="$build/configure.log"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSHARDCAST_BUILD_GUI=OFF -DSHARDCAST_BUILD_TRAINER=ON \
  -DCMAKE_CXX_STANDARD="$std" "-DCMAKE_PREFIX_PATH=$prefix${CMAKE_PREFIX_PATH:+;${CMAKE_PREFIX_PATH//:/;}}" \
  "-DCMAKE_CXX_FLAGS=$cxxflags" "-DTORCH_CUDA_ARCH_LIST=$arch" > "$log" 2>&1 || { tail -40 "$log" >&2; fail "cmake failed (log: $log)"; }
grep -q 'LibTorch CUDA/NCCL path = ON' "$log" || fail "cmake did not find CUDA in torch's LibTorch (log: $log)"
blog="$build/build.log"
cmake --build "$build" -j "$jobs" --target "${targets[@]}" > "$blog" 2>&1 \
  || { tail -60 "$blog" >&2; fail "build failed (log: $blog)"; }
echo "build_on_gpu: built ${targets[*]} (C++$std, nccl.h from $nccl_inc)"
echo "$build"
