#!/usr/bin/env bash
# Sluice's main job: builds what is needed, starts sluiced on a free loopback port, runs a
# resident fixed point (BFS levels over a generated million-node graph) through it with the
# remote client, prints what it computed (checked against a host BFS), and stops the daemon.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"

ensure_packages
configure_and_build >/dev/null

work=$(mktemp -d)
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" && wait "$daemon_pid" || true
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

"$BUILD/bin/sluice" bfs --server="$address" --nodes=1000000 --degree=4 --seed=1 --window=8

kill -TERM "$daemon_pid"
wait "$daemon_pid"
daemon_pid=""
log "sluiced drained and exited; its log:"
cat "$work/daemon.log" >&2
