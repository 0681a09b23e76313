#!/usr/bin/env bash
# Runs a program as the 8 ranks of a testbed job over kernel UDP links
# (grid-controller, 3 grid-switch, grid-root), prints rank 0's output, and
# fails if any rank fails. @WORK@ in an argument becomes the job's scratch
# directory (for files the ranks share).
#   run_job.sh TOOLS_DIR PROGRAM [ARGS...]
set -u
tools=$1
shift
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
fabric_scratch
fabric_start "$tools" "$work" --topology=testbed --workers=8 --planner=grid --slots=64 \
  --job-id=$job --udp-base-port=$base || exit 1
GRID_TIMEOUT_MS=60000 fabric_ranks 8 "${@//@WORK@/$work}"
status=0
fabric_wait_ranks || status=1
fabric_stop
cat "$work/rank-0.log"
[ $status = 0 ] || { for r in $(seq 1 7); do tail -3 "$work/rank-$r.log"; done; exit 1; }
