#!/usr/bin/env bash
# A whole job as separate processes on one machine (scripts/fabric.sh):
# grid-controller plans the testbed (3 switches, 8 workers, 1 root) into a
# file store, three grid-switch processes and grid-root run the fabric, and
# eight grid-allreduce-check ranks join through the environment.
#
#   cluster_test.sh FABRIC SCENARIO TOOLS_DIR WORKER
#     FABRIC    udp (kernel UDP links) or memif (DPDK memif links)
#     SCENARIO  lossy: 1% loss, duplication and reordering on every link
#                 direction, each rank and the root on two threads sharing
#                 their link (GRID_THREADS=2, grid-root --threads=2); every
#                 result must be right, and retransmissions must happen
#               lanes (memif): links of two queue pairs (--memif-queues=2),
#                 so each rank's and the root's two threads have a queue
#                 pair of their own (Transport::OpenLanes) and each switch
#                 two pipeline lcores; every result must be right
#               kill: rank 3 is killed mid-operation; every other rank must
#                 fail within 2x the timeout, and nothing may be left running,
#                 bound or mapped
set -u
fabric=$1
mode=$2
tools=$3
worker=$4
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
fabric_scratch

impair=()
[ "$mode" = lossy ] && impair=(--link-impairment=loss=0.01,dup=0.01,reorder=0.01)
if [ "$fabric" = memif ]; then
  links=(--memif-dir="$work/sock" --eal-memory-mb=64)
else
  links=(--udp-base-port=$base)
fi
[ "$mode" = lossy ] && export FABRIC_ROOT_FLAGS=--threads=2
if [ "$mode" = lanes ]; then
  [ "$fabric" = memif ] || fail "the lanes scenario runs on memif"
  # Two pipeline lcores' mbuf pools do not fit a switch's 64 MB.
  links=(--memif-dir="$work/sock" --eal-memory-mb=192 --memif-queues=2)
  export FABRIC_ROOT_FLAGS=--threads=2
fi
fabric_start "$tools" "$work" --topology=testbed --workers=8 --planner=grid --slots=64 \
  --job-id=$job "${links[@]}" "${impair[@]}" || fail "grid-controller"
# No --elements: the controller takes the widest frame memif and loopback
# UDP carry (docs/worker.md, "Frame width and pool").
grep -q '"elements": 1024' "$work/store/grid/worker/0" ||
  fail "the controller's default frame is not 1024 elements: $(grep elements "$work/store/grid/worker/0")"

if [ "$mode" = lossy ]; then
  GRID_TIMEOUT_MS=60000 GRID_RTO_US=5000 GRID_THREADS=2 fabric_ranks 8 "$worker" --iterations=3 \
    --count=20000
  fabric_wait_ranks || fail "a worker failed"
  retrans=0
  for r in $(seq 0 7); do
    grep -q '"ok":true' "$work/rank-$r.log" || fail "rank $r: $(cat "$work/rank-$r.log")"
    n=$(sed -n 's/.*"retransmissions":\([0-9]*\).*/\1/p' "$work/rank-$r.log")
    retrans=$((retrans + n))
  done
  [ "$retrans" -gt 0 ] || fail "no retransmissions under 1% loss"
  grep -q "2 threads on" "$work/root.log" || fail "grid-root is not on 2 threads: $(cat "$work/root.log")"
  echo "$fabric: 8 ranks and the root on 2 threads, every result right; $retrans retransmissions"
  cat "$work/rank-0.log"
elif [ "$mode" = lanes ]; then
  GRID_TIMEOUT_MS=60000 GRID_THREADS=2 fabric_ranks 8 "$worker" --iterations=3 --count=20000
  fabric_wait_ranks || fail "a worker failed"
  for r in $(seq 0 7); do
    grep -q '"ok":true' "$work/rank-$r.log" || fail "rank $r: $(cat "$work/rank-$r.log")"
  done
  grep -q "lane 0 of 2 on queue pair 0" "$work/root.log" ||
    fail "grid-root's threads do not have queue pairs of their own: $(cat "$work/root.log")"
  echo "memif: 8 ranks and the root on 2 threads, a queue pair each; every result right"
  cat "$work/rank-0.log"
elif [ "$mode" = kill ]; then
  # The first operation waits for every rank to start; on these 2-core
  # machines memif ranks start up to a few seconds apart.
  timeout_ms=5000
  GRID_TIMEOUT_MS=$timeout_ms GRID_RTO_US=5000 fabric_ranks 8 "$worker" --iterations=100000 \
    --count=20000 --types=int32
  # Kill rank 3 once every rank has finished an operation (its heartbeat,
  # "<submitted> <unix_ms> run", counts a second one): a fixed sleep could
  # end before a slow machine's DPDK start-up did, and then the ranks would
  # time out on a rank that never joined, not on one that died.
  started=$(date +%s)
  while :; do
    joined=0
    for r in $(seq 0 7); do
      submitted=$(cut -d' ' -f1 "$work/store/grid/heartbeat/$r" 2> /dev/null)
      [ "${submitted:-0}" -ge 2 ] 2> /dev/null && joined=$((joined + 1))
    done
    [ $joined = 8 ] && break
    [ $(($(date +%s) - started)) -lt 60 ] || fail "only $joined of 8 ranks finished an operation in 60 s"
    sleep 0.1
  done
  kill -KILL "${fabric_rank_pids[3]}"
  killed_at=$(date +%s%N)
  for r in 0 1 2 4 5 6 7; do
    wait "${fabric_rank_pids[$r]}"
    code=$?
    took_ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
    [ $code = 3 ] || fail "rank $r exited $code, not with an error (3)"
    [ $took_ms -lt $((2 * timeout_ms)) ] ||
      fail "rank $r took ${took_ms} ms after the kill (timeout $timeout_ms ms)"
    grep -q "timed out" "$work/rank-$r.log" || fail "rank $r: $(cat "$work/rank-$r.log")"
    grep -q "not responding 3" "$work/rank-$r.log" ||
      fail "rank $r does not name rank 3: $(cat "$work/rank-$r.log")"
  done
  echo "rank 3 killed; every other rank failed within 2x the timeout:"
  grep -o '"error":"[^"]*"' "$work/rank-0.log"
fi
# Stop the fabric (clients before servers); nothing may be left running,
# holding a port, or leaving DPDK runtime files.
fabric_stop
grep -q '"completed"' "$work/root.log" || fail "grid-root printed no counters"
if [ "$fabric" = udp ] && command -v ss > /dev/null &&
  ss -uln | grep -q "127.0.0.1:$((base + 1))\b"; then
  fail "a UDP port is still bound"
fi
for p in $(pgrep -f "$work" 2>/dev/null); do fail "process $p is still running"; done
for d in /var/run/dpdk/g[swr]$job-* /var/run/dpdk/gr$job; do
  [ -e "$d" ] && fail "DPDK runtime files left in $d: $(ls -A "$d")"
done
echo PASS
