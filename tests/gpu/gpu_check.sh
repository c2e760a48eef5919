#!/usr/bin/env bash
# `make gpu-check`: compiles every trainer translation unit with the NCCL/CUDA path on,
# syntax only (-fsyntax-only), against the LibTorch headers in use (Debian's 1.13 by default)
# and the installed CUDA toolkit's headers (cuda_runtime_api.h, nccl.h). No GPU and no CUDA
# LibTorch needed: it checks that the code under SHARDCAST_WITH_NCCL compiles, not that it runs
# (tests/gpu/run_gpu_checks.sh runs it on a GPU machine).
#
# Usage: gpu_check.sh [--root DIR] [FILE...]
#   --root DIR   source tree to check (default: this repository); FILEs are relative to it
#   FILE...      translation units (default: every trainer/**/*.cpp and tests/gpu/*.cpp)
# Environment: CUDA_HOME (toolkit root; else nvcc on PATH, else /usr/local/cuda*),
#   SHARDCAST_TORCH_INCLUDE (LibTorch's include dir; default /usr/include, Debian's layout),
#   CXX (default c++), JOBS (parallel compiles; default nproc).
# Exit: 0 every unit compiled, or no CUDA toolkit found (SKIPPED, said on stderr);
#   1 a unit failed (its errors are printed) or headers are missing.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done

# --- the CUDA toolkit
cuda=""
for c in "${CUDA_HOME:-}" "$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /none/bin/nvcc)")")" \
         /usr/local/cuda $(ls -d /usr/local/cuda-* 2>/dev/null | sort -V -r); do
  if [ -n "$c" ] && [ -f "$c/include/cuda_runtime_api.h" ]; then cuda="$c"; break; fi
done
if [ -z "$cuda" ]; then
  echo "gpu-check: SKIPPED: no CUDA toolkit found (looked at \$CUDA_HOME, nvcc on PATH, /usr/local/cuda*)" >&2
  exit 0
fi
nccl_inc=""
for d in "$cuda/include" /usr/include /usr/local/include; do
  if [ -f "$d/nccl.h" ]; then nccl_inc="$d"; break; fi
done
if [ -z "$nccl_inc" ]; then
  echo "gpu-check: CUDA toolkit at $cuda but no nccl.h (install the NCCL development headers)" >&2
  exit 1
fi

# --- LibTorch headers
torch_inc="${SHARDCAST_TORCH_INCLUDE:-/usr/include}"
if [ ! -f "$torch_inc/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp" ]; then
  echo "gpu-check: no LibTorch headers with ProcessGroupNCCL.hpp under $torch_inc (set SHARDCAST_TORCH_INCLUDE)" >&2
  exit 1
fi

if [ ${#files[@]} -eq 0 ]; then
  while IFS= read -r f; do files+=("$f"); done < <(cd "$root" && find trainer tests/gpu -name '*.cpp' | sort)
fi

# The trainer's compile definitions (trainer/CMakeLists.txt and LibTorch's), with the NCCL
# path on and the precompiled header replaced by each file's own includes.
flags=(-std=gnu++17 -fsyntax-only -Wall -Wextra -Wno-unused-parameter
       -DSHARDCAST_WITH_NCCL=1 -DUSE_C10D_NCCL -DUSE_CUDA -DC10_CUDA_NO_CMAKE_CONFIGURE_FILE
       -DUSE_C10D_GLOO -DUSE_DISTRIBUTED -DUSE_RPC -DUSE_TENSORPIPE
       -DFMT_SHARED -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -D_GLIBCXX_USE_CXX11_ABI=1
       -I"$root" -isystem "$torch_inc/torch/csrc/api/include" -isystem "$cuda/include")
# System directories stay implicit (an -isystem /usr/include breaks libstdc++'s #include_next).
for d in "$torch_inc" "$nccl_inc"; do
  case "$d" in /usr/include|/usr/local/include|"$cuda/include") ;; *) flags+=(-isystem "$d") ;; esac
done

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
export CXX="${CXX:-c++}" root logs
flag_file="$logs/flags"
printf '%s\n' "${flags[@]}" > "$flag_file"
start=$(date +%s)
printf '%s\n' "${files[@]}" | xargs -P "${JOBS:-$(nproc)}" -I{} bash -c '
  f="$1"; log="$0/$(echo "$f" | tr / _).log"
  mapfile -t fl < "$0/flags"
  if (cd "$root" && $CXX "${fl[@]}" "$f") >"$log" 2>&1; then echo ok >"$log.status"; else echo FAILED >"$log.status"; fi
' "$logs" {}
failed=0
for f in "${files[@]}"; do
  log="$logs/$(echo "$f" | tr / _).log"
  if [ "$(cat "$log.status" 2>/dev/null)" != ok ]; then
    echo "gpu-check: FAILED: $f" >&2
    cat "$log" >&2
    failed=$((failed + 1))
  fi
done
echo "gpu-check: ${#files[@]} translation units, NCCL path on, CUDA headers from $cuda, LibTorch headers from $torch_inc: $failed failed ($(( $(date +%s) - start )) s)"
[ "$failed" -eq 0 ]
