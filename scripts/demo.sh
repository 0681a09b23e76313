#!/usr/bin/env bash
# The main job: the paper's testbed on one machine. Installs what is missing,
# builds the tools, then runs scripts/testbed.sh in both regimes: 3 software
# switches in a triangle, 8 workers and the root as separate DPDK processes
# over rate-limited memif links, a training-like loop per planner (emulated
# compute, then an allreduce, every element checked), and a table of
# communication time, iteration time and throughput per planner.
#   paper  the PS ingress and the workers' ToRs' C_s bind (the paper's
#          testbed); ATP runs best effort, its ToRs passing chunks on.
#   links  every link alike: the regime where path-aware routing matters.
# 10 iterations each, one run; docs/results.md records REPEAT=5 runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/release -j "$(nproc)" \
  --target grid-controller grid-switch grid-root grid-allreduce-check grid-plan
start=$(date +%s)
status=0
for regime in paper links; do
  REGIME=$regime ITERATIONS=${ITERATIONS:-10} scripts/testbed.sh build/release/tools || status=1
  echo
done
echo "(testbed runs: $(( $(date +%s) - start )) s)"
exit $status
