#!/usr/bin/env bash
# Sluice's main job: builds what is needed, starts sluiced on a free loopback port (CUDA when a
# GPU is present, else the CPU device), and solves IFDS problems through it with `sluice solve`:
# the possibly-uninitialized-variables example of the 1995 IFDS paper (results and statistics
# printed), then a generated problem whose answer is checked against the reference solver.
# Stops the daemon, which drains and logs its sessions.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"

ensure_packages
configure_and_build >/dev/null

work=$(mktemp -d)
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true  # it may have exited since the check
    wait "$daemon_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$BUILD/bin/sluiced" --listen=127.0.0.1:0 --backend=auto >"$work/stdout" 2>"$work/daemon.log" &
daemon_pid=$!
address=""
for _ in $(seq 1 300); do  # up to 30 s for the daemon to report its port
  address=$(sed -n 's/^sluiced listening on //p' "$work/stdout")
  [ -n "$address" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$address" ] || { echo "sluiced did not start" >&2; cat "$work/daemon.log" >&2; exit 1; }
log "sluiced is serving on $address"

log "sluice solve examples/uninitialized.ifds (the running example of Reps, Horwitz, Sagiv 1995)"
"$BUILD/bin/sluice" solve examples/uninitialized.ifds --server="$address" --stats

log "a generated problem: sluice gen --seed=1 --procedures=400 --facts=40"
"$BUILD/bin/sluice" gen --seed=1 --procedures=400 --facts=40 --out="$work/generated.ifds"
"$BUILD/bin/sluice" solve "$work/generated.ifds" --server="$address" --stats \
  --out="$work/resident.tsv"
"$BUILD/bin/sluice" solve "$work/generated.ifds" --solver=reference --out="$work/reference.tsv"
if cmp -s "$work/resident.tsv" "$work/reference.tsv"; then
  log "the resident solve through sluiced matches the reference solver:" \
    "$(wc -l <"$work/resident.tsv") node/fact results"
else
  log "MISMATCH between the resident and the reference solver"
  exit 1
fi

kill -TERM "$daemon_pid"
wait "$daemon_pid"
daemon_pid=""
log "sluiced drained and exited; its log:"
cat "$work/daemon.log" >&2
