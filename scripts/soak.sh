#!/usr/bin/env bash
# Soak (docs/security.md, "Soak"): a job of separate processes on the
# emulated testbed (3 grid-switch, 8 ranks, grid-root, kernel UDP links), every
# link direction losing 5%, duplicating 5% and reordering 5% of its frames,
# until CHUNKS chunks have been aggregated; every element checked. Samples
# every process's resident memory every 2 s and reports its growth after
# warm-up (median of the last quarter against the second). Exits non-zero if
# a rank fails, an element is wrong, or (with MAX_RSS_GROWTH set, in percent)
# memory grew more than that.
#
#   scripts/soak.sh [CHUNKS] [TOOLS_DIR]      (CHUNKS: 1000000)
set -uo pipefail
cd "$(dirname "$0")/.."
chunks=${1:-1000000}
tools=${2:-build/release/tools}
count=65536  # per operation: 1024 int32 chunks; float32: 1024 chunks and 256 probes
per_iteration=$((1024 + 1024 + 256))
iterations=$(( (chunks + per_iteration - 1) / per_iteration ))
. scripts/fabric.sh
trap 'fabric_kill' EXIT
work=$(mktemp -d /tmp/grid-soak.XXXXXX)

fabric_start "$tools" "$work" --topology=testbed --workers=8 --planner=grid --slots=256 \
  --udp-base-port=$((20000 + RANDOM % 30000)) --job-id=$((1 + RANDOM % 1000)) \
  --link-impairment=loss=0.05,dup=0.05,reorder=0.05 || exit 1
start=$(date +%s)
GRID_TIMEOUT_MS=120000 fabric_ranks 8 "$tools/grid-allreduce-check" --iterations="$iterations" \
  --count=$count --types=int32,float32
# Resident memory of every process, every 2 s: "seconds kb kb ...".
pids=("${fabric_pids[@]}" "${fabric_rank_pids[@]}")
(
  while kill -0 "${fabric_rank_pids[0]}" 2>/dev/null; do
    line="$(( $(date +%s) - start ))"
    for p in "${pids[@]}"; do
      line+=" $(awk '/VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)"
    done
    echo "$line"
    sleep 2
  done
) > "$work/rss.txt" &
sampler=$!
status=0
fabric_wait_ranks || status=1
wait "$sampler" 2>/dev/null
seconds=$(( $(date +%s) - start ))
fabric_stop

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }
wrong=0 retrans=0
for r in $(seq 0 7); do
  log=$work/rank-$r.log
  if ! grep -q '"ok":true' "$log"; then
    echo "rank $r: $(tail -c 400 "$log")" >&2
    status=1
    continue
  fi
  wrong=$((wrong + $(field wrong "$log")))
  retrans=$((retrans + $(field retransmissions "$log")))
done
# Growth of each process after warm-up: the median of its samples in the
# last quarter of the run against the median in the second quarter (the
# first is warm-up). Medians, because a rank's checker holds its buffers only
# while it checks, and a 2 s sample that lands then reads ~2 MB more.
growth=$(awk -v n=${#pids[@]} '
  function median(i, from, to,   k, m, v, a, b, t) {
    m = 0
    for (k = from; k <= to; ++k) v[++m] = rss[k, i]
    for (a = 2; a <= m; ++a) for (b = a; b > 1 && v[b - 1] > v[b]; --b) {
      t = v[b]; v[b] = v[b - 1]; v[b - 1] = t
    }
    return v[int((m + 1) / 2)]
  }
  { for (i = 2; i <= n + 1; ++i) rss[NR, i] = $i } END {
    q = int(NR / 4); worst = 0
    if (q < 1) { print "0.0"; exit }
    for (i = 2; i <= n + 1; ++i) {
      before = median(i, q + 1, 2 * q); after = median(i, NR - q + 1, NR)
      if (before > 0) { g = 100 * (after - before) / before; if (g > worst) worst = g }
    }
    printf "%.1f", worst }' "$work/rss.txt")
printf "soak: %d chunks (%d iterations of int32 and float32, %d elements) in %d s, 5%% loss, 5%% duplication and 5%% reordering on every link direction\n" \
  $((iterations * per_iteration)) "$iterations" "$count" "$seconds"
echo "soak: wrong elements $wrong, retransmissions $retrans, largest memory growth after warm-up $growth% (samples in $work/rss.txt)"
[ "$wrong" -eq 0 ] || status=1
if [ -n "${MAX_RSS_GROWTH:-}" ] && awk -v g="$growth" -v m="$MAX_RSS_GROWTH" 'BEGIN { exit !(g > m) }'; then
  echo "soak: memory grew more than $MAX_RSS_GROWTH%" >&2
  status=1
fi
[ "$status" -eq 0 ] && rm -rf "$work"
exit $status
