#!/usr/bin/env bash
# grid-ns3 at 128 and 1,000 workers (docs/simulation.md, "At 1,000
# workers"): the k=16 fat tree (1,024 hosts, 320 switches, 20% programmable),
# the grid planner and the TCP ring on the same hosts, each run's simulated
# and wall time, events per second and peak memory (/usr/bin/time). A
# bench, not a test: it takes minutes.
#
#   scripts/ns3_large.sh [GRID_NS3] [OUT_DIR]
#   env: WORKERS ("128 1000"), ELEMENTS (250000 per rank: 1 MB),
#        PLANNER (grid), TOPOLOGY (instead of the k=16 fat tree)
set -euo pipefail
cd "$(dirname "$0")/.."
ns3=${1:-build/release/sim/grid-ns3}
out=${2:-docs/results/ns3}
sizes=${WORKERS:-"128 1000"}
elements=${ELEMENTS:-250000}
planner=${PLANNER:-grid}
spec=${TOPOLOGY:-"fattree:k=16,hosts=8,prog=random:0.2,cap=uniform:100:3200,seed=1"}
mkdir -p "$out"
[ -x "$ns3" ] || { echo "ns3_large: $ns3 not built (needs libns3-dev)" >&2; exit 1; }

{
  echo "| workers | planner | comm. time (ms) | rank rate (Gbps) | model min (Gbps) | ring (ms) | GRID / ring | events | wall (s) | events/s | peak memory (MiB) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for n in $sizes; do
    log="$out/large-$n.log"
    /usr/bin/time -v "$ns3" --topology="$spec" --workers="$n" --elements="$elements" \
      --planners="$planner" --ring --csv="$out/large-$n.csv" > "$log" 2> "$log.time"
    awk -F, -v n="$n" -v mem="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log.time")" '
      NR == 1 { next }
      $1 != "ring" { p = $1; ms = $5; rate = $6; lo = $8; ev = $17; wall = $18 }
      $1 == "ring" { ring = $5; ev += $17; wall += $18 }
      END {
        printf "| %d | %s | %.3f | %.2f | %.2f | %.3f | %.2f | %d | %.1f | %.0f | %.0f |\n",
               n, p, ms, rate, lo, ring, ms / ring, ev, wall, ev / wall, mem / 1024
      }' "$out/large-$n.csv"
  done
} | tee "$out/large.md"
