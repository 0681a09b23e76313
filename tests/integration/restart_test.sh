#!/usr/bin/env bash
# A switch or the root restarts in the middle of a job of separate processes
# (docs/security.md, "Failures"): killed with SIGKILL and started again at
# once, with everything it held lost. Every rank must end exact (the job
# recovered through retransmissions) or with a clear error ("timed out ...")
# within twice its timeout, never with a wrong element and never hung. Then the next job (another id and
# token, the same switch processes, their tables reloaded with SIGHUP, a new
# root) must run exact.
#
#   restart_test.sh TOOLS_DIR switch|root
set -uo pipefail
tools=$1
what=$2
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
work=$(mktemp -d /tmp/grid-restart.XXXXXX)
restarted=""
trap 'fabric_kill; [ -n "$restarted" ] && kill -KILL "$restarted" 2>/dev/null; rm -rf "$work"' EXIT
fail() {
  echo "restart_test: FAIL: $*"
  for f in "$work"/*.log; do echo "== $f"; tail -c 500 "$f"; echo; done
  exit 1
}
timeout_ms=3000
base=$((20000 + RANDOM % 30000))
controller_args=(--topology=testbed --workers=8 --planner=switchml --slots=32 --udp-base-port=$base)
fabric_start "$tools" "$work" "${controller_args[@]}" --job-id=1 || fail "controller"
# fabric_pids: the switches in name order (S1, S2, S3), then the root.
GRID_TIMEOUT_MS=$timeout_ms fabric_ranks 8 "$tools/grid-allreduce-check" --iterations=100000 \
  --seconds=4 --count=4096 --types=int32
sleep 1
start=$(date +%s)
if [ "$what" = switch ]; then
  victim=${fabric_pids[1]}  # S2
  kill -KILL "$victim"; wait "$victim" 2>/dev/null
  mapfile -t ports < "$work/store/grid/switch-ports/S2"
  "$tools/grid-switch" "${ports[@]}" --store="file:$work/store" --name=S2 \
    > "$work/switch-S2-restarted.log" 2>&1 &
  restarted=$!
  fabric_pids[1]=$restarted
else
  victim=${fabric_pids[3]}
  kill -KILL "$victim"; wait "$victim" 2>/dev/null
  "$tools/grid-root" --store="file:$work/store" > "$work/root-restarted.log" 2>&1 &
  restarted=$!
  fabric_pids[3]=$restarted
fi
fabric_wait_ranks  # until their 4 s are over, or an operation fails
elapsed=$(( $(date +%s) - start ))
# An error comes within 2x the timeout of the operation it hit, which began
# before the restart at the earliest; a recovered job ends after its 4 s.
[ "$elapsed" -le $(( 2 * timeout_ms / 1000 + 2 )) ] || fail "the ranks ended $elapsed s after the restart"
recovered=0
for r in $(seq 0 7); do
  log=$work/rank-$r.log
  grep -q '"wrong":0,' "$log" || fail "rank $r returned wrong elements"
  if grep -q '"ok":true' "$log"; then
    recovered=$((recovered + 1))
  else
    grep -q 'timed out' "$log" || fail "rank $r did not end with a clear error: $(tail -c 300 "$log")"
  fi
done
echo "restart_test: after the $what restart, $recovered of 8 ranks finished exact, the others" \
  "ended with a clear error; all within $elapsed s: $(
  sed -n 's/.*"error":"\([^"]*\)".*/\1/p' "$work/rank-0.log" | cut -c1-200)"

# The next job on the same switches: new tables (SIGHUP), a new root.
kill -KILL "${fabric_pids[3]}" 2>/dev/null; wait "${fabric_pids[3]}" 2>/dev/null
"$tools/grid-controller" --store="file:$work/store" "${controller_args[@]}" --job-id=2 \
  > "$work/controller-2.log" 2>&1 || fail "controller for job 2"
for i in 0 1 2; do kill -HUP "${fabric_pids[$i]}"; done
sleep 0.5
"$tools/grid-root" --store="file:$work/store" > "$work/root-2.log" 2>&1 &
fabric_pids[3]=$!
GRID_TIMEOUT_MS=30000 fabric_ranks 8 "$tools/grid-allreduce-check" --iterations=5 --count=4096 \
  --types=int32,float32
fabric_wait_ranks || fail "job 2 failed"
for r in $(seq 0 7); do grep -q '"ok":true' "$work/rank-$r.log" || fail "job 2 rank $r"; done
fabric_stop
echo "restart_test: OK: the next job ran exact on the same switches"
