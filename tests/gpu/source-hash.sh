#!/usr/bin/env bash
# Prints one hash of the source files the GPU check's binaries are built from (code and build
# files; not scripts or prose), so tests/gpu/run.sh can tell a gpu-bundle/ built from another
# tree. Where git is there, the files are what the device tool copies (tracked, and untracked
# but not ignored); the device machine's copy has no git, and there every file in those folders
# counts (nothing ignored lives in them).
set -euo pipefail
cd "$(dirname "$0")/../.."
dirs=(base bench client cmake engine ifds kernels proto server tests tools workloads CMakeLists.txt
  CMakePresets.json)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -co --exclude-standard -- "${dirs[@]}"
else
  find "${dirs[@]}" -type f
fi | grep -v -E '\.(sh|md)$' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
