#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite, twice:
#   1. clang with ASan+UBSan and the libFuzzer targets (each fuzzer runs briefly),
#   2. the release build (RelWithDebInfo), whose ctest summary ends the output.
# --quick runs only the release build. The 10^6-chunk soak (label "soak")
# is left out: ctest --test-dir build/release -L soak runs it.
# GRID_WERROR=ON (as CI sets it) makes warnings in GRID's own code errors.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/debian.sh  # debian_clang
jobs=$(nproc)

scripts/install-deps.sh

if [ "${1:-}" != "--quick" ]; then
  cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-$debian_clang -DCMAKE_CXX_COMPILER=clang++-$debian_clang \
    -DGRID_SANITIZE=address,undefined -DGRID_FUZZ=ON -DGRID_WERROR="${GRID_WERROR:-OFF}"
  cmake --build build/asan -j "$jobs"
  ctest --test-dir build/asan --output-on-failure -j "$jobs" -LE soak
fi

cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGRID_WERROR="${GRID_WERROR:-OFF}"
cmake --build build/release -j "$jobs"
ctest --test-dir build/release --output-on-failure -j "$jobs" -LE soak
