#!/usr/bin/env bash
# The main job. Installs what is missing, builds, and runs it.
# Until the worker library lands this is grid_roundtrip: random gradients of 8
# simulated workers through the numerics and the wire format, summed as a
# switch sums them, checked against float64 and the documented error bound.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/release -j "$(nproc)" --target grid_roundtrip
build/release/examples/grid_roundtrip "$@"
