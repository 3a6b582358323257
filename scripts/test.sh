#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (installing whatever is missing), builds Sluice into build/
# and runs every test. The exit code is the verdict.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"

ensure_packages
# The repository stays small enough to travel to a GPU machine: no tracked file over 1 MiB, no
# tracked tree over 16 MiB; the tree copied as the device tool copies it hashes as the checkout.
log "checking the tracked tree's size, and its copy for the GPU machine"
scripts/check-tree-size.sh
tests/gpu/run.sh --dry-run --tree-only
# The analyzer is part of what CI checks: a missing LLVM 14 fails the configure, not a test.
configure_and_build -DSLUICE_LLVM=ON
log "running tests"
ctest --test-dir "$BUILD" --output-on-failure -j "$(jobs)" --timeout 600

# bench/run.sh in its quick mode: the whole measuring chain (every bench, JSON, plots) works.
if [ "${SLUICE_SKIP_BENCH:-0}" != 1 ]; then
  log "checking bench/run.sh --quick (every bench, its JSON and plots, small sizes)"
  "$ROOT/bench/run.sh" --quick --out "$(mktemp -d)" >/dev/null
fi

# deploy/: the Kubernetes manifests against the Kubernetes schemas, the Dockerfile's structure,
# the systemd unit (deploy/image-test.sh builds and runs the image; too slow for every run).
log "checking deploy/ (Kubernetes schemas, Dockerfile, systemd unit)"
"$ROOT/deploy/check.sh"

# Lock annotations are checked by clang's -Wthread-safety (the tsa preset), compile only.
if command -v clang++ >/dev/null && [ "${SLUICE_SKIP_TSA:-0}" != 1 ]; then
  log "checking lock annotations (clang -Wthread-safety -Werror)"
  use_ccache
  [ -f "$ROOT/build-tsa/build.ninja" ] || cmake --preset tsa >/dev/null
  if ! output=$(cmake --build "$ROOT/build-tsa" -j "$(jobs)" 2>&1); then
    printf '%s\n' "$output" | grep -E -A3 "error|FAILED" | head -60
    exit 1
  fi
fi

# The hostile inputs' fuzzers (libFuzzer, clang; ASan + UBSan): each runs for a bounded time
# on a copy of its checked-in seed corpus (fuzz/corpus/). scripts/fuzz.sh runs them longer.
if command -v clang++ >/dev/null && [ "${SLUICE_SKIP_FUZZ:-0}" != 1 ]; then
  log "fuzzing the session protocol and the IFDS parsers (${SLUICE_FUZZ_SECONDS:-20} s each)"
  "$ROOT/scripts/fuzz.sh" "${SLUICE_FUZZ_SECONDS:-20}"
fi

# The project also builds without gRPC's development packages (a GPU machine may lack them).
log "building and testing without gRPC (the nogrpc preset)"
[ -f "$ROOT/build-nogrpc/build.ninja" ] || cmake --preset nogrpc >/dev/null
if ! output=$(cmake --build "$ROOT/build-nogrpc" -j "$(jobs)" 2>&1); then
  printf '%s\n' "$output" | grep -E -A3 "error|FAILED" | head -60
  exit 1
fi
if ! output=$(ctest --test-dir "$ROOT/build-nogrpc" --output-on-failure -j "$(jobs)" --timeout 600 2>&1); then
  printf '%s\n' "$output" | tail -80
  exit 1
fi
# Where nvcc is, the bundle for the GPU machine builds, fits, and passes the dry run (its
# libraries inside a minimal Debian 12 root, each binary run, no GPU failing clearly).
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  log "building the GPU bundle and dry-running the GPU check (tests/gpu/run.sh --dry-run)"
  scripts/gpu-bundle.sh
  tests/gpu/run.sh --dry-run
fi
log "all tests passed"
