#!/usr/bin/env bash
# bench/allreduce_perf on the paper's testbed in network namespaces: three
# grid-switch processes on af_packet ports (every link a veth pair), 8 ranks
# and the root each in a namespace on the kernel UDP transport. GRID, Gloo's
# ring and OpenMPI (TCP between the ranks' namespaces) cross the same veths and
# the same switches, which shape every port to the link rate and forward IPv4
# that is not GRID's by address. Rank 0's table is printed. allreduce_perf's
# own ring is left out (--ring=false): it sends raw frames to a port that
# only a raw transport (memif, scripts/allreduce_perf.sh) receives.
#
#   scripts/netns_perf.sh [BUILD_DIR] [allreduce_perf flags...]
#   env: PLANNER (grid-paths), GBPS (link rate, 0.02), ELEMENTS and SLOTS
#        (auto: grid-controller picks them for the veths' 1500-byte MTU),
#        GLOO (1: Gloo's ring too; 0: not), MPI (1, where mpirun is found:
#        MPI_Allreduce too, every rank started by mpirun through
#        scripts/netns_rsh.sh; 0: not),
#        SHAPE (switch: grid-switch shapes its ports, and marks CONGESTION
#        from its queues; tc: the kernel shapes both ends of every veth with
#        tbf, and grid-switch sees no queue)
# Needs root, iproute2 and ethtool (TCP's offloads are turned off on the
# hosts' veths: the switches read whole frames of at most an MTU).
set -uo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build/release}" && pwd)
shift || true
tools=$build/tools
. scripts/netns_fabric.sh

for tool in ip ethtool; do
  command -v "$tool" >/dev/null || { echo "netns_perf: $tool not found" >&2; exit 77; }
done
gloo=${GLOO:-1}
mpi=${MPI:-$(command -v mpirun >/dev/null && echo 1 || echo 0)}
if [ "$mpi" = 1 ] && ! command -v mpirun >/dev/null; then
  echo "netns_perf: MPI=1 needs mpirun (apt-get install openmpi-bin)" >&2
  exit 77
fi
[ "$(id -u)" -eq 0 ] || { echo "netns_perf: needs root for network namespaces" >&2; exit 77; }
why=$(netns_probe) || { echo "netns_perf: skipped: no network namespaces here: $why" >&2; exit 77; }
if "$tools/grid-switch" --help | grep -q "built without DPDK"; then
  echo "netns_perf: skipped: grid-switch's af_packet ports need DPDK (GRID_WITH_DPDK)" >&2
  exit 77
fi

work=$(mktemp -d /tmp/grid-netns-perf.XXXXXX)
prefix=gp$((RANDOM % 1000))
job=$((1 + RANDOM % 60000))
ranks=()
cleanup() {
  local p
  for p in "${ranks[@]}"; do kill -INT "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${ranks[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait "${ranks[@]}" 2>/dev/null
  netns_grid_down "$prefix"
  # Anything left, OpenMPI's daemons included: their command lines name $work.
  pkill -KILL -f -- "$work/" 2>/dev/null
  rmdir /var/run/dpdk/gs"$job"-* 2>/dev/null
  [ -n "${KEEP:-}" ] && cp -r "$work" "$KEEP"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

gbps=${GBPS:-0.02}
shape=${SHAPE:-switch}
netns_grid_up "$tools" "$work" "$prefix" "$job" "$gbps" "$shape" --workers=8 \
  --planner="${PLANNER:-grid-paths}" --slots="${SLOTS:-auto}" --elements="${ELEMENTS:-auto}"
case $? in
  0) ;;
  77) exit 77 ;;
  *) exit 1 ;;
esac
ip_of_rank() { netns_rank_ip "$work" "$1"; }
peers=(--ring=false --tx-interface=eth0)
[ "$gloo" = 1 ] && peers+=(--gloo=worker)
rank_env=(GRID_WORLD_SIZE=8 GRID_STORE="file:$work/store" GRID_TIMEOUT_MS="${GRID_TIMEOUT_MS:-300000}")
if [ "$mpi" = 1 ]; then
  # mpirun in rank 0's namespace starts an OpenMPI daemon in each other
  # rank's (scripts/netns_rsh.sh), one rank per host in rank order, and MPI's
  # TCP runs over eth0: the same links and switches as GRID and Gloo.
  for r in $(seq 0 7); do echo "$(ip_of_rank "$r") slots=1"; done > "$work/mpi-hosts"
  # OpenMPI's allocations outlive MPI_Finalize in components it has unloaded,
  # where LeakSanitizer can neither name nor suppress them: in a sanitizer
  # build, leaks are checked by the runs without MPI (MPI=0).
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  ip netns exec "$(netns_rank_ns "$work" 0)" env GRID_NETNS_HOSTS="$work/store/grid/netns/hosts" \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -np 8 --hostfile "$work/mpi-hosts" --bind-to none \
    --mca plm_rsh_agent "$PWD/scripts/netns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
    --output-filename "$work/mpi-out" --mca orte_tmpdir_base "$work/mpi-tmp" \
    --leave-session-attached --mca orte_startup_timeout 60 \
    env "${rank_env[@]}" /bin/sh -c 'GRID_RANK=$OMPI_COMM_WORLD_RANK exec "$@"' rank \
    "$build/bench/allreduce_perf" "${peers[@]}" --mpi=true "$@" > "$work/mpirun.log" 2>&1 &
  ranks+=($!)
else
  for r in $(seq 0 7); do
    ip netns exec "$(netns_rank_ns "$work" "$r")" env GRID_RANK="$r" "${rank_env[@]}" \
      "$build/bench/allreduce_perf" "${peers[@]}" "$@" > "$work/rank-$r.log" 2>&1 &
    ranks+=($!)
  done
fi
status=0
for p in "${ranks[@]}"; do wait "$p" || status=1; done
if [ "$mpi" = 1 ]; then  # mpirun keeps each rank's output apart
  for r in $(seq 0 7); do
    cat "$work"/mpi-out/1/rank."$r"/std* > "$work/rank-$r.log" 2>/dev/null
  done
  [ $status = 0 ] || cat "$work/mpirun.log"
fi
echo "# netns testbed: planner ${PLANNER:-grid-paths}, links $gbps Gbps (shaped by $shape)"
cat "$work/rank-0.log"
[ $status = 0 ] || { for r in $(seq 1 7); do tail -2 "$work/rank-$r.log"; done; exit 1; }
