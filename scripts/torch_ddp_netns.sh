#!/usr/bin/env bash
# DDP where the network binds (docs/results.md, "DDP on shaped links"): the
# 8 ranks of examples/torch_ddp.py, each in its own network namespace on the
# netns testbed of scripts/netns_perf.sh (3 grid-switch processes, every
# link a veth pair shaped to GBPS, the root in a namespace of its own), with
# GRID and with Gloo, whose TCP the same switches forward over the same
# links. Every run gets a fresh fabric and job; the backends alternate, so
# both see the same background load. Each run times every bucket's
# allreduce through a DDP communication hook (--time-comm) and counts what
# each host's eth0 sent per step. Prints a markdown table: mean step time
# (mean ± sd over the runs), the communication share of the step, bytes
# sent per host per step, GRID / Gloo; and the largest loss and parameter
# errors of each GRID run against the Gloo run beside it, which must be
# within 1e-4 (tests/torch/compare_ddp.py), or the script fails (the cnn's
# BatchNorm statistics are reported, not bounded).
#
#   scripts/torch_ddp_netns.sh [BUILD_DIR]
#   env: MODELS ("mlp cnn"), REPEAT (3), STEPS (30), GBPS (link rate, 0.1),
#        SHAPE (switch or tc, as netns_perf.sh), PLANNER (grid-paths),
#        HIDDEN (mlp width, 1024: a 4.3 MiB gradient), CHANNELS (cnn's first
#        layer, 64: 5.9 MiB), BATCH (samples per rank per step, 8)
# Gloo's sockets (the gloo backend's, and the grid backend's fallback) bind
# to eth0 (GLOO_SOCKET_IFNAME): the host name resolves to loopback.
# Needs root, iproute2, ethtool, and a build with the PyTorch backend;
# exits 77 (skipped) with the reason where one is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build/release}" && pwd)
tools=$build/tools
py=${GRID_TORCH_PYTHON:-/usr/bin/python3}
export USE_LIBUV=0  # Debian 13's torch 2.6 has no libuv for its TCPStore (docs/torch.md)
. scripts/netns_fabric.sh

skip() { echo "torch_ddp_netns: skipped: $*" >&2; exit 77; }
[ -f "$build/python/grid_torch/__init__.py" ] ||
  skip "no PyTorch backend in $build (docs/torch.md: apt-get install python3-torch libtorch-dev pybind11-dev)"
for tool in ip ethtool; do command -v "$tool" >/dev/null || skip "$tool not found"; done
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
why=$(netns_probe) || skip "no network namespaces here: $why"
"$tools/grid-switch" --help | grep -q "built without DPDK" &&
  skip "grid-switch's af_packet ports need DPDK (GRID_WITH_DPDK)"

models=${MODELS:-"mlp cnn"}
repeat=${REPEAT:-3}
steps=${STEPS:-30}
gbps=${GBPS:-0.1}
shape=${SHAPE:-switch}
world=8
work=$(mktemp -d /tmp/grid-ddp-netns.XXXXXX)
prefix=gd$((RANDOM % 1000))
job=$((1 + RANDOM % 60000))
ranks=()
stop_ranks() {
  local p
  for p in "${ranks[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait "${ranks[@]}" 2>/dev/null
  ranks=()
}
cleanup() {
  stop_ranks
  netns_grid_down "$prefix"
  [ -n "${KEEP:-}" ] && cp -r "$work" "$KEEP"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "torch_ddp_netns: $*" >&2; exit 1; }

# run BACKEND MODEL I: one training run on a fresh fabric; rank 0's JSON to
# $work/BACKEND-MODEL-I.json.
run() {
  local b=$1 m=$2 i=$3 r dir=$work/$1-$2-$3 status=0
  job=$((job % 60000 + 1))
  mkdir -p "$dir"
  netns_grid_up "$tools" "$dir" "$prefix" "$job" "$gbps" "$shape" --workers=$world \
    --planner="${PLANNER:-grid-paths}" --slots=auto --elements=auto
  case $? in
    0) ;;
    77) exit 77 ;;
    *) fail "$b $m run $i: the fabric did not come up" ;;
  esac
  local master
  master=$(netns_rank_ip "$dir" 0)
  for r in $(seq 0 $((world - 1))); do
    ip netns exec "$(netns_rank_ns "$dir" "$r")" env RANK="$r" WORLD_SIZE=$world LOCAL_RANK=0 \
      MASTER_ADDR="$master" MASTER_PORT=29500 GLOO_SOCKET_IFNAME=eth0 \
      GRID_STORE="file:$dir/store" OMP_NUM_THREADS=1 \
      PYTHONPATH="$build/python" "$py" examples/torch_ddp.py --backend="$b" --model="$m" \
      --steps="$steps" --batch="${BATCH:-8}" --hidden="${HIDDEN:-1024}" \
      --channels="${CHANNELS:-64}" --time-comm --tx-interface=eth0 --timeout-s=300 \
      --out="$work/$b-$m-$i.json" > "$dir/rank-$r.log" 2>&1 &
    ranks+=($!)
  done
  # The first rank to fail ends the run: the others would wait for it
  # until torch's timeout.
  local left=("${ranks[@]}") done p rest
  while [ ${#left[@]} -gt 0 ]; do
    wait -n -p done "${left[@]}" || { status=1; break; }
    rest=()
    for p in "${left[@]}"; do [ "$p" = "$done" ] || rest+=("$p"); done
    left=("${rest[@]}")
  done
  stop_ranks
  netns_grid_down "$prefix"
  if [ $status != 0 ] || [ ! -s "$work/$b-$m-$i.json" ]; then
    for r in $(seq 0 $((world - 1))); do
      echo "--- rank $r:"; grep -v " step [0-9]* loss" "$dir/rank-$r.log" | tail -8
    done >&2
    fail "$b $m run $i failed"
  fi
  grep -h "mean step" "$dir/rank-0.log"
}

for m in $models; do
  for i in $(seq 1 "$repeat"); do
    # grid first in odd runs, gloo first in even ones.
    order="grid gloo"
    [ $((i % 2)) = 0 ] && order="gloo grid"
    for b in $order; do run "$b" "$m" "$i" || exit $?; done
    "$py" tests/torch/compare_ddp.py "$work/grid-$m-$i.json" "$work/gloo-$m-$i.json" 1e-4 \
      > "$work/cmp-$m-$i.log" || fail "$m run $i: $(cat "$work/cmp-$m-$i.log")"
  done
done

"$py" - "$work" "$repeat" $models <<'EOF'
import json, statistics, sys
work, repeat, models = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def runs(b, m):
    return [json.load(open(f"{work}/{b}-{m}-{i}.json")) for i in range(1, repeat + 1)]
def ms(v):
    return f"{statistics.mean(v):.0f} ± {statistics.stdev(v) if len(v) > 1 else 0:.0f}"
print("| model | gradient | grid step (ms) | gloo step (ms) | grid / gloo | "
      "comm share, grid | comm share, gloo | MB/host/step, grid | MB/host/step, gloo |")
print("|---|---|---|---|---|---|---|---|---|")
for m in models:
    g, l = runs("grid", m), runs("gloo", m)
    gs, ls = [r["step_ms"] for r in g], [r["step_ms"] for r in l]
    share = lambda rs: f"{100 * statistics.mean(r['comm_share'] for r in rs):.0f}%"
    mb = lambda rs: f"{statistics.mean(r['host_bytes_per_step'] for r in rs) / 1e6:.2f}"
    print(f"| {m} | {g[0]['gradient_bytes'] / 2**20:.1f} MiB | {ms(gs)} | {ms(ls)} | "
          f"{statistics.mean(gs) / statistics.mean(ls):.2f} | {share(g)} | {share(l)} | "
          f"{mb(g)} | {mb(l)} |")
EOF
echo
worst() { grep -ho "$1 error [0-9.e+-]*" "$work"/cmp-*.log | awk '{print $3}' | sort -g | tail -1; }
echo "$world ranks, $steps steps (5 of warm-up left out), links $gbps Gbps shaped by $shape," \
  "planner ${PLANNER:-grid-paths}, $repeat runs per backend and model."
bn=""
case " $models " in *" cnn "*) bn="; BatchNorm statistics (not bounded) $(worst buffer)" ;; esac
echo "Every GRID run agreed with the Gloo run beside it within 1e-4: largest loss error" \
  "$(worst loss), parameter error $(worst parameter)$bn."
