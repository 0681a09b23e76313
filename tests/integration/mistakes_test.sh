#!/usr/bin/env bash
# Issue 44's mistakes, played as a new user makes them, as processes on the
# UDP fabric, with every timeout left at its default (60 s for the store,
# 30 s for operations). Each must end, or say what it waits for, within 5 s,
# with a phrase that names the cause. Each case used to wait out a whole
# timeout in silence (the times before are in docs/worker.md, "Waiting
# without silence").
#
#   mistakes_test.sh TOOLS_DIR
set -u
tools=$1
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
fabric_scratch
check="$tools/grid-allreduce-check"

# expect NAME SECONDS PHRASE LOG: LOG holds PHRASE and it came within SECONDS.
expect() {
  local name=$1 limit=$2 phrase=$3 log=$4 took=$5
  grep -qF -- "$phrase" "$log" || { cat "$log"; fail "$name: no \"$phrase\""; }
  [ "$took" -le "$limit" ] || fail "$name: took ${took}s, more than ${limit}s"
  echo "ok: $name in ${took}s: $phrase"
}
now() { date +%s; }

"$tools/grid-controller" --topology=testbed --workers=4 --job-id=$job \
  --store=file:"$work/store" --udp-base-port=$base > "$work/controller.log" 2>&1 ||
  fail "grid-controller"

# 1. A rank the published job does not have.
t=$(now)
GRID_RANK=5 GRID_STORE=file:"$work/store" "$check" --iterations=1 > "$work/rank5.log" 2>&1
expect "a rank outside the job" 5 "has 4 workers, ranks 0-3: this rank is not one of them" \
  "$work/rank5.log" $(($(now) - t))

# 2. A store directory that does not exist (a typo in GRID_STORE).
t=$(now)
GRID_RANK=1 GRID_STORE=file:"$work/no-such-store" "$check" --iterations=1 > "$work/nostore.log" 2>&1
expect "a store that does not exist" 5 "does not exist 4s into the wait" "$work/nostore.log" \
  $(($(now) - t))

# 3. grid-switch from the store, without its ports (docs/worker.md's line).
t=$(now)
"$tools/grid-switch" --store=file:"$work/store" --name=S1 > "$work/switch.log" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "grid-switch without ports exited $rc"
expect "grid-switch without ports" 5 "give each port as --udp-port=BIND@PEER" "$work/switch.log" \
  $(($(now) - t))
grep -q "EAL:" "$work/switch.log" && fail "grid-switch without ports still reached DPDK's EAL"

# 4. grid-root waiting on a store nobody has published to yet: it says so.
mkdir -p "$work/empty"
t=$(now)
"$tools/grid-root" --store=file:"$work/empty" > "$work/root-wait.log" 2>&1 &
root_pid=$!
for _ in $(seq 50); do
  grep -q "is waiting for" "$work/root-wait.log" && break
  sleep 0.1
done
kill $root_pid 2>/dev/null; wait $root_pid 2>/dev/null
expect "grid-root waiting for a controller" 5 \
  "grid-root is waiting for its config from grid-controller: key \"grid/root\"" \
  "$work/root-wait.log" $(($(now) - t))

# 5. The same rank twice on one fabric: the second names the likely cause.
GRID_RANK=0 GRID_STORE=file:"$work/store" "$check" --iterations=1 > "$work/first.log" 2>&1 &
first=$!
sleep 1
t=$(now)
GRID_RANK=0 GRID_STORE=file:"$work/store" "$check" --iterations=1 > "$work/second.log" 2>&1
expect "a rank started twice" 5 "another process holds this port" "$work/second.log" \
  $(($(now) - t))
kill $first 2>/dev/null; wait $first 2>/dev/null
echo "mistakes: every case ended or spoke up within 5 s, naming its cause"
