#!/usr/bin/env bash
# ThreadSanitizer: builds with clang and GRID_SANITIZE=thread in build/tsan,
# then runs the tests whose code runs on several threads: communicators
# (ranks as threads, each with its engine and heartbeat thread), the root
# runner, the store, the transports, ranks of several progress threads
# (threads_test), failures and two jobs, the drop ledger and node
# reporter that switches and the root share with the ranks, the metrics
# server they run beside their packet loops, the grid
# planners' improvement (moves scored on several threads); then grid-switch
# on one and on three lcores between memif processes (switch_memif).
# Any report fails the test that produced it (halt_on_error).
#
#   scripts/tsan.sh [CTEST_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/debian.sh  # debian_clang
build=build/tsan
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-$debian_clang -DCMAKE_CXX_COMPILER=clang++-$debian_clang -DGRID_SANITIZE=thread
cmake --build "$build" -j "$(nproc)" --target allreduce_test threads_test transport_test \
  bootstrap_test store_test engine_test failures_test two_jobs_test adversarial_test planner_test \
  node_test grid-switch memif_peer
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
  -R '^(Allreduce|AllreduceEdges|Bootstrap|Store|UdpTransport|DpdkTransport|VerbsTransport|Failures|TwoJobs|Adversarial|FaultyMember|WorkerChecks|GridPaths|ThreadsUnderFaults|ThreadsOptions|TransportLanes|DropLedger|NodeReporter|MetricsServer|DropNotices)\.|^Ranks/Threads\.|^switch_memif$' \
  "$@"
