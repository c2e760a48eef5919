#!/usr/bin/env bash
# The Debian packages the build needs besides LibTorch, carried to a GPU machine that has no
# package registry (docs/trainer.md, "On a GPU machine"). Two modes:
#
#   fetch_build_deps.sh download [DIR]   HERE, on Debian 12 with apt: `apt-get download` the
#       .deb files of PACKAGES below into DIR (default: gpu-deps/ at the repository root) and
#       add DIR to the repository's .git/info/exclude (it travels with the working tree as an
#       ignored path named in `carry`, and is never committed). Checks first that every
#       package's Depends are in PACKAGES or in BASE (what any Linux with a C++ compiler has).
#   fetch_build_deps.sh unpack [DIR] [PREFIX]   THERE, on the GPU machine, no root install:
#       `dpkg -x` every DIR/*.deb into PREFIX (default: DIR/prefix), then writes DIR/env.sh and
#       prints it: CMAKE_PREFIX_PATH (PREFIX/usr + the machine's torch.utils.cmake_prefix_path),
#       PKG_CONFIG_* (toml++ is found through pkg-config; PKG_CONFIG_SYSROOT_DIR maps the .pc
#       files' /usr to PREFIX/usr), LD_LIBRARY_PATH (libfmt, libtomlplusplus),
#       SHARDCAST_NCCL_INCLUDE / SHARDCAST_NCCL_LIB (nccl.h and libnccl.so* from the CUDA
#       toolkit or the torch wheel's `nvidia` packages). `source DIR/env.sh` before cmake;
#       tests/gpu/build_on_gpu.sh does this itself.
#
# Environment: PYTHON (default python3; must import torch in `unpack`), DEB_UNPACKER
#   (dpkg | dpkg-deb | ar; default: the first found).
# Exit: 0 done; 1 a package could not be downloaded or unpacked, torch or nccl.h not found;
#   2 usage error.
# Tests: ctest gpu.fetch_build_deps_unpack (unpack of a built .deb with a stub python).
set -euo pipefail

# Debian 12 (bookworm) names. The -dev packages and the runtime libraries they link:
# fmt (libfmt9), toml++ (libtomlplusplus3; found with pkg-config, so pkgconf comes too),
# CLI11, nlohmann-json and Eigen (header-only), GoogleTest (static libraries + CMake config),
# Gloo's headers: torch's ProcessGroupGloo.hpp includes <gloo/algorithm.h> and more, which the
# pip wheel does not ship (seen with torch 2.11.0+cu130 on 2026-11-27); the library itself is
# linked into libtorch_cpu, so only the headers are used (a syntax check of every trainer unit
# against the 2.11 headers with these passed, `make gpu-check` with SHARDCAST_TORCH_INCLUDE).
# Not for the build: elfutils' eu-stack (with libdw1, libelf1, libasm1), which one_command.sh
# runs on a check that outlives its time cap, to print where each of its threads waits.
PACKAGES=(libfmt-dev libfmt9 libtomlplusplus-dev libtomlplusplus3 libcli11-dev nlohmann-json3-dev
          libeigen3-dev libgtest-dev libgmock-dev pkgconf pkgconf-bin libpkgconf3 libgloo-dev
          elfutils libdw1 libelf1 libasm1)
# Dependencies not carried: the C and C++ runtimes; `pkg-config` (Eigen's, provided by
# pkgconf above); `googletest` (GoogleTest's sources, which libgtest-dev's build came from);
# libgloo-dev's library and its Redis and InfiniBand transports' headers (the headers torch
# includes need none of them).
# libdw1's compression libraries are on every Linux with a package manager.
BASE=(libc6 libgcc-s1 libstdc++6 pkg-config googletest libgloo0 libhiredis-dev libibverbs-dev
      zlib1g liblzma5 libbz2-1.0)

usage() { sed -n '2,24p' "$0" >&2; exit 2; }
fail() { echo "fetch_build_deps: $*" >&2; exit 1; }
repo="$(cd "$(dirname "$0")/../.." && pwd)"
mode="${1:-}"
[ $# -ge 1 ] && shift
case "$mode" in
  download) [ $# -le 1 ] || usage ;;
  unpack) [ $# -le 2 ] || usage ;;
  -h|--help) usage ;;
  *) echo "fetch_build_deps: unknown mode '${mode}' (download | unpack)" >&2; usage ;;
esac
dir="${1:-$repo/gpu-deps}"
in_list() { local x=$1; shift; for y in "$@"; do [ "$x" = "$y" ] && return 0; done; return 1; }

if [ "$mode" = download ]; then
  command -v apt-get >/dev/null || fail "apt-get not found: run 'download' on Debian 12 (the GPU machine runs 'unpack')"
  missing=()
  for p in "${PACKAGES[@]}"; do
    deps=$(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
             --no-enhances "$p" 2>/dev/null | awk '/^ *(Pre)?Depends:/ {print $2}') \
      || fail "apt-cache knows no package '$p' (Debian 12 names; run apt-get update?)"
    for d in $deps; do
      d="${d%%:*}"; d="${d#<}"; d="${d%>}"
      in_list "$d" "${PACKAGES[@]}" || in_list "$d" "${BASE[@]}" || missing+=("$p -> $d")
    done
  done
  [ ${#missing[@]} -eq 0 ] || fail "dependencies neither carried nor in BASE: ${missing[*]} (add them to PACKAGES)"
  mkdir -p "$dir" && dir="$(cd "$dir" && pwd)"
  rm -f "$dir"/*.deb
  (cd "$dir" && apt-get download "${PACKAGES[@]}") || fail "apt-get download failed (see above)"
  n=$(ls "$dir"/*.deb | wc -l)
  [ "$n" -eq ${#PACKAGES[@]} ] || fail "expected ${#PACKAGES[@]} .deb files in $dir, found $n"
  # Ignored, never committed: one line in the repository's exclude file when DIR is inside it.
  case "$dir/" in
    "$repo"/*)
      rel="/${dir#"$repo"/}/"
      exclude="$(git -C "$repo" rev-parse --git-path info/exclude)"
      case "$exclude" in /*) ;; *) exclude="$repo/$exclude" ;; esac
      mkdir -p "$(dirname "$exclude")"
      grep -qxF "$rel" "$exclude" 2>/dev/null || echo "$rel" >> "$exclude"
      echo "fetch_build_deps: $rel is in $exclude"
      ;;
  esac
  echo "fetch_build_deps: $n packages, $(du -sh "$dir" | cut -f1) in $dir"
  echo "  carry it: the device run's carry = [\"${dir#"$repo"/}\"], then on the GPU machine:"
  echo "  tests/gpu/fetch_build_deps.sh unpack ${dir#"$repo"/}"
  exit 0
fi

# --- unpack (on the GPU machine)
[ -d "$dir" ] || fail "no folder $dir (run 'download' here first, then carry it)"
dir="$(cd "$dir" && pwd)"
prefix="${2:-$dir/prefix}"
# dpkg -x, else dpkg-deb -x, else ar + tar (a .deb is an ar archive holding data.tar.*), for a
# machine that is not Debian-based; DEB_UNPACKER=dpkg|dpkg-deb|ar picks one (tests).
unpacker="${DEB_UNPACKER:-}"
if [ -z "$unpacker" ]; then
  for u in dpkg dpkg-deb ar; do command -v "$u" >/dev/null && { unpacker=$u; break; }; done
fi
case "$unpacker" in
  dpkg|dpkg-deb|ar) command -v "$unpacker" >/dev/null || fail "DEB_UNPACKER=$unpacker: not found" ;;
  "") fail "none of dpkg, dpkg-deb, ar found: cannot unpack .deb files" ;;
  *) fail "DEB_UNPACKER=$unpacker: must be dpkg, dpkg-deb or ar" ;;
esac
debs=("$dir"/*.deb)
[ -f "${debs[0]}" ] || fail "no .deb files in $dir (run 'download' here first)"
mkdir -p "$prefix" && prefix="$(cd "$prefix" && pwd)"
unpack_ar() {  # .deb, prefix
  local member
  member=$(ar t "$1" | grep '^data\.tar') || return 1
  case "$member" in
    *.xz) ar p "$1" "$member" | tar -xJ -C "$2" ;;
    *.zst) ar p "$1" "$member" | tar --zstd -x -C "$2" ;;
    *.gz) ar p "$1" "$member" | tar -xz -C "$2" ;;
    *) ar p "$1" "$member" | tar -x -C "$2" ;;
  esac
}
for d in "${debs[@]}"; do
  case "$unpacker" in
    dpkg) dpkg -x "$d" "$prefix" ;;
    dpkg-deb) dpkg-deb -x "$d" "$prefix" ;;
    ar) unpack_ar "$d" "$prefix" ;;
  esac || fail "could not unpack $d ($unpacker)"
done

py="${PYTHON:-python3}"
torch_prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) \
  || fail "$py cannot import torch (the GPU machine's python3 holds PyTorch; set PYTHON)"
[ -d "$torch_prefix" ] || fail "torch.utils.cmake_prefix_path = '$torch_prefix' is not a folder"

# nccl.h: the CUDA toolkit or the system first, else the wheel's nvidia packages (any layout).
nccl_inc="" nccl_lib=""
for c in "${CUDA_HOME:-}" /usr/local/cuda /usr; do
  if [ -n "$c" ] && [ -f "$c/include/nccl.h" ]; then nccl_inc="$c/include"; break; fi
done
if [ -z "$nccl_inc" ]; then
  read -r nccl_inc nccl_lib < <("$py" - <<'PY' 2>/dev/null || true
import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except ImportError:
    roots = []
inc = lib = ""
for r in roots:
    for h in sorted(glob.glob(os.path.join(r, "**", "include", "nccl.h"), recursive=True)):
        inc = os.path.dirname(h)
        libs = sorted(glob.glob(os.path.join(os.path.dirname(inc), "lib", "libnccl.so*")))
        lib = os.path.dirname(libs[0]) if libs else ""
        break
    if inc:
        break
print(inc or "-", lib or "-")
PY
)
  [ "$nccl_inc" = - ] && nccl_inc=""
  [ "$nccl_lib" = - ] && nccl_lib=""
fi
[ -n "$nccl_inc" ] || fail "no nccl.h: not in \$CUDA_HOME, /usr/local/cuda, /usr, nor under $py's nvidia packages (pip's nvidia-nccl-cu*)"

libdir="$prefix/usr/lib/x86_64-linux-gnu"
pcpath="$libdir/pkgconfig:$prefix/usr/share/pkgconfig"
env_file="$dir/env.sh"
{
  echo "# Written by tests/gpu/fetch_build_deps.sh unpack on $(date -u +%Y-%m-%dT%H:%M:%SZ): source it before cmake."
  # The environment variable is a ':' list (the -D variable would be a ';' list).
  echo "export CMAKE_PREFIX_PATH=\"$prefix/usr:$torch_prefix\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}\""
  echo "export PKG_CONFIG_LIBDIR=\"$pcpath\""
  echo "export PKG_CONFIG_SYSROOT_DIR=\"$prefix\""
  # pkg-config from the prefix when the machine has none (its library is in the prefix too).
  if ! command -v pkg-config >/dev/null && [ -x "$prefix/usr/bin/pkg-config" ]; then
    echo "export PATH=\"$prefix/usr/bin:\$PATH\""
    echo "export PKG_CONFIG=\"$prefix/usr/bin/pkg-config\""
  fi
  echo "export LD_LIBRARY_PATH=\"$libdir${nccl_lib:+:$nccl_lib}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
  echo "export SHARDCAST_NCCL_INCLUDE=\"$nccl_inc\""
  echo "export SHARDCAST_NCCL_LIB=\"$nccl_lib\""
} > "$env_file"
echo "fetch_build_deps: ${#debs[@]} packages unpacked into $prefix; environment in $env_file:"
cat "$env_file"
