#!/usr/bin/env bash
# The PyTorch backend on an emulated fabric: grid-controller plans the
# testbed with 4 workers into a file store, grid-switch and grid-root run it
# over kernel UDP links with 1% loss, duplication and reordering, and torchrun
# starts 4 ranks of Python that uses only torch.distributed and
# `import grid_torch` (docs/torch.md). The same checks run on torch 1.13
# (Debian 12) and 2.x (Debian 13); the last two need 2.x and skip before it.
# The ranks start under torchrun, or where this torch's torchrun cannot start
# (Debian 13's, without libuv) with torchrun's env:// variables
# (scripts/torch_ranks.sh).
#
#   torch_test.sh TOOLS_DIR PYTHON_DIR dist     tests/torch/dist_check.py
#   torch_test.sh TOOLS_DIR PYTHON_DIR ddp      examples/torch_ddp.py: the MLP, 50 steps
#   torch_test.sh TOOLS_DIR PYTHON_DIR ddp_fp16 the MLP with DDP's fp16 compression hook
#   torch_test.sh TOOLS_DIR PYTHON_DIR ddp_cnn  the CNN with BatchNorm, no_sync() and
#                                               find_unused_parameters, 30 steps
#   torch_test.sh TOOLS_DIR PYTHON_DIR compile  the MLP through torch.compile under DDP
#   torch_test.sh TOOLS_DIR PYTHON_DIR fsdp     the MLP under FullyShardedDataParallel,
#                                               sharded and not
#
# Each model trains once with grid and once with gloo from the same seed,
# and tests/torch/compare_ddp.py holds every step's loss and the final
# parameters within 1e-5 (relative) of gloo's. The models' activation is
# SiLU: with ReLU, one last-bit difference can tip an activation over the
# kink, and two exact allreduces then differ by 1e-5 (docs/torch.md, "How
# close to Gloo").
set -u
tools=$1
pydir=$2
what=$3
py=${GRID_TORCH_PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/../.."

case $what in
  compile | fsdp)
    major=$("$py" -c 'import torch; print(torch.__version__.split(".")[0])') || exit 1
    if [ "$major" -lt 2 ]; then
      echo "skipped: $what needs torch 2.x; $py has $("$py" -c 'import torch; print(torch.__version__)')"
      exit 77
    fi ;;
esac

. scripts/fabric.sh
. scripts/torch_ranks.sh
fabric_scratch

fabric_start_lossy "$tools"

# run NAME SCRIPT ARGS...: 4 ranks (scripts/torch_ranks.sh), each must print
# "rank R: ok".
port=$((base + 90))
run() {
  local name=$1 r
  shift
  port=$((port + 1))
  PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}" GRID_STORE="file:$work/store" GRID_RTO_US=5000 \
    OMP_NUM_THREADS=1 TORCH_RANKS_TIMEOUT=280 torch_ranks "$py" 4 "$port" "$work/$name" "$@" ||
    fail "$name: $(grep -v "^\s*$" "$work/$name.log" | head -40
                   tail -n 30 "$work/$name"/rank-*.err)"
  for r in 0 1 2 3; do
    grep -q "rank $r: ok" "$work/$name.log" || fail "$name: rank $r: $(cat "$work/$name.log")"
  done
}

# against ARGS...: examples/torch_ddp.py with grid, then with gloo, compared.
against() {
  run ddp-grid examples/torch_ddp.py --backend=grid "$@" --out="$work/grid.json"
  run ddp-gloo examples/torch_ddp.py --backend=gloo "$@" --out="$work/gloo.json"
  grep -h "mean step" "$work/ddp-grid.log" "$work/ddp-gloo.log" | grep "rank 0"
  "$py" tests/torch/compare_ddp.py "$work/grid.json" "$work/gloo.json" || fail "grid against gloo"
}

case $what in
  dist)
    GRID_TIMEOUT_MS=5000 run dist tests/torch/dist_check.py
    grep -E "^\[default[0-9]\]:rank [0-9]: (stats|GRID_TIMEOUT_MS)" "$work/dist.log" ;;
  ddp) against --activation=silu --steps=50 ;;
  ddp_fp16)
    # DDP's fp16 compression hook. GRID sums the float16 buckets exactly
    # and rounds once; Gloo's ring adds in float16, rounding at every hop.
    # So GRID is held to the exact sum (gloo with --fp16-hook=exact), and
    # Gloo's own hook is reported beside it.
    run ddp-grid examples/torch_ddp.py --backend=grid --activation=silu --steps=50 \
      --fp16-hook --out="$work/grid.json"
    run ddp-exact examples/torch_ddp.py --backend=gloo --activation=silu --steps=50 \
      --fp16-hook=exact --out="$work/exact.json"
    run ddp-gloo examples/torch_ddp.py --backend=gloo --activation=silu --steps=50 \
      --fp16-hook --out="$work/gloo.json"
    "$py" tests/torch/compare_ddp.py "$work/grid.json" "$work/exact.json" ||
      fail "grid against the exact float16 sum"
    echo "gloo's own fp16 hook, for comparison:"
    "$py" tests/torch/compare_ddp.py "$work/gloo.json" "$work/exact.json" 1 ;;
  ddp_cnn) against --model=cnn --channels=16 --activation=silu --no-sync=2 --unused --steps=30 ;;
  compile) against --activation=silu --compile --steps=10 ;;
  fsdp)
    # Sharded, FSDP's collectives all go to the Gloo fallback; not sharded,
    # its gradients are allreduced on GRID.
    against --activation=silu --fsdp=full_shard --steps=3
    # A job's fabric serves one run (docs/worker.md, "One run per job"):
    # the second GRID run gets a job of its own.
    fabric_stop
    rm -rf "$work/store"
    job=$((job + 1))
    fabric_start_lossy "$tools"
    against --activation=silu --fsdp=no_shard --steps=3 ;;
  *) fail "unknown check $what" ;;
esac
fabric_stop
echo "torch $what: 4 ranks, every check held"
