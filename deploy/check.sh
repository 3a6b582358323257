#!/usr/bin/env bash
# The cheap checks of deploy/, run by scripts/test.sh (deploy/image-test.sh builds and runs the
# image itself, too slow for every run):
#   - the Kubernetes manifests against the Kubernetes schemas, and the Dockerfile's stages, user,
#     health check and stop signal (deploy/check/check.mjs, with npm packages from the registry);
#   - the systemd unit with systemd-analyze: it verifies, restarts on exit 3 but not on exit 2,
#     and its sandboxing keeps the exposure score low.
set -euo pipefail
DEPLOY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$DEPLOY")
log() { printf '==> %s\n' "$*" >&2; }

log "deploy: Kubernetes manifests and the Dockerfile"
if ! command -v npm >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >/dev/null
fi
(cd "$DEPLOY/check" && npm ci --no-audit --no-fund --loglevel=error >/dev/null && node check.mjs)

log "deploy: the alerting rules"
promtool check rules "$DEPLOY/prometheus/alerts.yaml"

log "deploy: the systemd unit"
unit=$(mktemp -d)/sluiced.service
trap 'rm -rf "$(dirname "$unit")"' EXIT
# verify checks that ExecStart's program exists: the one built here stands in for the installed.
daemon="$ROOT/build/bin/sluiced"
[ -x "$daemon" ] || daemon=/bin/true
sed "s|/usr/local/bin/sluiced|$daemon|" "$DEPLOY/systemd/sluiced.service" >"$unit"
if ! output=$(systemd-analyze verify "$unit" 2>&1) || [ -n "$output" ]; then
  printf 'FAIL systemd-analyze verify:\n%s\n' "$output" >&2
  exit 1
fi
echo "ok   systemd-analyze verify: no complaints"
grep -qx 'Restart=on-failure' "$unit" && grep -qx 'RestartPreventExitStatus=2' "$unit" ||
  { echo "FAIL the unit must restart on failure (exit 3: GPU lost) but not on exit 2" >&2; exit 1; }
echo "ok   restarts on exit 1 and 3, not on exit 2"
exposure=$(systemd-analyze security --offline=yes "$unit" 2>/dev/null |
  sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 2.0) }' ||
  { echo "FAIL the unit's exposure score is '$exposure' (at most 2.0)" >&2; exit 1; }
echo "ok   systemd-analyze security: exposure $exposure (of 10)"
echo "deploy checks: all passed"
