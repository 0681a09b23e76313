#!/usr/bin/env bash
# grid-report on runs where one factor is made to bind (docs/observability.md,
# "What grid-report names"): the 4-worker testbed over kernel UDP links,
# traced (GRID_TRACE), once per factor:
#   window     GRID_WINDOW=2: two chunks in flight per rank, nothing shaped
#   capacity   every switch's C_s at 10 Mbps (cap=fixed:10 at scale 0.001),
#              planned by switchml: grid's planner routes around a tight C_s
#              (every chunk to the root), and then the root's link binds
#   slow-link  the root's link at 20 Mbps (ps=20 at scale 0.001)
#   loss       2% loss on every link, nothing shaped
# grid-report must name each run's factor. Prints each run's verdict; exit 1
# if one is wrong.
#   scripts/report_bind.sh [TOOLS_DIR]
# env: FACTORS ("window capacity slow-link loss"), KEEP (a directory that
#      gets each run's traces and report, and PNG timelines for PNG's
#      factor), PNG (window), ITERATIONS (8), COUNT (65536 float32 elements)
set -u
tools=${1:-build/release/tools}
cd "$(dirname "$0")/.."
. scripts/fabric.sh
fabric_scratch
factors=${FACTORS:-"window capacity slow-link loss"}
iterations=${ITERATIONS:-8}
count=${COUNT:-65536}
# Links a thousand times the emulated rate: shaped only where a run says.
fast="link=100000,fabric=100000"
status=0
for factor in $factors; do
  planner=grid topology="testbed" window=0 shaping=() impair=()
  case $factor in
    window) window=2 ;;
    capacity) planner=switchml topology="testbed:$fast,ps=100000,cap=fixed:10" shaping=(--emulation-scale=0.001) ;;
    slow-link) topology="testbed:$fast,ps=20" shaping=(--emulation-scale=0.001) ;;
    loss) impair=(--link-impairment=loss=0.02) ;;
    *) echo "report_bind.sh: no factor \"$factor\"" >&2; exit 2 ;;
  esac
  run=$work/$factor
  mkdir -p "$run"
  export GRID_TRACE=$run/trace
  fabric_start "$tools" "$run" --topology="$topology" --workers=4 --planner=$planner --slots=64 \
    --job-id=$job --udp-base-port=$base "${shaping[@]}" "${impair[@]}" || fail "grid-controller"
  GRID_WINDOW=$window GRID_TIMEOUT_MS=120000 fabric_ranks 4 "$tools/grid-allreduce-check" \
    --iterations="$iterations" --count="$count" --types=float32
  fabric_wait_ranks || fail "$factor: a rank failed"
  fabric_stop
  unset GRID_TRACE
  png=()
  [ -n "${KEEP:-}" ] && [ "$factor" = "${PNG:-window}" ] && png=(--png="$run/png")
  mkdir -p "$run/png"
  "$tools/grid-report" "$run/trace" "${png[@]}" > "$run/report.txt" 2>&1 ||
    fail "$factor: grid-report: $(cat "$run/report.txt")"
  named=$(sed -n 's/^limited by: //p' "$run/report.txt")
  want=${factor/-/ }
  verdict=right
  [ "$named" = "$want" ] || { verdict="WRONG"; status=1; }
  printf '%-10s grid-report names: %-10s %s\n' "$factor" "$named" "$verdict"
  sed -n 's/^evidence: /           evidence: /p' "$run/report.txt"
  [ "$verdict" = right ] || cat "$run/report.txt"
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp -r "$run" "$KEEP/"; fi
  base=$((base + 100))
done
exit $status
