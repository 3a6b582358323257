#!/usr/bin/env bash
# The GPU check. On a machine with an NVIDIA GPU, in 7 minutes (SLUICE_GPU_BUDGET seconds,
# default 420, bound every step; with a machine's start that leaves a rerun's room inside the 15
# minutes of device time a session is lent):
#   1. the conformance and kernel suites on LocalDispatch with the CUDA device;
#   2. the IFDS differential tests (resident solver on CUDA against the reference solver);
#   3. the benchmark: CUDA against CPU on the same generated problems, windows ended on the
#      device against full windows, a window as a graph loop against one graph launch per
#      iteration and against plain launches, upload throughput against the pinned
#      host-to-device bandwidth (the verdict counts the targets it missed);
#   4. sluiced on the GPU serving four concurrent remote solves, each equal to the reference
#      solver's answer; compute-sanitizer memcheck on a small solve and on every kernel with
#      random contents; last, sticky CUDA errors injected into a live device (sessions told,
#      the next one resets it; a fault first seen by a free; a graph-loop probe that faults).
# The most telling steps run first, so a budget spent early still leaves their figures.
# Uses gpu-bundle/ (scripts/gpu-bundle.sh, built where the libraries are) when present, and
# fails if it was built from another source tree; else builds the CUDA targets here. Writes a
# summary to $OUT/gpu-summary.txt (or build-gpu/gpu-summary.txt) as it goes, and exits non-zero
# if any step failed or timed out.
#
#   tests/gpu/run.sh              the check, on the GPU machine
#   tests/gpu/run.sh --dry-run    here, after scripts/gpu-bundle.sh: everything but the GPU
#                                 (tests/gpu/dry-run.sh says what)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case "${1:-}" in
  --dry-run) shift; exec bash "$ROOT/tests/gpu/dry-run.sh" "$@" ;;
  "") ;;
  *) echo "usage: tests/gpu/run.sh [--dry-run [--tree-only]]" >&2; exit 2 ;;
esac
out_dir=${OUT:-$ROOT/build-gpu}
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)  # a relative OUT is the caller's
cd "$ROOT" || exit 1
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

failed=0
if [ -d gpu-bundle/bin ]; then
  chmod +x gpu-bundle/bin/* 2>/dev/null  # a copy may lose the mode bits
  bin=gpu-bundle/bin
  export LD_LIBRARY_PATH="$ROOT/gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  built_from=$(sed -n 's/^source //p' gpu-bundle/BUILD-INFO 2>/dev/null)
  note "binaries: gpu-bundle ($(sed -n 's/^commit //p' gpu-bundle/BUILD-INFO 2>/dev/null),"\
    "built $(sed -n 's/^built //p' gpu-bundle/BUILD-INFO 2>/dev/null) by scripts/gpu-bundle.sh)"
  if [ "$built_from" != "$(bash tests/gpu/source-hash.sh)" ]; then
    note "FAIL the bundle was built from another source tree: run scripts/gpu-bundle.sh again"
    failed=1
  fi
  # The bundle carries every library but glibc: this machine's must be as new as it needs.
  glibc_needed=$(sed -n 's/^glibc-needed //p' gpu-bundle/BUILD-INFO 2>/dev/null)
  glibc_here=$(ldd --version 2>/dev/null | head -1 | grep -o '[0-9][0-9.]*$')
  note "glibc: this machine $glibc_here, the bundle needs ${glibc_needed:-?}"
  if [ -n "$glibc_needed" ] && [ -n "$glibc_here" ] &&
    [ "$(printf '%s\n%s\n' "$glibc_needed" "$glibc_here" | sort -V | head -1)" != "$glibc_needed" ]; then
    note "FAIL this machine's glibc $glibc_here is older than the $glibc_needed the bundle needs"
    exit 1
  fi
else
  note "binaries: building the CUDA targets here"
  if ! (cmake --preset cuda -DSLUICE_GRPC=OFF >>"$log" 2>&1 &&
        cmake --build build-cuda -j "$(nproc)" --target gpu_cuda_suites_test gpu_cuda_ifds_test \
          gpu_cuda_failure_test sluice_gpu_bench >>"$log" 2>&1); then
    note "FAIL build (see $log)"
    tail -30 "$log"
    exit 1
  fi
  bin=build-cuda/bin
fi

export SLUICE_REQUIRE_GPU=1  # a missing GPU fails the suites instead of skipping them
# The whole check fits in SLUICE_GPU_BUDGET seconds (default 420): no step runs past what is
# left, so a hung step cannot eat the time of the ones after it, nor the caller's limit.
deadline=$((SECONDS + ${SLUICE_GPU_BUDGET:-420}))
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - SECONDS))
  if [ "$left" -lt 10 ]; then
    note "SKIP $name: the time budget is spent"
    failed=1
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local start=$SECONDS rc=0
  echo "==== $name" >>"$log"
  timeout -k 10 "$limit" "$@" >>"$log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    note "PASS $name ($((SECONDS - start)) s)"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    note "TIMEOUT $name after $((SECONDS - start)) s (limit $limit s; see $log)"
    failed=1
  else
    note "FAIL $name ($((SECONDS - start)) s, exit $rc; see $log)"
    failed=1
  fi
}
step "conformance and kernel suites on CUDA" 75 "$bin/gpu_cuda_suites_test" --gtest_brief=1
step "IFDS differential on CUDA" 90 "$bin/gpu_cuda_ifds_test" --gtest_brief=1
note ""
step "benchmark" 180 "$bin/sluice_gpu_bench" --summary="$summary"
note ""
# The daemon on the GPU: four clients solve one generated problem through sluiced at once
# (four sessions on one CUDA device); every answer must equal the reference solver's.
daemon_check() {
  local work address="" pid ok=1
  work=$(mktemp -d)
  "$bin/sluiced" --listen=127.0.0.1:0 --backend=cuda >"$work/stdout" 2>"$work/daemon.log" &
  pid=$!
  for _ in $(seq 1 600); do  # bounded: up to 60 s for the daemon to report its port
    address=$(sed -n 's/^sluiced listening on //p' "$work/stdout")
    [ -n "$address" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$address" ]; then
    echo "sluiced did not start"
    ok=0
  else
    "$bin/sluice" info --server="$address" | grep -q "cuda:" || { echo "not on CUDA"; ok=0; }
    "$bin/sluice" gen --seed=7 --procedures=600 --facts=48 --out="$work/problem.ifds" &&
      "$bin/sluice" solve "$work/problem.ifds" --solver=reference --out="$work/reference.tsv" ||
      ok=0
    local pids=()
    for i in 1 2 3 4; do
      "$bin/sluice" solve "$work/problem.ifds" --server="$address" --out="$work/remote$i.tsv" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || ok=0; done
    for i in 1 2 3 4; do
      cmp -s "$work/reference.tsv" "$work/remote$i.tsv" || { echo "client $i differs"; ok=0; }
    done
  fi
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" || { echo "sluiced did not drain cleanly"; ok=0; }
  cat "$work/daemon.log"
  rm -rf "$work"
  [ "$ok" = 1 ]
}
if [ -x "$bin/sluiced" ] && [ -x "$bin/sluice" ]; then
  export -f daemon_check
  export bin
  step "daemon on CUDA: 4 concurrent remote solves equal the reference" 60 bash -c daemon_check
else
  note "SKIP daemon on CUDA: this build has no sluiced (no gRPC)"
fi
# The sanitizer: on PATH, or where CUDA installs it.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer \
  /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
# sanitize NAME LIMIT COMMAND...: memcheck over COMMAND. A sanitizer that cannot run on this
# machine (sandboxed GPU machines refuse it: "Device not supported") is a skip quoting the
# refusal; anything else that is not a clean pass (errors it finds, a command that fails or
# crashes under it) is a failure.
sanitize() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - SECONDS))
  if [ -z "$sanitizer" ]; then
    note "SKIP compute-sanitizer memcheck, $name: not installed"
    return
  elif [ "$left" -lt 10 ]; then
    note "SKIP compute-sanitizer memcheck, $name: the time budget is spent"
    failed=1
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local sanitizer_log="$out_dir/sanitizer-log.txt" start=$SECONDS rc=0
  # Memory errors only: API errors that the code expects and handles (the graph-loop probe on
  # a driver without them) are not failures.
  timeout -k 10 "$limit" "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 1 \
    "$@" >"$sanitizer_log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    note "PASS compute-sanitizer memcheck, $name ($((SECONDS - start)) s)"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    note "TIMEOUT compute-sanitizer memcheck, $name, after $((SECONDS - start)) s (limit $limit s)"
    failed=1
  elif grep -q "Device not supported" "$sanitizer_log"; then
    note "SKIP compute-sanitizer memcheck, $name:" \
      "$(grep -m1 'Device not supported' "$sanitizer_log")"
  else
    note "FAIL compute-sanitizer memcheck, $name ($((SECONDS - start)) s, exit $rc; see $log)"
    failed=1
  fi
  { echo "==== compute-sanitizer, $name"; cat "$sanitizer_log"; } >>"$log"
  rm -f "$sanitizer_log"
}
sanitize "small solve" 60 "$bin/sluice_gpu_bench" --sanitize_solve
# Every kernel with random bindings, parameters and contents: no access outside the bindings.
# The suite's own 120 trials: on an H200, 60 took 2.4 s under the sanitizer, while 12 and 30
# each left some kernel never reached, which the test refuses. Only while it leaves the
# sticky-error step its time.
if [ $((deadline - SECONDS)) -ge 100 ]; then
  sanitize "kernels on random contents" 50 \
    "$bin/gpu_cuda_suites_test" --gtest_brief=1 \
    --gtest_filter='Cuda/KernelTest/*.AnyContentsStayWithinTheBindings'
else
  note "SKIP compute-sanitizer memcheck, kernels on random contents: its time is kept for the"\
    "sticky-error step"
fi
# Last: a GPU exception, even in a process of its own, is the step most likely to disturb the
# machine for the steps after it.
# Each test in a process of its own: where the driver refuses a process the GPU after a reset,
# a test that lost it would fail the ones after it.
failure_tests() {
  local test rc=0
  for test in $("$bin/gpu_cuda_failure_test" --gtest_list_tests | awk '/^[^ ]/ {suite = $1}
      /^  / {print suite $1}'); do
    echo "---- $test"
    "$bin/gpu_cuda_failure_test" --gtest_brief=1 --gtest_filter="$test" || rc=1
  done
  return $rc
}
export -f failure_tests
export bin
step "sticky CUDA errors: sessions told, the next one resets the GPU or finds it lost;"\
" a faulting probe costs graph loops only" 45 bash -c failure_tests
note ""
missed=$(grep -c "MISSED" "$summary")
note "verdict: $([ $failed = 0 ] && echo all steps passed || echo some steps FAILED);"\
  "benchmark targets missed: $missed"
exit $failed
