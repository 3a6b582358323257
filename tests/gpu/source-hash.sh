#!/usr/bin/env bash
# Prints one hash of the source files the GPU check's binaries are built from (code and build
# files; not scripts or prose), so tests/gpu/run.sh can tell a gpu-bundle/ built from another
# tree. Where git is there, the files are what the device tool copies (tracked, and untracked
# but not ignored); the device machine's copy has no git, and there every file in those folders
# counts (nothing ignored lives in them). Regular files only, in both: a symbolic link travels
# as a link, which `find -type f` does not list, so links never count.
set -euo pipefail
cd "$(dirname "$0")/../.."
dirs=(base bench client cmake engine ifds kernels proto server tests tools workloads CMakeLists.txt
  CMakePresets.json)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z -co --exclude-standard -- "${dirs[@]}" | while IFS= read -r -d '' path; do
    if [ -f "$path" ] && [ ! -L "$path" ]; then printf '%s\n' "$path"; fi
  done
else
  for d in "${dirs[@]}"; do [ ! -e "$d" ] || find "$d" -type f; done
fi | grep -v -E '\.(sh|md)$' | LC_ALL=C sort | tr '\n' '\0' | xargs -0 sha256sum | sha256sum |
  cut -c1-16
