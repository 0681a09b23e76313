# Shell helpers to run a GRID job as separate processes on one machine:
# grid-controller plans and publishes into a file store, then three kinds of
# processes join: grid-switch per switch, grid-root, and the ranks. Sourced by
# scripts/testbed.sh and tests/integration/cluster_test.sh.
#
#   fabric_start TOOLS WORK CONTROLLER_ARGS...   plan, start switches and root
#   fabric_ranks N COMMAND ARGS...               start N ranks, logs WORK/rank-R.log
#   fabric_wait_ranks                            wait; nonzero if any rank failed
#   fabric_stop                                  SIGINT switches and root, wait
#   fabric_scratch                               (tests) $work, $base, $job, a trap, fail
#   fabric_start_lossy TOOLS                     (tests) the 4-worker testbed, lossy UDP
#
# env: FABRIC_SWITCH_FLAGS, extra flags for every grid-switch (--idle-us=10);
#      FABRIC_ROOT_FLAGS, for grid-root (--threads=2).

fabric_pids=()
fabric_rank_pids=()

# Exits 77 (a skip) when TOOLS' grid-switch was built without DPDK: memif
# fabrics and af_packet ports need it (GRID_WITH_DPDK).
fabric_need_dpdk() {
  if "$1/grid-switch" --help 2>/dev/null | grep -q "built without DPDK"; then
    echo "skipped: this build has no DPDK (GRID_WITH_DPDK): memif and af_packet need it"
    exit 77
  fi
}

fabric_start() {
  local tools=$1 work=$2
  shift 2
  local arg
  for arg in "$@"; do
    case $arg in --memif-dir=*) fabric_need_dpdk "$tools" ;; esac
  done
  fabric_tools=$tools
  fabric_work=$work
  fabric_job=1
  local a
  for a in "$@"; do case $a in --job-id=*) fabric_job=${a#--job-id=} ;; esac; done
  mkdir -p "$work/sock"
  "$tools/grid-controller" --store="file:$work/store" "$@" > "$work/controller.log" 2>&1 ||
    { cat "$work/controller.log"; return 1; }
  local s
  # In name order, which is node order for the generated topologies: a
  # switch serves the memif links to switches of higher ids.
  for s in $(ls "$work/store/grid/switch"); do
    local ports=()
    [ -f "$work/store/grid/switch-ports/$s" ] && mapfile -t ports < "$work/store/grid/switch-ports/$s"
    # From the store, as docs/worker.md runs it: the switch then writes its
    # status there, and a rank names it when it dies (lib/node/status.h).
    "$tools/grid-switch" "${ports[@]}" --store="file:$work/store" --name="$s" ${FABRIC_SWITCH_FLAGS:-} \
      > "$work/switch-$s.log" 2>&1 &
    fabric_pids+=($!)
  done
  # With FABRIC_ROOT_IN_RANK set, a rank hosts the root (GRID_ROOT_RANK).
  if [ -z "${FABRIC_ROOT_IN_RANK:-}" ]; then
    "$tools/grid-root" --store="file:$work/store" ${FABRIC_ROOT_FLAGS:-} > "$work/root.log" 2>&1 &
    fabric_pids+=($!)
  fi
}

fabric_ranks() {
  local n=$1 r
  shift
  fabric_rank_pids=()
  for r in $(seq 0 $((n - 1))); do
    GRID_RANK=$r GRID_WORLD_SIZE=$n GRID_STORE="file:$fabric_work/store" "$@" \
      > "$fabric_work/rank-$r.log" 2>&1 &
    fabric_rank_pids+=($!)
  done
}

fabric_wait_ranks() {
  local status=0 p
  for p in "${fabric_rank_pids[@]}"; do wait "$p" || status=1; done
  return $status
}

fabric_stop() {
  # Clients before servers: the root, then the switches from the last
  # started (a lower node id serves the memif links between switches).
  # DPDK's memif client faults when its server goes first.
  local i
  for ((i = ${#fabric_pids[@]} - 1; i >= 0; i--)); do
    kill -INT "${fabric_pids[$i]}" 2>/dev/null
    wait "${fabric_pids[$i]}" 2>/dev/null
  done
  fabric_pids=()
  # The EAL leaves its runtime directories behind. Empty ones go; one with
  # files in it stays, for the caller to see.
  rmdir /var/run/dpdk/g[swr]"$fabric_job"-* /var/run/dpdk/gr"$fabric_job" 2>/dev/null
}

# Copies the logs under $work (the nodes', the ranks', torchrun's) to
# $FABRIC_LOGS, where set (for traps).
fabric_keep_logs() {
  [ -n "${FABRIC_LOGS:-}" ] || return 0
  mkdir -p "$FABRIC_LOGS"
  (cd "$work" && find . -name '*.log' -exec cp --parents {} "$FABRIC_LOGS" \;) 2>/dev/null
  return 0
}

# Kills whatever is left (for traps).
fabric_kill() {
  local p
  for p in "${fabric_rank_pids[@]}" "${fabric_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
}

# For test scripts: a scratch directory $work, a random UDP base port $base
# and job id $job, a trap that kills what is left and removes $work, and
# fail MESSAGE (prints it and the tail of every log, exits 1). With
# FABRIC_LOGS=DIR set, the logs under $work are copied there first.
fabric_scratch() {
  work=$(mktemp -d)
  base=$((20000 + (RANDOM % 200) * 100))
  job=$((base % 1000 + 1))
  trap 'fabric_kill; fabric_keep_logs; rm -rf "$work"' EXIT
  fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -5 "$f"; done; exit 1; }
}

# For test scripts, after fabric_scratch: the testbed with 4 workers, planned
# by grid, over kernel UDP links with 1% loss, duplication and reordering.
fabric_start_lossy() {
  fabric_start "$1" "$work" --topology=testbed --workers=4 --planner=grid --slots=64 \
    --job-id=$job --udp-base-port=$base --link-impairment=loss=0.01,dup=0.01,reorder=0.01 ||
    fail "grid-controller"
}
