#!/usr/bin/env bash
# A whole job as separate processes on one machine: grid-controller plans the
# testbed (3 switches, 8 workers, 1 root) into a file store, three grid-switch
# processes and grid-root run the fabric over kernel UDP links, and eight
# grid-allreduce-check ranks join through the environment.
#
#   cluster_test.sh FABRIC SCENARIO TOOLS_DIR WORKER
#     FABRIC    udp (kernel UDP links) or memif (DPDK memif links)
#     SCENARIO  lossy: 1% loss, duplication and reordering on every link
#                 direction; every result must be right, and retransmissions
#                 must happen
#               kill: rank 3 is killed mid-operation; every other rank must
#                 fail within 2x the timeout, and nothing may be left running,
#                 bound or mapped
set -u
fabric=$1
mode=$2
tools=$3
worker=$4
work=$(mktemp -d)
base=$((20000 + (RANDOM % 200) * 100))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.3
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -5 "$f"; done; exit 1; }

impair=""
[ "$mode" = lossy ] && impair="--link-impairment=loss=0.01,dup=0.01,reorder=0.01"
if [ "$fabric" = memif ]; then
  mkdir -p "$work/sock"
  links=(--memif-dir="$work/sock" --eal-memory-mb=64)
else
  links=(--udp-base-port=$base)
fi
"$tools/grid-controller" --topology=testbed --workers=8 --planner=grid --slots=64 \
  --job-id=$((base % 1000)) --store="file:$work/store" "${links[@]}" $impair \
  > "$work/controller.log" 2>&1 || fail "grid-controller"
for s in S1 S2 S3; do
  mapfile -t ports < "$work/store/grid/switch-ports/$s"
  "$tools/grid-switch" "${ports[@]}" --config="$work/store/grid/switch/$s" \
    > "$work/switch-$s.log" 2>&1 &
  pids+=($!)
done
"$tools/grid-root" --store="file:$work/store" > "$work/root.log" 2>&1 &
pids+=($!)

export GRID_STORE="file:$work/store" GRID_WORLD_SIZE=8
wpids=()
if [ "$mode" = lossy ]; then
  export GRID_TIMEOUT_MS=60000 GRID_RTO_US=5000
  for r in $(seq 0 7); do
    GRID_RANK=$r "$worker" --iterations=3 --count=20000 > "$work/worker-$r.log" 2>&1 &
    wpids+=($!)
  done
  status=0
  for p in "${wpids[@]}"; do wait "$p" || status=1; done
  [ $status = 0 ] || fail "a worker failed"
  retrans=0
  for r in $(seq 0 7); do
    grep -q '"ok":true' "$work/worker-$r.log" || fail "rank $r: $(cat "$work/worker-$r.log")"
    n=$(sed -n 's/.*"retransmissions":\([0-9]*\).*/\1/p' "$work/worker-$r.log")
    retrans=$((retrans + n))
  done
  [ "$retrans" -gt 0 ] || fail "no retransmissions under 1% loss"
  echo "$fabric: 8 ranks, every result right; $retrans retransmissions"
  cat "$work/worker-0.log"
elif [ "$mode" = kill ]; then
  export GRID_TIMEOUT_MS=2000 GRID_RTO_US=5000
  for r in $(seq 0 7); do
    GRID_RANK=$r "$worker" --iterations=100000 --count=20000 --types=int32 \
      > "$work/worker-$r.log" 2>&1 &
    wpids+=($!)
  done
  sleep 1.5
  kill -KILL "${wpids[3]}"
  killed_at=$(date +%s%N)
  for r in 0 1 2 4 5 6 7; do
    wait "${wpids[$r]}"
    code=$?
    took_ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
    [ $code = 3 ] || fail "rank $r exited $code, not with an error (3)"
    [ $took_ms -lt 4000 ] || fail "rank $r took ${took_ms} ms after the kill (timeout 2000 ms)"
    grep -q "timed out" "$work/worker-$r.log" || fail "rank $r: $(cat "$work/worker-$r.log")"
    grep -q "not responding 3" "$work/worker-$r.log" ||
      fail "rank $r does not name rank 3: $(cat "$work/worker-$r.log")"
  done
  echo "rank 3 killed; every other rank failed within 2x the timeout:"
  grep -o '"error":"[^"]*"' "$work/worker-0.log"
fi
# Stop the fabric, clients before servers (the root, then the switches from
# the last started): DPDK's memif client faults when its server goes first.
# Nothing may be left running or holding a port.
for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
  kill -INT "${pids[$i]}" 2>/dev/null
  wait "${pids[$i]}" 2>/dev/null
done
pids=()
grep -q '"completed"' "$work/root.log" || fail "grid-root printed no counters"
if [ "$fabric" = udp ] && command -v ss > /dev/null &&
  ss -uln | grep -q "127.0.0.1:$((base + 1))\b"; then
  fail "a UDP port is still bound"
fi
for p in $(pgrep -f "$work" 2>/dev/null); do fail "process $p is still running"; done
if [ "$fabric" = memif ]; then
  # No DPDK runtime files of this job's prefixes are left behind.
  for d in /var/run/dpdk/g[swr]$((base % 1000))*; do
    [ -e "$d" ] && [ -n "$(ls -A "$d" 2>/dev/null | grep -v '^config$')" ] && fail "DPDK files left in $d"
    rm -rf "$d"
  done
fi
echo PASS
