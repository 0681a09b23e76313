#!/usr/bin/env bash
# grid-switch between memif-connected processes: the switch (memif server on
# every port) and memif_peer (a client on each, playing S2's neighbours).
# Runs twice: the switch on one lcore, then on three (a receiving lcore and
# two pipeline shards) mapped onto the machine's CPUs, with the peer sending
# round robin over two queue pairs as a rank's `dpdk: ... -- queues=2` does.
set -euo pipefail
switch=$1
peer=$2
dir=$(mktemp -d /tmp/grid-memif.XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$dir"
  # The EAL leaves its (empty) runtime directories behind.
  for name in one sharded impaired; do rm -rf "/var/run/dpdk/gs$name$$" "/var/run/dpdk/gp$name$$"; done
}
trap cleanup EXIT

ports=$("$peer" ports)
"$peer" write-config "$dir/s2.json"
eal=(--no-huge --no-pci -m 256 --no-shconf --no-telemetry --log-level=warning)
status=0

run() {  # run NAME QUEUES SWITCH_LCORE_ARGS...
  local name=$1 queues=$2
  shift 2
  local server=() client=()
  for ((i = 0; i < ports; i++)); do
    server+=("--vdev=net_memif$i,role=server,id=0,socket=$dir/$name$i.sock,socket-abstract=no")
    client+=("--vdev=net_memif$i,role=client,id=0,socket=$dir/$name$i.sock,socket-abstract=no")
  done
  "$switch" "$@" "${eal[@]}" --file-prefix="gs$name$$" "${server[@]}" -- --config="$dir/s2.json" \
    ${IMPAIR:-} >"$dir/$name.out" 2>"$dir/$name.err" &
  pid=$!
  for _ in $(seq 1 200); do
    [ -S "$dir/$name$((ports - 1)).sock" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$dir/$name.err"; return 1; }
    sleep 0.05
  done
  local rc=0
  timeout 60 "$peer" -l 1 "${eal[@]}" --file-prefix="gp$name$$" "${client[@]}" -- run "$queues" \
    | tee "$dir/$name.peer" || rc=$?
  kill -USR1 "$pid"   # counters on demand
  sleep 0.2
  kill -INT "$pid"
  wait "$pid" || rc=$?
  pid=""
  echo "--- $name: grid-switch stderr"; cat "$dir/$name.err"
  echo "--- $name: grid-switch final counters"; cat "$dir/$name.out"
  grep -q '"partials":160' "$dir/$name.out" || { echo "$name: switch did not report 160 partials"; rc=1; }
  grep -q '"partials":160' "$dir/$name.err" || { echo "$name: SIGUSR1 did not print the counters"; rc=1; }
  return $rc
}

run one 1 -l 0 || status=1
run sharded 2 --lcores=0@0,1@0,2@1 || status=1
# The link toward S1 (port 0) duplicates and reorders: the peer still sees
# every partial, exactly; the switch reports what it impaired.
IMPAIR="--impair=0:dup=0.5,reorder=0.3" run impaired 1 -l 0 || status=1
grep -q 'duplicates=[1-9]' "$dir/impaired.peer" || { echo "impaired: the link duplicated nothing"; status=1; }
exit "$status"
