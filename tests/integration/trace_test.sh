#!/usr/bin/env bash
# GRID_TRACE on a 4-rank job (docs/observability.md): the testbed over
# kernel UDP links with 1% loss, duplication and reordering, every rank,
# switch and the root tracing into one directory. Each file must hold to
# Chrome's trace-event format, as trace_check.py reads it (fields, phases,
# nesting, the events each role records), and grid-report must read them
# all and name a bottleneck. A second job keeps 300 events per thread
# (GRID_TRACE_EVENTS), so every ring overflows: its files must say what
# they dropped and still nest.
#   trace_test.sh TOOLS_DIR
set -u
tools=$1
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
fabric_scratch
for events in default 300; do
  export GRID_TRACE=$work/trace-$events
  if [ $events = default ]; then unset GRID_TRACE_EVENTS; else export GRID_TRACE_EVENTS=$events; fi
  mkdir -p "$work/$events"  # a store of its own: the first job's fence is in the first
  fabric_start "$tools" "$work/$events" --topology=testbed --workers=4 --planner=grid --slots=64 \
    --job-id=$job --udp-base-port=$base --link-impairment=loss=0.01,dup=0.01,reorder=0.01 ||
    fail "grid-controller"
  GRID_TIMEOUT_MS=60000 fabric_ranks 4 "$tools/grid-allreduce-check" --iterations=10 \
    --count=32768 --types=int32,float32
  fabric_wait_ranks || fail "a rank failed"
  fabric_stop
  python3 tests/integration/trace_check.py "$GRID_TRACE" --ranks=4 --switches=3 --roots=1 \
    > "$work/check.log" 2>&1 || fail "trace_check: $(cat "$work/check.log")"
  cat "$work/check.log"
  if [ $events != default ]; then
    grep -q "[1-9][0-9]* dropped" "$work/check.log" || fail "a 300-event ring dropped nothing"
    continue
  fi
  "$tools/grid-report" "$GRID_TRACE" > "$work/report.log" 2>&1 ||
    fail "grid-report: $(cat "$work/report.log")"
  cat "$work/report.log"
  grep -q "^limited by: " "$work/report.log" || fail "grid-report named no bottleneck"
  base=$((base + 100))
done
exit 0
