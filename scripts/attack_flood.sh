#!/usr/bin/env bash
# Throughput under a flood (docs/security.md, "Tested"): the same job twice on
# the emulated testbed (7 ranks, kernel UDP links), once clean and once while
# grid-attack floods W8's switch with FACTOR times the job's own packet rate
# of one class of foreign traffic. Prints both times and their ratio; the
# sums are checked in both runs. A measurement, not a test.
#
#   scripts/attack_flood.sh [TOOLS_DIR]
#   env: CLASS (wrong_token), FACTOR (10), ITERATIONS (40), COUNT (16384),
#        LINK_GBPS (unset: links unshaped, so the CPU binds; e.g. 0.02 as in
#        scripts/testbed.sh, so the links do)
set -uo pipefail
cd "$(dirname "$0")/.."
tools=${1:-build/release/tools}
class=${CLASS:-wrong_token}
factor=${FACTOR:-10}
iterations=${ITERATIONS:-40}
count=${COUNT:-16384}
shaping=()
[ -n "${LINK_GBPS:-}" ] && shaping=(--link-gbps="$LINK_GBPS")
. scripts/fabric.sh
trap 'fabric_kill' EXIT

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }

run() {  # run PPS: prints "seconds packets"
  local pps=$1 work
  work=$(mktemp -d /tmp/grid-flood.XXXXXX)
  fabric_start "$tools" "$work" --topology=testbed --workers=7 --planner=switchml --slots=256 \
    --udp-base-port=$((20000 + RANDOM % 30000)) --job-id=$((1 + RANDOM % 1000)) \
    "${shaping[@]}" >&2 || return 1
  local start=$(date +%s.%N)
  GRID_TIMEOUT_MS=120000 fabric_ranks 7 "$tools/grid-allreduce-check" --iterations="$iterations" \
    --count="$count" --types=float32
  local attacker=""
  if [ "$pps" -gt 0 ]; then
    "$tools/grid-attack" --store="file:$work/store" --topology=testbed --host=W8 \
      --classes="$class" --pps="$pps" --seconds=600 > "$work/attack.json" 2>&1 &
    attacker=$!
  fi
  fabric_wait_ranks || { echo "a rank failed (logs in $work)" >&2; return 1; }
  local end=$(date +%s.%N)
  [ -n "$attacker" ] && kill -INT "$attacker" 2>/dev/null && wait "$attacker" 2>/dev/null
  fabric_stop
  if [ -n "$attacker" ]; then
    echo "the attacker sent $(field frames "$work/attack.json") frames; S3 dropped" \
      "$(tail -n 1 "$work/switch-S3.log" | grep -o '"drops":{[^}]*}')" >&2
  fi
  local packets=0 r
  for r in $(seq 0 6); do
    grep -q '"ok":true' "$work/rank-$r.log" || { echo "rank $r wrong (logs in $work)" >&2; return 1; }
    packets=$((packets + $(field packets_sent "$work/rank-$r.log")))
  done
  rm -rf "$work"
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $packets"
}

read -r clean_s packets < <(run 0) || exit 1
job_pps=$(awk -v p="$packets" -v s="$clean_s" 'BEGIN { printf "%d", p / s }')
flood_pps=$((factor * job_pps))
read -r flood_s _ < <(run "$flood_pps") || exit 1
echo "clean: ${clean_s} s, ${job_pps} packets/s from the ranks"
echo "flood: ${flood_s} s, under ${flood_pps} packets/s of ${class} (${factor}x)"
awk -v c="$clean_s" -v f="$flood_s" 'BEGIN { printf "throughput under the flood: %.2f of the clean run\n", c / f }'
