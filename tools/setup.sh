#!/usr/bin/env bash
# Shared by tools/demo.sh and tools/test.sh: installs the Debian packages attnjit builds with
# when they are missing, checks for the CUDA toolkit, then configures and builds into
# ${ATTNJIT_BUILD_DIR:-build}. Source it; it leaves BUILD_DIR set. A caller that needs only some
# targets names them in SETUP_TARGETS (an array) before sourcing; otherwise everything is built.
# CMAKE_EXTRA_ARGS (an array) adds to the first configure of a build folder (tools/sanitize.sh).
set -euo pipefail

ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ATTNJIT_BUILD_DIR:-$ROOT_DIR/build}
PACKAGES=(cmake ninja-build g++ pkg-config libfmt-dev libspdlog-dev nlohmann-json3-dev catch2
          libcli11-dev libxxhash-dev clang libclang-rt-14-dev python3-numpy)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

CUDA_ROOT=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
if [[ ! -f "$CUDA_ROOT/include/nvrtc.h" ]]; then
  echo "setup: the CUDA toolkit (13.x, with NVRTC) was not found at $CUDA_ROOT; set CUDA_HOME" >&2
  exit 1
fi

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S "$ROOT_DIR" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCUDAToolkit_ROOT="$CUDA_ROOT" ${CMAKE_EXTRA_ARGS[@]+"${CMAKE_EXTRA_ARGS[@]}"} \
    >"$BUILD_DIR.configure.log" 2>&1 ||
    { cat "$BUILD_DIR.configure.log" >&2; exit 1; }
fi
build_args=()
for target in "${SETUP_TARGETS[@]}"; do build_args+=(--target "$target"); done
cmake --build "$BUILD_DIR" -j"$(nproc)" "${build_args[@]}"
