#!/usr/bin/env bash
# The main job: the paper's testbed on one machine. Installs what is missing,
# builds the tools, then runs scripts/testbed.sh: 3 software switches in a
# triangle, 8 workers and the root as separate DPDK processes over rate-limited
# memif links, a training-like allreduce loop per planner, every element
# checked, and a table of communication time per iteration.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/release -j "$(nproc)" \
  --target grid-controller grid-switch grid-root grid-allreduce-check
start=$(date +%s)
scripts/testbed.sh build/release/tools
echo "(testbed run: $(( $(date +%s) - start )) s)"
