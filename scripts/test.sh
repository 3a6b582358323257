#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (installing whatever is missing), builds Sluice into build/
# and runs every test. The exit code is the verdict.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"

ensure_packages
configure_and_build
log "running tests"
ctest --test-dir "$BUILD" --output-on-failure -j "$(jobs)" --timeout 600
