#!/usr/bin/env bash
# tests/gpu/run.sh --dry-run: everything the GPU check will do on the GPU machine, done here,
# except touch a GPU, so that no minute of device time goes on a check that cannot start:
#   1. copies the tree the way the device tool does (tracked and untracked-not-ignored files,
#      no .git) plus gpu-bundle/ into a temporary folder, and checks the size against the
#      tool's 64 MiB;
#   2. runs the source-hash check in that copy and shows it agreeing with the checkout's and the
#      bundle's;
#   3. checks that no bundled binary lacks a library with only the bundle's lib/ to load from:
#      nothing resolves outside it but glibc and the C++ runtime, and (as root) inside a
#      minimal Debian 12 root file system, which has none of the build's libraries;
#   4. runs each bundled binary there (--gtest_list_tests or --help), and the check's first
#      step without a GPU: it must fail with the reason the device could not be created, not
#      crash.
# With --tree-only (scripts/test.sh, every run) only the cheap part: steps 1 and 2 for the tree
# alone. Exit code: 0 when every step passed.
set -euo pipefail
source "$(dirname "$0")/../../scripts/common.sh"
cd "$ROOT"

tree_only=0
case "${1:-}" in
  --tree-only) tree_only=1 ;;
  "") ;;
  *) echo "usage: tests/gpu/run.sh --dry-run [--tree-only]" >&2; exit 2 ;;
esac

readonly limit_bytes=$((64 * 1024 * 1024))  # what the device tool carries, tree and carry
failures=0
pass() { printf 'PASS %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
bytes_under() {
  find "$@" \( -type f -o -type l \) -printf '%s\n' | awk '{s += $1} END {print s + 0}'
}

if [ "$tree_only" = 0 ] && [ ! -f gpu-bundle/BUILD-INFO ]; then
  echo "no gpu-bundle/: run scripts/gpu-bundle.sh first" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
copy="$work/tree"
mkdir -p "$copy"

# ---- 1. the copy the device tool makes, and its size ----------------------------------------
tests/gpu/tree-files.sh | tar -C "$ROOT" --null -T - -cf - | tar -C "$copy" -xf -
tree_bytes=$(bytes_under "$copy")
bundle_bytes=0
if [ "$tree_only" = 0 ]; then
  cp -a gpu-bundle "$copy/"
  bundle_bytes=$(bytes_under "$copy/gpu-bundle")
fi
total=$((tree_bytes + bundle_bytes))
sizes="tree $(mib "$tree_bytes") + gpu-bundle $(mib "$bundle_bytes") = $(mib "$total")"
if [ "$total" -le "$limit_bytes" ]; then
  pass "what travels: $sizes, within the device tool's $(mib "$limit_bytes")"
else
  fail "what travels: $sizes, over the device tool's $(mib "$limit_bytes")"
fi
[ ! -e "$copy/.git" ] || fail "the copy holds .git"

# ---- 2. the source hash, in the copy (no git there) -----------------------------------------
here_hash=$(bash tests/gpu/source-hash.sh)
copy_hash=$(cd "$copy" && GIT_CEILING_DIRECTORIES="$work" bash tests/gpu/source-hash.sh)
if [ "$tree_only" = 0 ]; then
  bundle_hash=$(sed -n 's/^source //p' gpu-bundle/BUILD-INFO)
  if [ "$here_hash" = "$copy_hash" ] && [ "$copy_hash" = "$bundle_hash" ]; then
    pass "source hash: checkout $here_hash, copy without .git $copy_hash, gpu-bundle" \
      "$bundle_hash: they agree"
  else
    fail "source hash: checkout $here_hash, copy without .git $copy_hash, gpu-bundle" \
      "$bundle_hash (run scripts/gpu-bundle.sh again if only the bundle's differs)"
  fi
elif [ "$here_hash" = "$copy_hash" ]; then
  pass "source hash: checkout $here_hash, copy without .git $copy_hash: they agree"
else
  fail "source hash: checkout $here_hash, copy without .git $copy_hash"
fi

if [ "$tree_only" = 1 ]; then
  [ "$failures" = 0 ] && echo "dry run (tree only): every step passed" && exit 0
  echo "dry run (tree only): $failures step(s) FAILED"
  exit 1
fi

# ---- 3. libraries: only the bundle's lib/ beside glibc and the C++ runtime ------------------
bin="$copy/gpu-bundle/bin"
lib="$copy/gpu-bundle/lib"
chmod +x "$bin"/*
system_libs='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libgcc_s'
system_libs+='|libstdc\+\+)\.so'
for b in "$bin"/*; do
  name=$(basename "$b")
  resolved=$(LD_LIBRARY_PATH="$lib" ldd "$b" 2>&1) || true
  missing=$(printf '%s\n' "$resolved" | awk '/not found/ {print $1}' | xargs)
  outside=$(printf '%s\n' "$resolved" |
    awk -v lib="$lib/" '$2 == "=>" && index($3, lib) != 1 {print $1}' |
    grep -v -E "$system_libs" | xargs || true)
  if [ -n "$missing" ]; then
    fail "libraries of $name: not found: $missing"
  elif [ -n "$outside" ]; then
    fail "libraries of $name: loaded from outside gpu-bundle/lib, so missing on a bare machine:" \
      "$outside"
  fi
done
[ "$failures" = 0 ] && pass "libraries: every bundled binary loads only gpu-bundle/lib, glibc" \
  "and the C++ runtime ($(ls "$lib" | wc -l) libraries bundled)"

# Inside a minimal Debian 12 root (root only: chroot), none of the build's libraries exist.
jail=""
if [ "$(id -u)" = 0 ] && rootfs=$(ensure_debian_rootfs); then
  jail="$rootfs/tmp/sluice-dry-run.$$"
  rm -rf "$jail"
  cp -a "$copy/gpu-bundle" "$jail"
  trap 'rm -rf "$work" "$jail"' EXIT
  in_jail() {
    chroot "$rootfs" env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="${jail#"$rootfs"}/lib" \
      ${SLUICE_REQUIRE_GPU:+SLUICE_REQUIRE_GPU=$SLUICE_REQUIRE_GPU} "$@"
  }
  jail_bin="${jail#"$rootfs"}/bin"
  unresolved=$(for b in "$jail"/bin/*; do in_jail ldd "$jail_bin/$(basename "$b")"; done 2>&1 |
    grep "not found" | awk '{print $1}' | sort -u | xargs || true)
  if [ -z "$unresolved" ]; then
    pass "libraries in a minimal Debian 12 root: every bundled binary resolves all of them"
  else
    fail "libraries in a minimal Debian 12 root: not found: $unresolved"
  fi
  run_bin() { in_jail "$jail_bin/$1" "${@:2}"; }
  where="in a minimal Debian 12 root"
else
  echo "note: not root or no Debian 12 root file system: the binaries run on this machine"
  run_bin() { LD_LIBRARY_PATH="$lib" "$bin/$1" "${@:2}"; }
  where="with only gpu-bundle/lib added"
fi

# ---- 4. each binary runs; without a GPU the check fails clearly ------------------------------
for b in "$bin"/*; do
  name=$(basename "$b")
  case "$name" in
    *_test) args=(--gtest_list_tests) ;;
    *) args=(--help) ;;
  esac
  rc=0
  output=$(run_bin "$name" "${args[@]}" 2>&1) || rc=$?
  # absl's --help exits 1 after printing the usage; a loader failure is 127, a crash 128 + signal.
  if { [ "$rc" = 0 ] || { [ "$rc" = 1 ] && [ "${args[0]}" = --help ]; }; } &&
    [ -n "$output" ]; then
    pass "$name ${args[*]} runs $where ($(printf '%s\n' "$output" | wc -l) lines)"
  else
    fail "$name ${args[*]} $where: exit $rc: $(printf '%s\n' "$output" | tail -3)"
  fi
done
# Without a GPU, SLUICE_REQUIRE_GPU fails the suites with the reason (FailedPrecondition), as on
# a GPU machine whose device cannot be created; it must not crash.
rc=0
output=$(SLUICE_REQUIRE_GPU=1 run_bin gpu_cuda_suites_test --gtest_brief=1 \
  --gtest_filter='Cuda/ConformanceTest/0.*:CudaDeviceTest.*' 2>&1) || rc=$?
if [ "$rc" = 1 ] && printf '%s' "$output" | grep -q "FAILED_PRECONDITION: a GPU is required"; then
  pass "no GPU with SLUICE_REQUIRE_GPU: the suites fail with the reason, exit 1" \
    "($(printf '%s\n' "$output" | grep -m1 -o 'could not be created: .*' | cut -c1-100))"
else
  fail "no GPU with SLUICE_REQUIRE_GPU: exit $rc (want 1 and the creation error):" \
    "$(printf '%s\n' "$output" | tail -5)"
fi

echo "bundle: $(sed -n 's/^commit //p' gpu-bundle/BUILD-INFO), sm: $(sed -n \
  's/^cuda-architectures //p' gpu-bundle/BUILD-INFO), glibc needed: $(sed -n \
  's/^glibc-needed //p' gpu-bundle/BUILD-INFO)"
if [ "$failures" = 0 ]; then
  echo "dry run: every step passed; on a machine lent a GPU: tests/gpu/run.sh, carrying gpu-bundle"
  exit 0
fi
echo "dry run: $failures step(s) FAILED"
exit 1
