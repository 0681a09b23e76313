#!/usr/bin/env bash
# grid-switch and grid-root --metrics while a job runs: the testbed over
# kernel UDP links, every node serving Prometheus metrics on a free port
# (the logs say which), 8 ranks of grid-allreduce-check running 1 MiB
# allreduces; the endpoints are scraped twice, 1.5 s apart, and must be
# well formed with the job's counters moving (metrics_check.py); promtool
# check metrics must pass on every scrape where Debian's prometheus
# package is installed (said, not skipped silently, where it is not).
# With memif, every node a DPDK process (skipped, 77, without DPDK).
#   metrics_test.sh TOOLS_DIR udp|memif
set -u
tools=$1
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
fabric_scratch
case ${2:-udp} in
  udp) links=(--udp-base-port=$base) ;;
  memif) links=(--memif-dir="$work/sock" --eal-memory-mb=64) ;;
  *) echo "metrics_test.sh: udp or memif, not $2" >&2; exit 2 ;;
esac
FABRIC_SWITCH_FLAGS="--metrics=127.0.0.1:0" FABRIC_ROOT_FLAGS="--metrics=127.0.0.1:0" \
  fabric_start "$tools" "$work" --topology=testbed --workers=8 --planner=grid --slots=64 \
  --job-id=$job "${links[@]}"
case $? in
  0) ;;
  77) exit 77 ;;
  *) exit 1 ;;
esac
urls=()
# By name: a node's log is created by its own process, maybe not yet.
for log in $(ls "$work/store/grid/switch" | sed "s|.*|$work/switch-&.log|") "$work/root.log"; do
  for _ in $(seq 100); do grep -q "metrics at " "$log" 2>/dev/null && break; sleep 0.1; done
  url=$(grep -o "metrics at http://[^ ]*" "$log" | head -1 | cut -d' ' -f3)
  [ -n "$url" ] || fail "no metrics URL in $log: $(tail -3 "$log")"
  urls+=("$url")
done
GRID_TIMEOUT_MS=60000 fabric_ranks 8 "$tools/grid-allreduce-check" --iterations=1000 \
  --count=262144 --types=float32
sleep 2  # the ranks are past their start and into the allreduces
echo "scraping ${urls[*]}"
python3 tests/integration/metrics_check.py "$work" 1.5 "${urls[@]}" || fail "metrics_check"
if command -v promtool > /dev/null; then
  for f in "$work"/scrape*.prom; do
    promtool check metrics < "$f" > "$work/promtool.log" 2>&1 ||
      fail "promtool check metrics, $f: $(cat "$work/promtool.log")"
  done
  echo "promtool check metrics: $(ls "$work"/scrape*.prom | wc -l) scrapes pass"
else
  echo "promtool not found (apt-get install prometheus): the format checked by metrics_check.py only"
fi
# The ranks are not waited for: stopping the fabric ends the test.
{ for p in "${fabric_rank_pids[@]}"; do kill -KILL "$p"; wait "$p"; done; } 2>/dev/null
fabric_stop
exit 0
