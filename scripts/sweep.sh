#!/usr/bin/env bash
# The PS-ingress sweep (docs/results.md, "Where the paper's 38.4% lies"):
# grid's reduction of communication time against ATP as the root's access
# rate B falls from the fabric's 100 Gbps to 1/8 of it, with C_s never
# binding. The curve is the flow-level evaluator's (grid-plan, links model);
# the points are measured on the emulated testbed (scripts/testbed.sh, every
# element checked). Writes OUT/sweep-model.dat, OUT/sweep-measured.dat and
# OUT/ps-ingress-sweep.png.
#
#   scripts/sweep.sh [TOOLS_DIR] [OUT_DIR]
#   env: POINTS (B / fabric rates measured, "0.125 0.25 0.5 1"), REPEAT (1),
#        ITERATIONS (5), SCALE (0.0002)
set -euo pipefail
cd "$(dirname "$0")/.."
tools=${1:-build/release/tools}
out=${2:-docs/results}
points=${POINTS:-"0.125 0.25 0.5 1"}
mkdir -p "$out"

rate() {  # rate SPEC PLANNER: the evaluator's min worker rate, Gbps
  "$tools/grid-plan" --topology="$1" --workers=8 --planner="$2" --model=links |
    sed -n 's/^min rate *\([0-9.]*\) Gbps/\1/p'
}

{
  echo "# B/fabric  grid_gbps  atp_gbps  reduction_percent (evaluator, links model)"
  for i in $(seq 5 40); do
    ratio=$(awk -v i="$i" 'BEGIN { print i / 40 }')
    spec="testbed:ps=$(awk -v r="$ratio" 'BEGIN { print 100 * r }')"
    g=$(rate "$spec" grid)
    a=$(rate "$spec" atp)
    awk -v r="$ratio" -v g="$g" -v a="$a" 'BEGIN { printf "%.4f %.3f %.3f %.2f\n", r, g, a, 100 * (1 - a / g) }'
  done
} > "$out/sweep-model.dat"

{
  echo "# B/fabric  reduction_percent (measured, mean of REPEAT runs)"
  for ratio in $points; do
    spec="testbed:ps=$(awk -v r="$ratio" 'BEGIN { print 100 * r }')"
    line=$(TOPOLOGY="$spec" REGIME=paper PLANNERS="grid atp" COMPUTE_RATIO=0 \
      ITERATIONS=${ITERATIONS:-5} REPEAT=${REPEAT:-1} scripts/testbed.sh "$tools" |
      sed -n 's/^grid reduces communication time by: atp \(-\{0,1\}[0-9.]*\)%.*/\1/p')
    [ -n "$line" ] || { echo "sweep.sh: the run at B/fabric = $ratio failed" >&2; exit 1; }
    echo "$ratio $line"
    echo "B/fabric = $ratio: grid reduces communication time by $line% against ATP" >&2
  done
} > "$out/sweep-measured.dat"

gnuplot <<EOF
set terminal pngcairo size 800,500
set output '$out/ps-ingress-sweep.png'
set title 'Testbed: grid against ATP as the PS ingress B falls (fabric links 100 Gbps, C_s never binds)'
set xlabel 'PS ingress B / fabric link rate'
set ylabel 'reduction of communication time vs ATP (%)'
set xrange [0:1.05]
set yrange [0:100]
set grid
set key top right
plot '$out/sweep-model.dat' using 1:4 with lines lw 2 title 'flow-level evaluator (links model)', \
     '$out/sweep-measured.dat' using 1:2 with points pt 7 ps 1.5 title 'measured, emulated testbed', \
     38.4 with lines dt 2 title 'paper, Fig. 6(b): 38.4%'
EOF
echo "sweep.sh: wrote $out/ps-ingress-sweep.png"
