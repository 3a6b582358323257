#!/usr/bin/env bash
# The checks that keep the tree fit to travel can fail: scripts/check-tree-size.sh refuses a
# tracked file over 1 MiB and a tracked tree over 16 MiB, and passes a small one; and
# tests/gpu/source-hash.sh agrees between a checkout holding a symbolic link and the same tree
# copied without .git (the device tool's copy). Each case in a throwaway git repository.
# Usage: tree_checks_test.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check NAME WANT_RC PATTERN COMMAND...: exit code and output
  local name=$1 want=$2 pattern=$3 rc=0 output
  shift 3
  output=$("$@" 2>&1) || rc=$?
  if [ "$rc" = "$want" ] && printf '%s\n' "$output" | grep -q -E "$pattern"; then
    echo "ok   $name"
  else
    echo "FAIL $name: exit $rc (want $want), output:"; printf '%s\n' "$output" | sed 's/^/  /'
    failures=$((failures + 1))
  fi
}
repo() {  # repo DIR: a git repository holding the scripts under test
  mkdir -p "$1/scripts" "$1/tests/gpu"
  cp "$src/scripts/check-tree-size.sh" "$1/scripts/"
  cp "$src/tests/gpu/source-hash.sh" "$1/tests/gpu/"
  git -C "$1" init -q
}
commit() { git -C "$1" add -A && git -C "$1" -c user.name=t -c user.email=t@t commit -q -m t; }

repo "$work/small"
echo "int main() {}" >"$work/small/main.cc"
commit "$work/small"
check "a small tree passes" 0 "tracked tree: [0-9]+ KiB" "$work/small/scripts/check-tree-size.sh"

repo "$work/large-file"
head -c $((1024 * 1024 + 1)) /dev/zero >"$work/large-file/blob.bin"
commit "$work/large-file"
check "a tracked file over 1 MiB fails, named" 1 "blob.bin \(1024 KiB\)" \
  "$work/large-file/scripts/check-tree-size.sh"

repo "$work/large-tree"
for i in $(seq 1 17); do head -c $((1024 * 1024)) /dev/zero >"$work/large-tree/part$i.bin"; done
commit "$work/large-tree"
check "a tracked tree over 16 MiB fails" 1 "tracked tree is over 16 MiB" \
  "$work/large-tree/scripts/check-tree-size.sh"

# The source hash: a checkout with a link in a hashed folder, and its copy without .git.
repo "$work/hashed"
mkdir -p "$work/hashed/engine"
echo "int f();" >"$work/hashed/engine/f.h"
ln -s f.h "$work/hashed/engine/link.h"
commit "$work/hashed"
mkdir "$work/copy"
git -C "$work/hashed" ls-files -z | tar -C "$work/hashed" --null -T - -cf - |
  tar -C "$work/copy" -xf -
here=$(bash "$work/hashed/tests/gpu/source-hash.sh")
there=$(cd "$work/copy" && GIT_CEILING_DIRECTORIES="$work" bash tests/gpu/source-hash.sh)
check "the source hash agrees between a checkout with a link and its copy without .git" 0 \
  "^$here\$" echo "$there"
echo "different" >"$work/copy/engine/f.h"
changed=$(cd "$work/copy" && GIT_CEILING_DIRECTORIES="$work" bash tests/gpu/source-hash.sh)
check "the source hash changes with a file's contents" 1 "^" test "$changed" = "$here"

[ "$failures" = 0 ] && echo "all tree checks passed" && exit 0
exit 1
