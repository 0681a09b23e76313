#!/usr/bin/env bash
# GRID at the paper's scale, packet by packet (docs/simulation.md, "At the
# paper's scale"): grid-ns3 on the fat tree of the paper's scenario (b)
# (k=8, 6 hosts per edge switch, a random 20% of the switches programmable,
# C_s uniform in [100, 3200] Gbps, 100 Gbps links), 100 workers, every
# planner, SEEDS seeds, in two regimes:
#   links  the topology as it is: every link may bind (the flow model's links model);
#   paper  switch-to-switch links made fast enough never to bind
#          (fabric=100000), so only the hosts' links, the PS ingress and C_s do
#          (the paper model).
# ATP reserves C_s (--atp=reserve: its steady state, the plan the flow
# model evaluates). Each run also times a TCP ring on the same hosts
# (--ring). Writes
# OUT/scale.csv (grid-ns3's rows, with regime and seed), OUT/scale.md (the
# means, each planner's rate against the flow model's, and grid's reductions
# beside the model's and the paper's) and OUT/scale.png (gnuplot).
#
#   scripts/ns3_scale.sh [GRID_NS3] [OUT_DIR]
#   env: SEEDS (3), ELEMENTS (2500000 per rank: 10 MB), WORKERS (100),
#        REGIMES ("links paper"), PLANNERS (grid,grid-paths,atp,switchml,geryon),
#        RENDER_ONLY (1: no runs, the tables and plot from OUT/scale.csv again),
#        RING (0: no TCP ring, which takes most of the wall time; the tables
#        then have no ring rows)
set -euo pipefail
cd "$(dirname "$0")/.."
ns3=${1:-build/release/sim/grid-ns3}
out=${2:-docs/results/ns3}
seeds=${SEEDS:-3}
elements=${ELEMENTS:-2500000}
workers=${WORKERS:-100}
regimes=${REGIMES:-"links paper"}
planners=${PLANNERS:-grid,grid-paths,atp,switchml,geryon}
mkdir -p "$out"
[ -x "$ns3" ] || { echo "ns3_scale: $ns3 not built (needs libns3-dev)" >&2; exit 1; }

csv="$out/scale.csv"
ring=--ring
[ "${RING:-1}" = 0 ] && ring=
first=1
[ "${RENDER_ONLY:-0}" = 1 ] && regimes=""
for regime in $regimes; do
  for seed in $(seq 1 "$seeds"); do
    spec="fattree:k=8,hosts=6,prog=random:0.2,cap=uniform:100:3200,seed=$seed"
    [ "$regime" = paper ] && spec="$spec,fabric=100000"
    echo "ns3_scale: $regime seed $seed ($spec)" >&2
    "$ns3" --topology="$spec" --workers="$workers" --elements="$elements" --seed="$seed" \
      --planners="$planners" --atp=reserve $ring --csv="$out/run.csv" >&2
    if [ $first = 1 ]; then
      echo "regime,$(head -1 "$out/run.csv")" > "$csv"
      first=0
    fi
    tail -n +2 "$out/run.csv" | sed "s/^/$regime,/" >> "$csv"
  done
done
rm -f "$out/run.csv"
[ -s "$csv" ] || { echo "ns3_scale: no $csv" >&2; exit 1; }

# Means per (regime, planner). Columns (after regime): planner, workers,
# elements, seed, comm_ms, mean_gbps, links_gbps, links_min_gbps,
# paper_gbps, paper_min_gbps, ...
awk -F, -v out="$out" '
  NR == 1 { next }
  {
    key = $1 SUBSEP $2
    if (!(key in n)) order[++keys] = key
    n[key]++; ms[key] += $6; gbps[key] += $7
    if ($1 == "paper") { mean[key] += $10; lo[key] += $11 } else { mean[key] += $8; lo[key] += $9 }
  }
  END {
    print "| regime | planner | comm. time (ms) | ranks'"'"' mean rate (Gbps) | model mean | model min | rate / model mean | rate / model min |"
    print "|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= keys; i++) {
      k = order[i]; split(k, p, SUBSEP); c = n[k]
      if (p[2] == "ring") {
        printf "| %s | ring (TCP) | %.3f | %.2f | | | | |\n", p[1], ms[k] / c, gbps[k] / c
        t[p[1], p[2]] = ms[k] / c
        continue
      }
      printf "| %s | %s | %.3f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", p[1], p[2], ms[k] / c,
             gbps[k] / c, mean[k] / c, lo[k] / c, gbps[k] / mean[k], gbps[k] / lo[k]
      t[p[1], p[2]] = ms[k] / c; r[p[1], p[2]] = mean[k] / c
    }
    print ""
    print "grid'"'"'s reduction of communication time against each baseline: packet level (times), flow model (mean rates, as the paper reports them), the paper (Fig. 12, scenario (b), 100 workers: mean rates GRID 23.5, ATP 10, SwitchML 8.9, Geryon 1 Gbps)"
    print ""
    print "| regime | against | packet level | flow model | paper |"
    print "|---|---|---|---|---|"
    split("atp switchml geryon ring", bases, " ")
    paper["atp"] = 1 - 10 / 23.5; paper["switchml"] = 1 - 8.9 / 23.5; paper["geryon"] = 1 - 1 / 23.5
    split("links paper", regs, " ")
    for (j = 1; j <= 2; j++) for (b = 1; b <= 4; b++) {
      g = regs[j]; base = bases[b]
      if (!((g, "grid") in t) || !((g, base) in t)) continue
      model = (base == "ring") ? "" : sprintf("%.1f%%", 100 * (1 - r[g, base] / r[g, "grid"]))
      pap = (base in paper) ? sprintf("%.1f%%", 100 * paper[base]) : ""
      printf "| %s | %s | %.1f%% | %s | %s |\n", g, base, 100 * (1 - t[g, "grid"] / t[g, base]), model, pap
    }
  }' "$csv" > "$out/scale.md"
cat "$out/scale.md"

# Bars: each planner's communication time, packet level, per regime.
if command -v gnuplot > /dev/null; then
  awk -F, 'NR > 1 { k = $1 " " $2; s[k] += $6; c[k]++ } END { for (k in s) print k, s[k] / c[k] }' \
    "$csv" | sort > "$out/scale.dat"
  gnuplot <<EOF
set terminal pngcairo size 900,500
set output "$out/scale.png"
set title "grid-ns3: k=8 fat tree, scenario (b), $workers workers, $(awk -v e="$elements" 'BEGIN { print e * 4 / 1e6 }') MB each"
set ylabel "communication time (ms)"
set style data histograms
set style histogram clustered
set style fill solid 0.8
set boxwidth 0.9
set xtics rotate by -30
plot "< grep '^links' $out/scale.dat" using 3:xtic(2) title "links regime", \
     "< grep '^paper' $out/scale.dat" using 3 title "paper regime"
EOF
  rm -f "$out/scale.dat"
  echo "ns3_scale: wrote $out/scale.png" >&2
fi
