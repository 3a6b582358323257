#!/usr/bin/env bash
# Builds the libFuzzer targets (the fuzz preset, build-fuzz/) and runs each for SECONDS (default
# 600) on a scratch copy of its seed corpus, fuzz/corpus/<target>/. A crash, leak, timeout or
# sanitizer report fails the run and leaves the input that caused it in build-fuzz/findings/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"

seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(session_protocol_fuzz ifds_text_fuzz ifds_binary_fuzz)

use_ccache
[ -f "$ROOT/build-fuzz/build.ninja" ] || cmake --preset fuzz >/dev/null
if ! output=$(cmake --build "$ROOT/build-fuzz" -j "$(jobs)" --target sluice_fuzzers 2>&1); then
  printf '%s\n' "$output" | grep -E -A3 "error|FAILED" | head -60
  exit 1
fi

findings="$ROOT/build-fuzz/findings"
mkdir -p "$findings"
for target in "${targets[@]}"; do
  scratch=$(mktemp -d)
  cp "$ROOT/fuzz/corpus/$target/"* "$scratch/"
  # -timeout: one input may take at most 10 s (a request's own limit is 1 s in the harness).
  if ! output=$("$ROOT/build-fuzz/bin/$target" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/$target-" \
      "$scratch" 2>&1); then
    printf '%s\n' "$output" | grep -v "sluice: session" | tail -60
    log "$target failed; the input is in $findings/"
    rm -rf "$scratch"
    exit 1
  fi
  printf '%s\n' "$output" | grep -E "^stat::number_of_executed_units|^Done" | sed "s/^/  $target: /"
  rm -rf "$scratch"
done
