#!/usr/bin/env bash
# Prints, NUL-separated and relative to the checkout, the files the device tool copies to the
# GPU machine: tracked files and untracked files that git does not ignore (no .git; a file
# deleted from the working tree is not there to copy). Carried paths (gpu-bundle/) come on top.
# Used by scripts/gpu-bundle.sh (the size that travels) and tests/gpu/run.sh --dry-run (the copy).
set -euo pipefail
cd "$(dirname "$0")/../.."
git ls-files -z -co --exclude-standard | while IFS= read -r -d '' path; do
  if [ -e "$path" ] || [ -L "$path" ]; then printf '%s\0' "$path"; fi
done
