#!/usr/bin/env bash
# Measures, in one run, every ratio docs/benchmarks.md reports: remote / in-process solve, round
# trips / windows, ranged read / bare ping-pong, upload and download / bare stream, upload /
# memcpy, the same-host path (shared memory / memcpy), resident / reference solver with device
# bytes per path edge at three sizes, a light client against 1, 2, 4 and 8 heavy sessions, and
# `sluice solve` end to end on front-end-shaped problems of about 1M, 5M and 10M path edges,
# the 5M one also with its procedures and nodes named as a C front end names them (where its
# time goes, parse rate, peak RSS per path edge, resident / reference), after what fresh memory
# costs the host at the time (huge and small pages, freed and mapped again).
# Writes each bench's figures (JSON) and output, results.json and PNG plots (gnuplot) under
# bench/results/<UTC time>/ (ignored by git), and refreshes the summary in docs/benchmarks.md
# and the plots in docs/plots/.
#
#   bench/run.sh            a Release build in build-release/, full sizes (about 10 minutes)
#   bench/run.sh --quick    the build in build/ (scripts/test.sh's), small sizes, results in a
#                           temporary directory (or --out DIR), docs untouched: checks that the
#                           whole chain works (CI runs this)
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
cd "$ROOT"

quick=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out="$2"; shift ;;
    *) echo "usage: bench/run.sh [--quick] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done

ensure_packages gnuplot-nox python3
use_ccache
targets=(sluice_memory_bench sluice_remote_bench sluice_ifds_bench sluice_fairness_bench sluice_cli
  sluiced)
# build DIR: the benches' targets in DIR, quietly; what the compiler said if it fails.
build() {
  local build_log
  build_log="$(mktemp)"
  if ! cmake --build "$1" -j "$(jobs)" --target "${targets[@]}" >"$build_log" 2>&1; then
    echo "building the benches in $1 failed:" >&2
    tail -40 "$build_log" >&2
    rm -f "$build_log"
    exit 1
  fi
  rm -f "$build_log"
}
if [ "$quick" = 1 ]; then
  bin="$BUILD/bin"
  [ -f "$BUILD/build.ninja" ] || cmake --preset default >/dev/null
  build "$BUILD"
  out="${out:-$(mktemp -d)}"
else
  bin="$ROOT/build-release/bin"
  [ -f "$ROOT/build-release/build.ninja" ] || cmake --preset release >/dev/null
  log "building the benches in Release (build-release/)"
  build "$ROOT/build-release"
  out="${out:-$ROOT/bench/results/$(date -u +%Y%m%dT%H%M%SZ)}"
fi
mkdir -p "$out"
mode=""
[ "$quick" = 0 ] || mode=", quick mode"
stamp="$(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(uname -m)), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$mode"

# run NAME BINARY ARGS...: its output in NAME.txt, its figures in NAME.json.
run() {
  local name="$1" binary="$2"
  shift 2
  log "$name: $binary $*"
  if ! "$bin/$binary" --json="$out/$name.json" "$@" >"$out/$name.txt" 2>"$out/$name.log"; then
    echo "$binary failed; its output:" >&2
    tail -20 "$out/$name.txt" "$out/$name.log" >&2
    exit 1
  fi
}

# e2e NAME REPEATS GEN_ARGS...: a problem shaped as a front end emits it, written by `sluice gen`
# and solved end to end from the file, resident and reference alternated, then as a client of a
# daemon (bench/end_to_end.py): phases, parse rate, peak RSS per path edge, resident /
# reference, the client's peak RSS over the compiled problem, in e2e_NAME.json.
e2e() {
  local name="$1" repeats="$2"
  shift 2
  log "e2e_$name: sluice gen --front-end-shape --facts=32 $* && sluice solve"
  python3 "$ROOT/bench/end_to_end.py" "$bin/sluice" "$out" --repeats="$repeats" \
    --sluiced="$bin/sluiced" -- --front-end-shape --facts=32 "$@" >"$out/e2e_$name.json"
}

# What fresh memory costs this host now, first: every host phase touches it.
if [ "$quick" = 1 ]; then
  run memory sluice_memory_bench --mib=32
  e2e small 1 --procedures=2000 --seed=3
  e2e small_names 1 --procedures=2000 --seed=3 --front-end-names
  run remote sluice_remote_bench --latency_rounds=1 --latency_samples=100 --upload_mib=16 \
    --upload_repeats=1 --same_host_mib=64 --same_host_repeats=1
  run ifds sluice_ifds_bench --large=false --repeats=1
  for n in 1 2; do
    run "fairness_$n" sluice_fairness_bench --heavy_sessions="$n" --solves=2 --reads=50
  done
else
  run memory sluice_memory_bench
  e2e 1m 3 --procedures=12500 --seed=3
  e2e 5m 3 --procedures=62500 --seed=3
  e2e 5m_names 3 --procedures=62500 --seed=3 --front-end-names
  e2e 10m 3 --procedures=125000 --seed=3
  run remote sluice_remote_bench
  run ifds sluice_ifds_bench
  for n in 1 2 4 8; do run "fairness_$n" sluice_fairness_bench --heavy_sessions="$n"; done
fi

docs=()
[ "$quick" = 1 ] || docs=(--docs "$ROOT/docs/benchmarks.md")
python3 "$ROOT/bench/report.py" "$out" --stamp "$stamp" "${docs[@]}"
for png in ratios ifds sessions; do
  [ -s "$out/$png.png" ] || { echo "no $out/$png.png" >&2; exit 1; }
done
# A full run's plots are the current ones docs/ shows (its runs stay out of git).
if [ "$quick" = 0 ]; then
  mkdir -p "$ROOT/docs/plots"
  for png in ratios ifds sessions; do cp "$out/$png.png" "$ROOT/docs/plots/"; done
fi
log "results in $out (results.json, summary.md, ratios.png, ifds.png, sessions.png)"
