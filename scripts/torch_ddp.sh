#!/usr/bin/env bash
# DDP step time with GRID against Gloo on one machine (docs/results.md,
# "PyTorch DDP"): for each GRID run grid-controller plans the testbed (3
# switches, 4 workers, the root) into a file store, grid-switch and grid-root
# run it over kernel UDP on loopback, and torchrun runs examples/torch_ddp.py
# with 4 ranks,
# once per backend and model width, REPEAT times, in alternation so both see
# the same background load. Gloo's ring runs over TCP on loopback. Prints a
# markdown table of the mean step time (ms, mean ± sd over the runs) and
# the ratio.
#
#   REPEAT=N HIDDEN="256 1024" STEPS=50 PLANNER=grid scripts/torch_ddp.sh [BUILD_DIR]
# env: LINKS (controller link impairment, e.g. loss=0.01; none by default),
#      CONTROLLER_FLAGS (more grid-controller flags: --elements=64 --slots=256
#      for the paper's frames instead of the widest).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
repeat=${REPEAT:-3}
hidden=${HIDDEN:-"256 1024"}
steps=${STEPS:-50}
planner=${PLANNER:-grid}
py=${GRID_TORCH_PYTHON:-/usr/bin/python3}
[ -f "$build/python/grid_torch/__init__.py" ] ||
  { echo "no PyTorch backend in $build (docs/torch.md: apt-get install python3-torch libtorch-dev pybind11-dev)"; exit 1; }
. scripts/fabric.sh
. scripts/torch_ranks.sh
fabric_scratch
impair=()
[ -n "${LINKS:-}" ] && impair=(--link-impairment="$LINKS")

port=$((base + 90))
declare -A ms
for h in $hidden; do
  for i in $(seq 1 "$repeat"); do
    for b in grid gloo; do
      port=$((port + 1))
      # A fresh fabric and job id for every GRID run: a job's sequence
      # numbers start over, and the switches would take them for the last
      # job's retransmissions (docs/security.md, "Two jobs").
      if [ $b = grid ]; then
        job=$((job + 1))
        rm -rf "$work/store"
        fabric_start "$build/tools" "$work" --topology=testbed --workers=4 --planner="$planner" \
          --job-id=$job --udp-base-port=$base "${impair[@]}" ${CONTROLLER_FLAGS:-} || fail "grid-controller"
      fi
      PYTHONPATH="$build/python" GRID_STORE="file:$work/store" OMP_NUM_THREADS=1 \
        torch_ranks "$py" 4 "$port" "$work/run-$b-$h-$i" \
        examples/torch_ddp.py --backend=$b --steps="$steps" --hidden="$h" \
        --out="$work/$b-$h-$i.json" ||
        fail "$b, hidden $h, run $i: $(grep -v '^\s*$' "$work/run-$b-$h-$i.log" | tail -20)"
      [ $b = grid ] && fabric_stop
      ms[$b-$h]+="$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['step_ms'])" "$work/$b-$h-$i.json") "
    done
    "$py" tests/torch/compare_ddp.py "$work/grid-$h-$i.json" "$work/gloo-$h-$i.json" 1e-4 > "$work/cmp-$h-$i.log" ||
      fail "hidden $h, run $i: $(cat "$work/cmp-$h-$i.log")"
  done
done

stat() { "$py" -c "import statistics as s,sys; v=[float(x) for x in sys.argv[1:]]; print(f'{s.mean(v):.1f} ± {s.stdev(v) if len(v)>1 else 0:.1f}')" "$@"; }
echo "DDP, 4 ranks, $steps steps, GRID ($planner) on a UDP fabric${LINKS:+ ($LINKS)} against Gloo's ring on TCP, $repeat runs:"
echo
echo "| hidden | parameters | gradient | grid step (ms) | gloo step (ms) | grid / gloo |"
echo "|---|---|---|---|---|---|"
for h in $hidden; do
  n=$("$py" -c "import json; print(len(json.load(open('$work/grid-$h-1.json'))['params']))")
  g=$(stat ${ms[grid-$h]}); l=$(stat ${ms[gloo-$h]})
  r=$("$py" -c "import sys; a=[float(x) for x in sys.argv[1].split()]; b=[float(x) for x in sys.argv[2].split()]; print(f'{sum(a)/len(a)/(sum(b)/len(b)):.2f}')" "${ms[grid-$h]}" "${ms[gloo-$h]}")
  echo "| $h | $n | $((n * 4 / 1024)) KiB | $g | $l | $r |"
done
echo
worst() { grep -ho "$1 error [0-9.e+-]*" "$work"/cmp-*.log | awk '{print $3}' | sort -g | tail -1; }
echo "Every run agreed with Gloo's within 1e-4: largest loss error $(worst loss), parameter error $(worst parameter)."
