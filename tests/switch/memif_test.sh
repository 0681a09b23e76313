#!/usr/bin/env bash
# grid-switch between memif-connected processes: the switch (memif server on
# every port) and memif_peer (a client on each, playing S2's neighbours).
set -euo pipefail
switch=$1
peer=$2
dir=$(mktemp -d /tmp/grid-memif.XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

ports=$("$peer" ports)
"$peer" write-config "$dir/s2.json"
eal=(--no-huge --no-pci -m 256 --no-shconf --no-telemetry --log-level=warning)
server=() client=()
for ((i = 0; i < ports; i++)); do
  server+=("--vdev=net_memif$i,role=server,id=0,socket=$dir/p$i.sock,socket-abstract=no")
  client+=("--vdev=net_memif$i,role=client,id=0,socket=$dir/p$i.sock,socket-abstract=no")
done

"$switch" -l 0 "${eal[@]}" --file-prefix="gs$$" "${server[@]}" -- --config="$dir/s2.json" \
  >"$dir/switch.out" 2>"$dir/switch.err" &
pid=$!
for _ in $(seq 1 200); do
  [ -S "$dir/p$((ports - 1)).sock" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/switch.err"; exit 1; }
  sleep 0.05
done

status=0
timeout 60 "$peer" -l 1 "${eal[@]}" --file-prefix="gp$$" "${client[@]}" -- run || status=$?

kill -USR1 "$pid"   # counters on demand
sleep 0.2
kill -INT "$pid"
wait "$pid" || status=$?
pid=""
echo "--- grid-switch stderr"; cat "$dir/switch.err"
echo "--- grid-switch final counters"; cat "$dir/switch.out"
grep -q '"partials":160' "$dir/switch.out" || { echo "switch did not report 160 partials"; status=1; }
exit "$status"
