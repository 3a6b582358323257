#!/usr/bin/env bash
# The GPU check. On a machine with an NVIDIA GPU, in under 8 minutes:
#   1. the conformance and kernel suites on LocalDispatch with the CUDA device;
#   2. the IFDS differential tests (resident solver on CUDA against the reference solver);
#   3. compute-sanitizer memcheck on a small solve;
#   4. the benchmark: CUDA against CPU on the same generated problems, windows ended on the
#      device against full windows, graph replay against plain launches, upload throughput
#      against the pinned host-to-device bandwidth.
# Uses gpu-bundle/ (scripts/gpu-bundle.sh, built where the libraries are) when present, else
# builds the CUDA targets here. Writes a summary to $OUT/gpu-summary.txt (or
# build-gpu/gpu-summary.txt) and exits non-zero if any step failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
out_dir=${OUT:-$ROOT/build-gpu}
mkdir -p "$out_dir"
summary="$out_dir/gpu-summary.txt"
log="$out_dir/gpu-log.txt"
: >"$summary"
: >"$log"
note() { printf '%s\n' "$*" | tee -a "$summary"; }

note "Sluice GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if command -v nvidia-smi >/dev/null; then
  note "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
else
  note "GPU: nvidia-smi not found"
fi

if [ -x gpu-bundle/bin/gpu_cuda_ifds_test ]; then
  bin=gpu-bundle/bin
  export LD_LIBRARY_PATH="$ROOT/gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  note "binaries: gpu-bundle (built elsewhere by scripts/gpu-bundle.sh)"
else
  note "binaries: building the CUDA targets here"
  if ! (cmake --preset cuda -DSLUICE_GRPC=OFF >>"$log" 2>&1 &&
        cmake --build build-cuda -j "$(nproc)" --target gpu_cuda_suites_test gpu_cuda_ifds_test \
          sluice_gpu_bench >>"$log" 2>&1); then
    note "FAIL build (see $log)"
    tail -30 "$log"
    exit 1
  fi
  bin=build-cuda/bin
fi

export SLUICE_REQUIRE_GPU=1  # a missing GPU fails the suites instead of skipping them
failed=0
step() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  if timeout "$limit" "$@" >>"$log" 2>&1; then
    note "PASS $name ($((SECONDS - start)) s)"
  else
    note "FAIL $name ($((SECONDS - start)) s; see $log)"
    failed=1
  fi
}
step "conformance and kernel suites on CUDA" 120 "$bin/gpu_cuda_suites_test" --gtest_brief=1
step "IFDS differential on CUDA" 180 "$bin/gpu_cuda_ifds_test" --gtest_brief=1
if command -v compute-sanitizer >/dev/null; then
  # Some sandboxed GPU machines refuse the sanitizer itself ("Device not supported"): that is
  # recorded as a skip naming the refusal, not as a failure of Sluice.
  sanitizer_log="$out_dir/sanitizer-log.txt"
  start=$SECONDS
  if timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$bin/sluice_gpu_bench" --sanitize_solve >"$sanitizer_log" 2>&1; then
    note "PASS compute-sanitizer memcheck, small solve ($((SECONDS - start)) s)"
  elif grep -q "Device not supported" "$sanitizer_log"; then
    note "SKIP compute-sanitizer: $(grep -m1 'Device not supported' "$sanitizer_log")"
  else
    note "FAIL compute-sanitizer memcheck, small solve ($((SECONDS - start)) s; see $log)"
    failed=1
  fi
  cat "$sanitizer_log" >>"$log"
  rm -f "$sanitizer_log"
else
  note "SKIP compute-sanitizer: not installed"
fi
note ""
step "benchmark" 240 "$bin/sluice_gpu_bench" --summary="$summary"
note ""
note "verdict: $([ $failed = 0 ] && echo all steps passed || echo some steps FAILED)"
exit $failed
