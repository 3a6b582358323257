#!/usr/bin/env bash
# Prints one hash of the source files the GPU check's binaries are built from (code and build
# files; not scripts or prose), so tests/gpu/run.sh can tell a gpu-bundle/ built from another
# tree. Needs no git: the device machine's copy of the tree has none.
set -euo pipefail
cd "$(dirname "$0")/../.."
{
  find base bench client cmake ifds kernels proto server tests tools -type f \
    ! -name '*.sh' ! -name '*.md'
  ls CMakeLists.txt CMakePresets.json
} | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
