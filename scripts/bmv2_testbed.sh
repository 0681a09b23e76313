#!/usr/bin/env bash
# The paper's testbed with BMv2 switches (docs/switch.md, "P4"): three
# simple_switch processes running p4/v1model/grid.p4 in a triangle, 8
# workers and the root each in a network namespace, every link a veth pair.
# grid-controller plans the job, publishes it and loads every switch's tables
# through simple_switch_CLI, or with SWITCH=p4runtime through P4Runtime:
# each switch a simple_switch_grpc with no program, which grid-controller
# commits and programs (--switch=p4runtime), reading every entry back. The
# hosts use the kernel UDP transport or DPDK's
# af_packet driver on their veth. One link, the root's, loses LOSS percent of
# what it carries in each direction. Every result is checked element by
# element (grid-allreduce-check).
#
#   scripts/bmv2_testbed.sh [TOOLS_DIR]
#   env: PLANNERS ("grid atp"), TRANSPORT (udp | af_packet), COUNT (1000: not a
#        multiple of 64), ITERATIONS (3), TYPES (int32,float32), LOSS (1),
#        P4JSON (the compiled program, its P4Info beside it as NAME.p4info.txtpb;
#        compiled into the work dir if unset), SWITCH (cli | p4runtime),
#        RERUN (with p4runtime: "delete" runs the job a second time on the
#        same switches and root, no process restarted, after grid-controller
#        --delete-job, a new publication and SIGHUP to grid-root; "keep"
#        publishes again without deleting, leaving the switches' registers
#        as the first run left them)
# Needs root, iproute2, nftables and the P4 toolchain on PATH
# (../shared/p4tools/bin). Prints one line per planner; exits non-zero if any
# rank failed or any element was wrong.
set -uo pipefail
cd "$(dirname "$0")/.."
tools=$(cd "${1:-build/release/tools}" && pwd)
planners=${PLANNERS:-"grid atp"}
transport=${TRANSPORT:-udp}
count=${COUNT:-1000}
iterations=${ITERATIONS:-3}
types=${TYPES:-int32,float32}
loss=${LOSS:-1}
control=${SWITCH:-cli}
rerun=${RERUN:-}
. scripts/netns_fabric.sh

case $control in
  cli) bmv2=simple_switch ;;
  p4runtime) bmv2=simple_switch_grpc ;;
  *) echo "bmv2_testbed: SWITCH is cli or p4runtime, not \"$control\"" >&2; exit 2 ;;
esac
case $rerun in
  "") ;;
  delete | keep) [ "$control" = p4runtime ] || { echo "bmv2_testbed: RERUN needs SWITCH=p4runtime" >&2; exit 2; } ;;
  *) echo "bmv2_testbed: RERUN is delete or keep, not \"$rerun\"" >&2; exit 2 ;;
esac
for tool in $bmv2 simple_switch_CLI ip nft; do
  command -v "$tool" >/dev/null || { echo "bmv2_testbed: $tool not found" >&2; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "bmv2_testbed: needs root for network namespaces" >&2; exit 77; }
why=$(netns_probe) || { echo "bmv2_testbed: skipped: no network namespaces here: $why" >&2; exit 77; }
if [ "$transport" = af_packet ] && "$tools/grid-switch" --help | grep -q "built without DPDK"; then
  echo "bmv2_testbed: skipped: the hosts' af_packet transport needs DPDK (GRID_WITH_DPDK)" >&2
  exit 77
fi

work_root=$(mktemp -d /tmp/grid-bmv2.XXXXXX)
json=${P4JSON:-}
if [ -z "$json" ]; then
  json=$work_root/grid.json
  p4c-bm2-ss -I p4/include -o "$json" --p4runtime-files "$work_root/grid.p4info.txtpb" \
    p4/v1model/grid.p4 > "$work_root/p4c.log" 2>&1 || { cat "$work_root/p4c.log"; exit 1; }
fi
p4info=${json%.json}.p4info.txtpb

prefix=gb$((RANDOM % 1000))
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  netns_down "$prefix"
}
trap cleanup EXIT

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }

# One run of the job published in STORE: the 8 ranks in their namespaces,
# logs into LOGS. Sets status (ok | failed), wrong, retrans and ms (the
# slowest rank's per iteration).
run_job() {
  local store=$1 logs=$2 r p log
  local ranks=()
  for r in $(seq 0 7); do
    ip netns exec "$(cat "$store/grid/netns/rank/$r")" env GRID_RANK="$r" GRID_WORLD_SIZE=8 \
      GRID_STORE="file:$store" GRID_TIMEOUT_MS=60000 \
      "$tools/grid-allreduce-check" --iterations="$iterations" --count="$count" --types="$types" \
      > "$logs/rank-$r.log" 2>&1 &
    ranks+=($!)
  done
  status=ok
  for p in "${ranks[@]}"; do wait "$p" || status=failed; done
  wrong=0 retrans=0 ms=0
  for r in $(seq 0 7); do
    log="$logs/rank-$r.log"
    if ! grep -q '"ok":true' "$log"; then
      status=failed
      echo "  rank $r: $(tail -c 400 "$log")" >&2
      continue
    fi
    wrong=$((wrong + $(field wrong "$log")))
    retrans=$((retrans + $(field retransmissions "$log")))
    ms=$(awk -v a="$ms" -v b="$(field comm_ms_per_iteration "$log")" 'BEGIN { print (b > a) ? b : a }')
  done
}

failed=0
echo "BMv2 testbed: 3 $bmv2 (triangle, tables by $control), 8 workers, root; $transport hosts;" \
  "$loss% loss each way on the root's link; $iterations x $count elements of $types"
for planner in $planners; do
  work=$work_root/$planner
  mkdir -p "$work"
  thrift=$((9100 + RANDOM % 800))
  grpc=$((thrift + 1000))  # switch i serves P4Runtime on grpc + i, as device i
  job=$((1 + RANDOM % 60000))
  pids=()
  switch_flags=(--switch=bmv2 --bmv2-cli="$(command -v simple_switch_CLI)")
  if [ "$control" = p4runtime ]; then
    switch_flags=(--switch=p4runtime:127.0.0.1:$grpc/0,127.0.0.1:$((grpc + 1))/1,127.0.0.1:$((grpc + 2))/2
                  --p4info="$p4info" --p4-json="$json" --p4runtime-timeout-s=60)
  fi
  publish=(--topology=testbed --workers=8 --planner="$planner" --store="file:$work/store"
           --job-id="$job" "${switch_flags[@]}" --netns="$prefix" --host-transport="$transport"
           --eal-memory-mb=64 --bmv2-thrift-base="$thrift")
  "$tools/grid-controller" "${publish[@]}" --token=$((RANDOM * 32768 + RANDOM + 1)) \
    > "$work/controller.log" 2>&1 &
  controller=$!
  pids+=("$controller")
  for _ in $(seq 100); do [ -f "$work/store/grid/netns/hosts" ] && break; sleep 0.1; done
  if ! netns_up "$work/store" "$transport" > "$work/netns.log" 2>&1; then
    echo "| $planner | fabric failed: $(tail -3 "$work/netns.log") |"
    failed=1
    netns_down "$prefix"
    continue
  fi
  i=0
  for s in $(ls "$work/store/grid/switch"); do  # node order
    mapfile -t args < "$work/store/grid/switch-ports/$s"
    if [ "$control" = p4runtime ]; then
      simple_switch_grpc "${args[@]}" --no-p4 -- --grpc-server-addr=127.0.0.1:$((grpc + i)) \
        > "$work/switch-$s.log" 2>&1 &
    else
      simple_switch "${args[@]}" "$json" > "$work/switch-$s.log" 2>&1 &
    fi
    pids+=($!)
    i=$((i + 1))
  done
  # The root's link: both of its directions lose packets.
  root_ns=$(cat "$work/store/grid/netns/root")
  root_if=$(awk -v ns="$root_ns" '$4 == ns { print $1 }' "$work/store/grid/netns/links")
  if [ "$loss" != 0 ]; then
    netns_loss eth0 "$root_ns" "$loss" && netns_loss "$root_if" - "$loss" ||
      echo "  (could not set loss on $root_if)" >&2
  fi
  if ! wait "$controller"; then
    echo "| $planner | controller failed: $(tail -3 "$work/controller.log") |"
    failed=1
    cleanup
    continue
  fi
  ip netns exec "$root_ns" "$tools/grid-root" --store="file:$work/store" > "$work/root.log" 2>&1 &
  root=$!
  pids+=("$root")
  runs=1
  [ -n "$rerun" ] && runs=2
  for run in $(seq "$runs"); do
    logs=$work/run-$run
    mkdir -p "$logs"
    if [ "$run" -gt 1 ]; then
      # The same switches and root, still running: the job deleted (or
      # not), published again with a new token, and the root told to read
      # it (SIGHUP, which also empties its slots).
      if [ "$rerun" = delete ] &&
        ! "$tools/grid-controller" --delete-job="$job" "${switch_flags[@]}" \
          > "$logs/delete.log" 2>&1; then
        echo "| $planner | run $run: --delete-job failed: $(tail -3 "$logs/delete.log") |"
        failed=1
        break
      fi
      if ! "$tools/grid-controller" "${publish[@]}" --token=$((RANDOM * 32768 + RANDOM + 1)) \
        > "$logs/controller.log" 2>&1; then
        echo "| $planner | run $run: controller failed: $(tail -3 "$logs/controller.log") |"
        failed=1
        break
      fi
      kill -HUP "$root"
      for _ in $(seq 150); do grep -q "grid-root: reload" "$work/root.log" && break; sleep 0.1; done
      if ! grep -q "grid-root: reload (job $job): OK" "$work/root.log"; then
        echo "| $planner | run $run: grid-root did not reload: $(tail -2 "$work/root.log") |"
        failed=1
        break
      fi
    fi
    run_job "$work/store" "$logs"
    if [ "$status" != ok ]; then
      echo "| $planner | run $run: FAILED (logs in $work) |"
      failed=1
      break
    fi
    label=$planner
    [ -n "$rerun" ] && label="$planner | run $run"
    printf "| %s | %d iterations, %.1f ms each | %d retransmissions | %d wrong |\n" \
      "$label" "$iterations" "$ms" "$retrans" "$wrong"
    [ "$wrong" -eq 0 ] || failed=1
  done
  cleanup
  pids=()
done
[ "$failed" -eq 0 ] && rm -rf "$work_root"
exit "$failed"
