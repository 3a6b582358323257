#!/usr/bin/env bash
# Builds what the GPU check runs, here (where the toolchain and Debian's libraries are), and packs
# it into gpu-bundle/ for a bare GPU machine: the CUDA suites, the IFDS differential and failure
# tests, the GPU bench, sluiced, sluice and sluice-remote (which runs sluice's --server work),
# stripped, with the shared libraries they load that such a machine lacks. The build is its own
# (build-gpu-bundle/, the gpu-bundle preset): the analyzer off (no LLVM in the bundle), machine
# code for sm_90 only (an H100 or H200), only those targets. The device tool carries the working
# tree and the bundle (carry: ["gpu-bundle"]) within 64 MiB: this fails when the two together
# pass 56 MiB. tests/gpu/run.sh --dry-run then checks here everything the GPU machine will do but
# touch a GPU.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"

readonly bundle_build="$ROOT/build-gpu-bundle"
readonly limit_mib=56
targets=(gpu_cuda_suites_test gpu_cuda_ifds_test gpu_cuda_failure_test sluice_gpu_bench sluiced
  sluice_cli)
binaries=(gpu_cuda_suites_test gpu_cuda_ifds_test gpu_cuda_failure_test sluice_gpu_bench sluiced
  sluice sluice-remote)

ensure_packages
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "no nvcc: the bundle holds the CUDA device, which only nvcc builds" >&2
  exit 1
fi
# The tree as it is when the build starts is what the bundle is built from.
source_hash=$(bash tests/gpu/source-hash.sh)
use_ccache
if [ ! -f "$bundle_build/build.ninja" ]; then
  log "configuring $bundle_build (the gpu-bundle preset)"
  cmake --preset gpu-bundle >/dev/null
fi
log "building ${targets[*]} ($(jobs) jobs)"
if ! output=$(cmake --build "$bundle_build" -j "$(jobs)" --target "${targets[@]}" 2>&1); then
  printf '%s\n' "$output" | grep -E -A3 "error|FAILED" | head -60 >&2
  exit 1
fi

rm -rf gpu-bundle
mkdir -p gpu-bundle/bin gpu-bundle/lib
for b in "${binaries[@]}"; do
  strip -o "gpu-bundle/bin/$b" "$bundle_build/bin/$b"
done
# Every library outside glibc and the C++ runtime that the binaries load. A library ldd cannot
# find is an error here, not on the GPU machine.
if ldd gpu-bundle/bin/* | grep -q "not found"; then
  ldd gpu-bundle/bin/* | grep "not found" >&2
  exit 1
fi
for b in gpu-bundle/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+)\.so' |
  while read -r lib; do cp -L "$lib" gpu-bundle/lib/; done
strip --strip-unneeded gpu-bundle/lib/*
# The newest glibc symbol version any bundled file needs: the GPU machine's glibc must be as new.
glibc_needed=$(objdump -T gpu-bundle/bin/* gpu-bundle/lib/* 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -u -V | tail -1)
# What the bundle was built from: tests/gpu/run.sh compares the source hash with the tree it
# runs in and fails on a stale bundle.
{
  echo "source $source_hash"
  echo "commit $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nvcc $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "cuda-architectures $(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' \
    "$bundle_build/CMakeCache.txt") (machine code for sm_90 only: an H100 or H200)"
  echo "analyzer off (sluice analyze is not in the bundle)"
  echo "glibc-needed ${glibc_needed#GLIBC_}"
} >gpu-bundle/BUILD-INFO

# The sizes that travel: the tree the device tool copies, and the bundle carried with it.
tree_bytes=$(tests/gpu/tree-files.sh | xargs -0 stat -c %s | awk '{s += $1} END {print s + 0}')
bundle_bytes=$(find gpu-bundle -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
echo "size-tree $tree_bytes" >>gpu-bundle/BUILD-INFO
echo "size-bundle $bundle_bytes" >>gpu-bundle/BUILD-INFO
sed 's/^/  /' gpu-bundle/BUILD-INFO
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "tree: $(mib "$tree_bytes"); gpu-bundle: $(mib "$bundle_bytes");" \
  "together: $(mib $((tree_bytes + bundle_bytes))) (limit $limit_mib MiB of the device tool's 64)"
if [ $((tree_bytes + bundle_bytes)) -gt $((limit_mib * 1024 * 1024)) ]; then
  echo "the tree and gpu-bundle/ together pass $limit_mib MiB: the device tool would refuse" \
    "them, or leave no room" >&2
  exit 1
fi
