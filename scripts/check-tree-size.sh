#!/usr/bin/env bash
# Keeps the repository small enough to travel: fails when a tracked file is over 1 MiB (but for
# the justified exceptions below) or when the tracked tree is over 16 MiB. Build products
# (benchmark runs, installed tools, bundles) belong in .gitignore, not in git. The GPU check's
# device tool carries the tree plus gpu-bundle/ within 64 MiB (scripts/gpu-bundle.sh checks the
# sum), so every MiB here is one the bundle cannot have.
# Usage: scripts/check-tree-size.sh   (from anywhere inside the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."

readonly max_file=$((1024 * 1024))
readonly max_tree=$((16 * 1024 * 1024))
# Tracked files allowed past max_file, each with its reason. None today.
exceptions=()

total=0
large=()
while IFS= read -r -d '' path; do
  # A tracked file deleted in the working tree is not carried; a symbolic link counts as itself.
  [ -e "$path" ] || [ -L "$path" ] || continue
  size=$(stat -c %s -- "$path")
  total=$((total + size))
  if [ "$size" -gt "$max_file" ]; then
    excepted=0
    for e in "${exceptions[@]}"; do [ "$e" = "$path" ] && excepted=1; done
    [ "$excepted" = 1 ] || large+=("$path ($((size / 1024)) KiB)")
  fi
done < <(git ls-files -z --cached)

status=0
printf 'tracked tree: %d KiB (limit %d KiB)\n' $((total / 1024)) $((max_tree / 1024))
if [ "$total" -gt "$max_tree" ]; then
  echo "the tracked tree is over $((max_tree / 1024 / 1024)) MiB" >&2
  status=1
fi
if [ ${#large[@]} -gt 0 ]; then
  echo "tracked files over $((max_file / 1024)) KiB (ignore build products; or add a justified" \
    "exception in scripts/check-tree-size.sh):" >&2
  printf '  %s\n' "${large[@]}" >&2
  status=1
fi
exit $status
