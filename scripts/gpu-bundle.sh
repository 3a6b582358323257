#!/usr/bin/env bash
# Builds what the GPU check needs here (where the toolchain and Debian's libraries are) and
# packs it into gpu-bundle/: the CUDA test and benchmark binaries, the daemon and the CLI,
# stripped, with the shared
# libraries they load that a bare GPU machine lacks. tests/gpu/run.sh uses the bundle when it is
# there; the device tool carries it (carry: ["gpu-bundle"]).
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"

ensure_packages
# The tree as it is when the build starts is what the bundle is built from.
source_hash=$(bash tests/gpu/source-hash.sh)
configure_and_build >/dev/null
if [ ! -x "$BUILD/bin/gpu_cuda_ifds_test" ]; then
  echo "no CUDA build: nvcc was not found when build/ was configured" >&2
  exit 1
fi
rm -rf gpu-bundle
mkdir -p gpu-bundle/bin gpu-bundle/lib
for b in gpu_cuda_suites_test gpu_cuda_ifds_test gpu_cuda_failure_test sluice_gpu_bench sluiced \
  sluice; do
  strip -o "gpu-bundle/bin/$b" "$BUILD/bin/$b"
done
# Every library outside glibc and the C++ runtime that the binaries load.
for b in gpu-bundle/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+)\.so' |
  while read -r lib; do cp -L "$lib" gpu-bundle/lib/; done
# What the bundle was built from: tests/gpu/run.sh compares the source hash with the tree it
# runs in and fails on a stale bundle.
{
  echo "source $source_hash"
  echo "commit $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nvcc $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
} >gpu-bundle/BUILD-INFO
sed 's/^/  /' gpu-bundle/BUILD-INFO
du -sh gpu-bundle | cut -f1 | xargs echo "gpu-bundle:"
# The device tool carries at most 64 MiB with the working tree: say so before a run fails.
if [ "$(du -sm gpu-bundle | cut -f1)" -gt 56 ]; then
  echo "warning: gpu-bundle is over 56 MiB; with the tree it may pass the 64 MiB the device" \
    "tool carries" >&2
fi
