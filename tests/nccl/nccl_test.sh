#!/usr/bin/env bash
# The NCCL-compatible C API on an emulated fabric: grid-controller plans the
# testbed with 4 workers into a file store, grid-switch and grid-root run it
# over kernel UDP links with 1% loss, duplication and reordering, and four
# processes of nccl_check (a C program that knows only grid/nccl.h, linked
# with libgrid_nccl.so) run as ranks 0-3, rank 0 handing its ncclUniqueId to
# the others in a file.
#
#   nccl_test.sh TOOLS_DIR NCCL_CHECK
set -u
tools=$1
check=$2
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
fabric_scratch

fabric_start_lossy "$tools"
# The program takes its rank from its arguments, as an NCCL program does;
# the store comes from GRID_STORE (fabric_ranks sets it) through the id.
fabric_rank_pids=()
for r in 0 1 2 3; do
  GRID_STORE="file:$work/store" GRID_TIMEOUT_MS=30000 GRID_RTO_US=5000 \
    "$check" "$r" 4 "$work/nccl-id" > "$work/rank-$r.log" 2>&1 &
  fabric_rank_pids+=($!)
done
fabric_wait_ranks || fail "a rank failed"
for r in 0 1 2 3; do grep -q "rank $r: ok" "$work/rank-$r.log" || fail "rank $r"; done
# A second program on the same switches and root: every rank's grouped init
# must fail at ncclGroupEnd (the fence), never sum with the first run's slots.
rm -f "$work/nccl-id"
fabric_rank_pids=()
for r in 0 1 2 3; do
  GRID_STORE="file:$work/store" GRID_TIMEOUT_MS=3000 GRID_RTO_US=5000 \
    "$check" "$r" 4 "$work/nccl-id" rerun > "$work/rerun-$r.log" 2>&1 &
  fabric_rank_pids+=($!)
done
fabric_wait_ranks || { cat "$work"/rerun-*.log; fail "a rank of the second run failed"; }
for r in 0 1 2 3; do grep -q "rank $r: ok" "$work/rerun-$r.log" || fail "rerun rank $r"; done
fabric_stop
echo "nccl: 4 ranks, every check held; a second run's grouped init refused"
