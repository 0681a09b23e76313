#!/usr/bin/env bash
# The PyTorch backend on an emulated fabric: grid-controller plans the
# testbed with 4 workers into a file store, grid-switch and grid-root run it
# over kernel UDP links with 1% loss, duplication and reordering, and torchrun
# starts 4 ranks of Python that uses only torch.distributed and
# `import grid_torch` (docs/torch.md).
#
#   torch_test.sh TOOLS_DIR PYTHON_DIR dist   tests/torch/dist_check.py
#   torch_test.sh TOOLS_DIR PYTHON_DIR ddp    examples/torch_ddp.py, 50 steps
#                                             with grid and with gloo, compared
#
# Debian 12's torchrun (torch 1.13 on Python 3.11) cannot take its default
# --tee=0 --redirects=0 (IntFlag no longer iterates the zero member), so the
# ranks' stdout is teed and their stderr kept in $work/NAME.
set -u
tools=$1
pydir=$2
what=$3
py=${GRID_TORCH_PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
fabric_scratch

fabric_start_lossy "$tools"

# torchrun NAME SCRIPT ARGS...: 4 ranks, each must print "rank R: ok".
port=$((base + 90))
torchrun() {
  local name=$1 r
  shift
  port=$((port + 1))
  PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}" GRID_STORE="file:$work/store" GRID_RTO_US=5000 \
    OMP_NUM_THREADS=1 "$py" -m torch.distributed.run --nproc_per_node=4 \
    --master_addr=127.0.0.1 --master_port=$port \
    --tee=1 --redirects=2 --log_dir="$work/$name" "$@" > "$work/$name.log" 2>&1 ||
    fail "$name: $(grep -v "^\s*$" "$work/$name.log" | head -40
                   tail -n 30 "$work/$name"/*/attempt_0/*/stderr.log)"
  for r in 0 1 2 3; do
    grep -q "rank $r: ok" "$work/$name.log" || fail "$name: rank $r: $(cat "$work/$name.log")"
  done
}

case $what in
  dist)
    GRID_TIMEOUT_MS=5000 torchrun dist tests/torch/dist_check.py
    grep -E "^\[default[0-9]\]:rank [0-9]: (stats|GRID_TIMEOUT_MS)" "$work/dist.log" ;;
  ddp)
    torchrun ddp-grid examples/torch_ddp.py --backend=grid --steps=50 --out="$work/grid.json"
    torchrun ddp-gloo examples/torch_ddp.py --backend=gloo --steps=50 --out="$work/gloo.json"
    grep -h "mean step" "$work/ddp-grid.log" "$work/ddp-gloo.log" | grep "rank 0"
    "$py" tests/torch/compare_ddp.py "$work/grid.json" "$work/gloo.json" || fail "grid against gloo" ;;
  *) fail "unknown check $what" ;;
esac
fabric_stop
echo "torch $what: 4 ranks under torchrun, every check held"
