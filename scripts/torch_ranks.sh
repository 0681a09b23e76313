# Sourced: runs N ranks of a torch.distributed program on this machine, as a
# user would with torchrun, for the tests and scripts that drive the torch
# backend (tests/torch/torch_test.sh, tests/integration/mistakes_test.sh,
# scripts/torch_ddp.sh).
#
#   torch_ranks PYTHON N PORT OUT SCRIPT ARGS...
#
# Waits for every rank; returns nonzero if any failed or outlived
# TORCH_RANKS_TIMEOUT seconds (default 600). OUT.log gets every rank's
# stdout, each line prefixed "[defaultR]:" as torchrun's --tee does it;
# OUT/ keeps each rank's stderr.
#
# Where this torch's TCPStore can start, the ranks run under torchrun.
# Debian 13's torch 2.6 is built without libuv and its TCPStore asks for it
# unless told use_libuv=False, which torchrun's rendezvous never says (and
# USE_LIBUV=0 does not reach it): there the ranks start with torch's env://
# variables, as torchrun would set them, and USE_LIBUV=0 (docs/torch.md).

# torch_ranks_torchrun PYTHON: whether PYTHON's torchrun can start here.
torch_ranks_torchrun() {
  "$1" -c 'import torch.distributed as d; d.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)' \
    > /dev/null 2>&1
}

torch_ranks() {
  local py=$1 n=$2 port=$3 out=$4 r p status=0
  shift 4
  local limit=${TORCH_RANKS_TIMEOUT:-600}
  mkdir -p "$out"
  if torch_ranks_torchrun "$py"; then
    # Debian 12's torchrun (torch 1.13 on Python 3.11) cannot take its
    # default --tee=0 --redirects=0 (IntFlag no longer iterates the zero
    # member): stdout is teed, stderr kept under OUT.
    timeout "$limit" "$py" -m torch.distributed.run --nproc_per_node="$n" \
      --master_addr=127.0.0.1 --master_port="$port" --tee=1 --redirects=2 --log_dir="$out" \
      "$@" > "$out.log" 2>&1 || status=1
    for r in $(seq 0 $((n - 1))); do
      cat "$out"/*/attempt_0/"$r"/stderr.log > "$out/rank-$r.err" 2>/dev/null
    done
    return $status
  fi
  local pids=()
  for r in $(seq 0 $((n - 1))); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n GROUP_RANK=0 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port USE_LIBUV=0 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
      timeout "$limit" "$py" "$@" > "$out/rank-$r.out" 2> "$out/rank-$r.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  : > "$out.log"
  for r in $(seq 0 $((n - 1))); do
    sed "s/^/[default$r]:/" "$out/rank-$r.out" >> "$out.log"
  done
  # A failed rank's error, as torchrun would show it.
  if [ $status != 0 ]; then
    for r in $(seq 0 $((n - 1))); do tail -n 20 "$out/rank-$r.err" >> "$out.log"; done
  fi
  return $status
}
