#!/usr/bin/env bash
# Sluice's main job: builds what is needed, then runs a resident fixed point (BFS levels over a
# generated million-node graph) through the resident-dispatch interface and prints what it
# computed, checked against a host BFS.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"

ensure_packages
configure_and_build >/dev/null
"$BUILD/bin/sluice" bfs --nodes=1000000 --degree=4 --seed=1 --window=8
