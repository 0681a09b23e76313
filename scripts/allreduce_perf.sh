#!/usr/bin/env bash
# bench/allreduce_perf on the emulated testbed (as scripts/testbed.sh builds
# it): 8 ranks, 3 switches and the root as DPDK processes over rate-limited
# memif links (or TOPOLOGY's switches, e.g. rack's one). Prints rank 0's
# table: GRID's allreduce against a ring allreduce over the same transport,
# in the same run.
#
#   scripts/allreduce_perf.sh [BUILD_DIR] [allreduce_perf flags...]
#   env: PLANNER (grid-paths), GBPS (link rate, 0.02), TOPOLOGY (testbed; e.g.
#        rack: one switch, docs/topology.md), ELEMENTS (per frame) and
#        SLOTS (pool size) (auto: grid-controller picks them; memif carries
#        1024-element frames), GLOO (an address: Gloo's ring over TCP bound to
#        it runs too, e.g. GLOO=127.0.0.1; needs a build with libgloo-dev),
#        FABRIC (memif; udp: the same fabric over kernel UDP on loopback, no
#        DPDK, and without allreduce_perf's own ring, which needs raw frames),
#        QUEUES (memif only: N queue pairs per link, grid-controller
#        --memif-queues=N, and every rank and the root on N threads, a queue
#        pair each)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
shift || true
. scripts/fabric.sh
work=$(mktemp -d /tmp/grid-perf.XXXXXX)
trap 'fabric_kill; [ -n "${KEEP:-}" ] && cp -r "$work" "$KEEP"; rm -rf "$work"' EXIT
job=$((100 + RANDOM % 800))
case ${FABRIC:-memif} in
  memif)
    links=(--memif-dir="$work/sock" --eal-memory-mb=64) ring=()
    # Each pipeline lcore of a switch has its own mbuf pool.
    if [ "${QUEUES:-1}" != 1 ]; then
      links=(--memif-dir="$work/sock" --eal-memory-mb=$((64 + 64 * QUEUES)) --memif-queues="$QUEUES")
      export GRID_THREADS=$QUEUES FABRIC_ROOT_FLAGS=--threads=$QUEUES
    fi
    ;;
  udp) links=(--udp-base-port=$((20000 + RANDOM % 30000))) ring=(--ring=false) ;;
  *) echo "FABRIC: memif or udp, not ${FABRIC}" >&2; exit 1 ;;
esac
fabric_start "$build/tools" "$work" --topology="${TOPOLOGY:-testbed}" --workers=8 \
  --planner="${PLANNER:-grid-paths}" --slots="${SLOTS:-auto}" --job-id=$job "${links[@]}" \
  --link-gbps="${GBPS:-0.02}" --elements="${ELEMENTS:-auto}" || exit 1
gloo=()
[ -n "${GLOO:-}" ] && gloo=(--gloo="$GLOO")
GRID_TIMEOUT_MS=300000 fabric_ranks 8 "$build/bench/allreduce_perf" "${gloo[@]}" "${ring[@]}" "$@"
status=0
fabric_wait_ranks || status=1
fabric_stop
echo "# ${TOPOLOGY:-testbed}: planner ${PLANNER:-grid-paths}, ${FABRIC:-memif} links at ${GBPS:-0.02} Gbps (100 Gbps scaled)"
cat "$work/rank-0.log"
[ $status = 0 ] || { for r in $(seq 1 7); do tail -2 "$work/rank-$r.log"; done; exit 1; }
