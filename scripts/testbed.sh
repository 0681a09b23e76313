#!/usr/bin/env bash
# The paper's testbed on one machine (docs/results.md, "Testbed"): three
# software switches in a triangle, 8 workers and the root, every process
# its own DPDK application, every link a memif pair rate-limited to the
# testbed's 100 Gbps scaled down (so two cores are not the bottleneck).
# For each planner it runs a training-like loop: ITERATIONS allreduces of a
# scaled-down VGG16 gradient, every element checked against the exact sum.
# Prints a markdown table, then grid's reduction of communication time.
#
#   scripts/testbed.sh [TOOLS_DIR]
#   env: PLANNERS ("grid grid-paths atp switchml geryon"), GBPS (link rate, 0.02),
#        COUNT (gradient elements, 32768: VGG16 scaled down), ITERATIONS (20)
set -uo pipefail
cd "$(dirname "$0")/.."
tools=${1:-build/release/tools}
planners=${PLANNERS:-"grid grid-paths atp switchml geryon"}
gbps=${GBPS:-0.02}
count=${COUNT:-32768}
iterations=${ITERATIONS:-20}
. scripts/fabric.sh
trap 'fabric_kill' EXIT

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }

declare -A time_ms
echo "Testbed: 3 switches (triangle), 8 workers, 1 root; memif links at $gbps Gbps"
echo "(100 Gbps scaled); $iterations allreduces of $count float32 per planner."
echo
echo "| planner | comm. time / iteration (ms) | worker sending rate (Mbps) | retransmissions | largest error / bound | wrong |"
echo "|---|---|---|---|---|---|"
job=$((100 + RANDOM % 800))
for planner in $planners; do
  job=$((job + 1))
  work=$(mktemp -d /tmp/grid-testbed.XXXXXX)
  if ! fabric_start "$tools" "$work" --topology=testbed --workers=8 --planner="$planner" \
      --slots=256 --job-id=$job --memif-dir="$work/sock" --link-gbps="$gbps" --eal-memory-mb=64; then
    echo "| $planner | controller failed | | | | |"
    continue
  fi
  GRID_TIMEOUT_MS=120000 fabric_ranks 8 "$tools/grid-allreduce-check" \
    --iterations="$iterations" --count="$count" --types=float32
  status=ok
  fabric_wait_ranks || status=failed
  fabric_stop
  worst_ms=0 rate_sum=0 retrans=0 worst_err=0 wrong=0
  for r in $(seq 0 7); do
    log="$work/rank-$r.log"
    if ! grep -q '"ok":true' "$log"; then
      status=failed
      echo "  rank $r: $(tail -c 300 "$log")" >&2
      continue
    fi
    ms=$(field comm_ms_per_iteration "$log")
    worst_ms=$(awk -v a="$worst_ms" -v b="$ms" 'BEGIN { print (b > a) ? b : a }')
    rate_sum=$(awk -v a="$rate_sum" -v b="$(field send_mbps "$log")" 'BEGIN { print a + b }')
    retrans=$((retrans + $(field retransmissions "$log")))
    e=$(field worst_error_over_bound "$log")
    worst_err=$(awk -v a="$worst_err" -v b="$e" 'BEGIN { print (b > a) ? b : a }')
    wrong=$((wrong + $(field wrong "$log")))
  done
  if [ "$status" != ok ]; then
    echo "| $planner | FAILED (logs in $work) | | | | |"
    continue
  fi
  time_ms[$planner]=$worst_ms
  printf "| %s | %.1f | %.1f | %d | %.3f | %d |\n" "$planner" "$worst_ms" \
    "$(awk -v s="$rate_sum" 'BEGIN { print s / 8 }')" "$retrans" "$worst_err" "$wrong"
  rm -rf "$work"
done
echo
for g in grid grid-paths; do
  [ -n "${time_ms[$g]:-}" ] || continue
  line="$g reduces communication time by:"
  for b in atp switchml geryon; do
    [ -n "${time_ms[$b]:-}" ] || continue
    line+=$(awk -v g="${time_ms[$g]}" -v b="${time_ms[$b]}" -v n="$b" \
      'BEGIN { printf " %s %.1f%%", n, 100 * (b - g) / b }')
  done
  echo "$line  (paper, Fig. 6(b): atp 38.4%, switchml 41.2%, geryon 60.1%)"
done
