#!/usr/bin/env bash
# Builds the CPU variant of the container image from this tree and runs it for real:
#   1. a Debian 12 base image made with debootstrap from the package mirror, when there is none
#      (no image registry is needed);
#   2. `buildah bud --isolation chroot` of the Dockerfile (it compiles the tree: slow);
#   3. checks of the image's configuration: non-root user, entrypoint, stop signal, health check;
#   4. sluiced started from the image on a free loopback port, with its health-only port;
#   5. the image's HEALTHCHECK command, `sluice health`, and a remote `sluice solve` whose answer
#      must equal the reference solver's;
#   6. a drain (SIGTERM): exit 0 with every buffer freed.
# Needs root, buildah and debootstrap (installed when missing). Prints what it checked and
# "image test: PASS" at the end; exits non-zero at the first failure.
#
#   deploy/image-test.sh [--rebuild-base]
#
# SLUICE_IMAGE_CACHE (default ~/.cache/sluice-image) keeps the base's root file system between
# runs; SLUICE_IMAGE (default localhost/sluice:cpu) names the image built.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SLUICE_IMAGE_CACHE:-$HOME/.cache/sluice-image}
BASE=localhost/sluice-base:debian12
IMAGE=${SLUICE_IMAGE:-localhost/sluice:cpu}
MIRROR=${SLUICE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# vfs works wherever buildah does (no overlay mounts inside a sandbox); chroot isolation runs
# without user namespaces, which this kind of machine refuses.
export STORAGE_DRIVER=${STORAGE_DRIVER:-vfs}
export BUILDAH_ISOLATION=chroot

source "$ROOT/scripts/common.sh"  # log, ensure_packages, ensure_debian_rootfs
fail() { printf 'image test: FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "run as root (buildah's chroot isolation and debootstrap need it)"
missing=()
for tool in buildah debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
    >/dev/null
fi

work=$(mktemp -d)
ctr=""
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null || true
  [ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. the base image ------------------------------------------------------------------------
if [ "${1:-}" = "--rebuild-base" ]; then
  buildah rmi -f "$BASE" >/dev/null 2>&1 || true
  rm -rf "$CACHE/rootfs"
fi
if ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
  SLUICE_IMAGE_CACHE=$CACHE SLUICE_DEBIAN_MIRROR=$MIRROR ensure_debian_rootfs >/dev/null ||
    fail "no Debian 12 root file system"
  log "importing it as $BASE"
  # The sources a Debian image has: the release, its updates and its security updates.
  cat >"$CACHE/rootfs/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
  tar -C "$CACHE/rootfs" --exclude=./dev/* --exclude=./proc/* --exclude=./sys/* \
    --exclude=./var/cache/apt/archives/*.deb -cf "$work/rootfs.tar" .
  base_ctr=$(buildah from scratch)
  buildah add "$base_ctr" "$work/rootfs.tar" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash "$base_ctr"
  buildah commit --quiet --rm "$base_ctr" "$BASE" >/dev/null
  rm -f "$work/rootfs.tar"
fi
log "base image: $BASE"

# ---- 2. the image -----------------------------------------------------------------------------
log "building $IMAGE from $ROOT (CPU variant; compiles the tree)"
start=$(date +%s)
buildah bud --isolation chroot --format docker --layers --build-arg "BASE_IMAGE=$BASE" --build-arg "JOBS=$(nproc)" \
  -t "$IMAGE" -f "$ROOT/Dockerfile" "$ROOT" >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log" >&2; fail "buildah bud failed"; }
log "built in $(( $(date +%s) - start )) s"

# ---- 3. its configuration ---------------------------------------------------------------------
inspect() { buildah inspect --type image --format "$1" "$IMAGE"; }
user=$(inspect '{{.OCIv1.Config.User}}')
[ "$user" = "10001:10001" ] || fail "the image runs as '$user', not the sluice user 10001"
entrypoint=$(inspect '{{.OCIv1.Config.Entrypoint}}')
[ "$entrypoint" = "[/usr/local/bin/sluiced]" ] || fail "entrypoint is $entrypoint"
stop=$(inspect '{{.OCIv1.Config.StopSignal}}')
[ "$stop" = "SIGTERM" ] || fail "stop signal is '$stop'"
health=$(inspect '{{.Docker.Config.Healthcheck.Test}}')
case "$health" in
  *"/usr/local/bin/sluice health --server=127.0.0.1:7451"*) ;;
  *) fail "the health check is '$health'" ;;
esac
size=$(buildah images --format '{{.Size}}' "$IMAGE" | head -1)
log "configuration: user $user, entrypoint $entrypoint, stop signal $stop, size $size"
log "health check: $health"

ctr=$(buildah from "$IMAGE")
in_image() { buildah run --isolation chroot "$ctr" -- "$@"; }
uid=$(in_image id -u)
[ "$uid" = "10001" ] || fail "commands in the image run as uid $uid"
# The image's default command serves every address, so without a tenants file it refuses to
# start, saying why.
if in_image /usr/local/bin/sluiced --listen=0.0.0.0:0 --tenants_file=/etc/sluice/tenants.toml \
    >"$work/refused.out" 2>&1; then
  fail "sluiced started without its tenants file"
fi
grep -q "tenants.toml" "$work/refused.out" || fail "no reason given: $(cat "$work/refused.out")"
log "without /etc/sluice/tenants.toml: $(grep -m1 "tenants.toml" "$work/refused.out")"

# ---- 4. sluiced from the image ----------------------------------------------------------------
# chroot isolation shares the host's network: a loopback port of the image's daemon is the
# host's. Port 0 picks free ports, which the daemon prints.
buildah run --isolation chroot "$ctr" -- /usr/local/bin/sluiced --listen=127.0.0.1:0 \
  --health_listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 --log_format=json \
  --drain_timeout=10s >"$work/daemon.out" 2>"$work/daemon.log" &
runner=$!
address=""
for _ in $(seq 300); do
  address=$(sed -n 's/^sluiced listening on //p' "$work/daemon.out")
  [ -n "$address" ] && break
  kill -0 "$runner" 2>/dev/null || break
  sleep 0.1
done
[ -n "$address" ] || { cat "$work/daemon.log" >&2; fail "sluiced did not start"; }
health_address=$(sed -n 's/.*health checks (plaintext, health service only) on \([^"]*\)".*/\1/p' \
  "$work/daemon.log")
daemon_pid=$(pgrep -f -n "^/usr/local/bin/sluiced --listen=127.0.0.1:0 --health_listen") ||
  fail "cannot find sluiced's process"
log "sluiced from the image serves on $address (health $health_address, pid $daemon_pid)"

# ---- 5. health and a remote solve -------------------------------------------------------------
in_image /usr/local/bin/sluice health --server="$health_address" --timeout=4s >"$work/health" ||
  fail "the health check failed"
log "health check: $(cat "$work/health")"
buildah copy "$ctr" "$ROOT/examples/uninitialized.ifds" /tmp/problem.ifds >/dev/null
in_image /usr/local/bin/sluice solve /tmp/problem.ifds --solver=reference >"$work/reference" ||
  fail "the reference solve failed"
in_image /usr/local/bin/sluice solve /tmp/problem.ifds --server="$address" --stats \
  >"$work/remote" 2>"$work/remote.err" || { cat "$work/remote.err" >&2; fail "the remote solve failed"; }
cmp -s "$work/reference" "$work/remote" || fail "the remote answer differs from the reference"
log "remote solve: $(wc -l <"$work/remote") facts, equal to the reference solver's"
grep -E "round trips|windows" "$work/remote.err" | head -2 | sed 's/^/    /' >&2 || true

# ---- 6. the drain -----------------------------------------------------------------------------
kill -TERM "$daemon_pid"
status=0
wait "$runner" || status=$?
daemon_pid=""
[ "$status" -eq 0 ] || { tail -5 "$work/daemon.log" >&2; fail "sluiced exited $status after SIGTERM"; }
grep -q '"drained: .* 0 bytes of buffers still allocated' "$work/daemon.log" ||
  fail "no clean drain in the log"
log "drained: $(grep -o 'drained: [^"]*' "$work/daemon.log")"
echo "image test: PASS ($IMAGE, $size)"
