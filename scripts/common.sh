# shellcheck shell=bash
# Shared by scripts/test.sh and scripts/demo.sh: install what is missing, configure, build.
# Source it; it defines functions and sets ROOT and BUILD.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build"

# Debian 12 packages the build needs. Installed only when missing.
SLUICE_PACKAGES=(
  cmake ninja-build g++ clang libclang-rt-14-dev ccache pkg-config
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libtcmalloc-minimal4 libssl-dev openssl libtomlplusplus-dev nlohmann-json3-dev
  prometheus-cpp-dev prometheus
  llvm-14-dev llvm-14 clang-14
  rustc cargo
)

log() { printf '==> %s\n' "$*" >&2; }

# ensure_packages [PACKAGE...]: install those of the packages (default: SLUICE_PACKAGES) that
# are missing.
ensure_packages() {
  local wanted=("$@") missing=()
  [ ${#wanted[@]} -gt 0 ] || wanted=("${SLUICE_PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # Installing from the cached lists first keeps the common case fast; update only if needed.
  if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; then
    "${sudo[@]}" apt-get update -q >/dev/null
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

jobs() { nproc 2>/dev/null || echo 2; }

# use_ccache: the compiler cache every build of these scripts shares. Paths are hashed relative
# to the checkout and the build folder is left out of the hash (debug info would otherwise put
# it in), so every clone, CI's fresh one included, hits what another compiled.
use_ccache() {
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
}

# configure_and_build [extra cmake args...]: the default build in build/ (CUDA launchers are
# compiled wherever nvcc exists, with or without a GPU).
configure_and_build() {
  use_ccache
  if [ ! -f "$BUILD/build.ninja" ]; then
    log "configuring $BUILD"
    cmake --preset default "$@" >/dev/null
  fi
  log "building ($(jobs) jobs)"
  cmake --build "$BUILD" -j "$(jobs)"
}

# ensure_debian_rootfs: prints the path of a minimal Debian 12 root file system (debootstrap
# minbase, cached under SLUICE_IMAGE_CACHE, default ~/.cache/sluice-image), making it when it is
# not there. Needs root. Used by deploy/image-test.sh (the container's base) and by
# tests/gpu/run.sh --dry-run (a machine with none of the build's libraries).
ensure_debian_rootfs() {
  local cache=${SLUICE_IMAGE_CACHE:-$HOME/.cache/sluice-image}
  local mirror=${SLUICE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  if [ ! -x "$cache/rootfs/bin/sh" ]; then
    ensure_packages debootstrap
    log "making a Debian 12 root file system with debootstrap (minbase) from $mirror"
    mkdir -p "$cache"
    rm -rf "$cache/rootfs.partial"
    if ! debootstrap --variant=minbase bookworm "$cache/rootfs.partial" "$mirror" \
      >"$cache/debootstrap.log" 2>&1; then
      echo "debootstrap failed: see $cache/debootstrap.log" >&2
      return 1
    fi
    mv "$cache/rootfs.partial" "$cache/rootfs"
  fi
  printf '%s\n' "$cache/rootfs"
}
