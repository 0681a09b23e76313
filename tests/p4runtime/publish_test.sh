#!/usr/bin/env bash
# grid-controller --switch=p4runtime: the testbed's three switches, each a
# simple_switch_grpc of its own with no program yet, programmed through
# P4Runtime (pipeline, entries, read-back) for an 8-worker grid plan; then
# the same with one address too few, which must be refused before any
# switch is touched. Exit 77 (skipped) without the P4 toolchain or a build
# with the P4Runtime client.
#   publish_test.sh TOOLS_DIR P4_BUILD_DIR SIMPLE_SWITCH_GRPC
set -u
tools=$1 p4=$2 ssg=${3:-}
if [ -z "$ssg" ] || [ ! -x "$ssg" ] || [ ! -f "$p4/grid.p4info.txtpb" ]; then
  echo "SKIPPED: needs simple_switch_grpc and the compiled v1model program (p4_compile_v1model)"
  exit 77
fi
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -5 "$f"; done; exit 1; }
base=$((40000 + (RANDOM % 100) * 100))
addresses=()
for i in 0 1 2; do
  "$ssg" --no-p4 --device-id $i --thrift-port $((base + 10 + i)) -- \
    --grpc-server-addr=127.0.0.1:$((base + i)) > "$work/switch-$i.log" 2>&1 &
  pids+=($!)
  addresses+=("127.0.0.1:$((base + i))/$i")
done
controller=("$tools/grid-controller" --topology=testbed --workers=8 --planner=grid --job-id=7
            --store="file:$work/store" --p4info="$p4/grid.p4info.txtpb" --p4-json="$p4/grid.json")
if "$tools/grid-controller" --help 2>&1 | grep -q "p4runtime" &&
   "${controller[@]}" --switch=p4runtime:127.0.0.1:1 2>&1 | grep -q "no P4Runtime client"; then
  echo "SKIPPED: this build has no P4Runtime client"
  exit 77
fi
# BMv2 switches side by side need device ids of their own (each has a
# notification socket named by it): ADDR/DEVICE tells the controller.
"${controller[@]}" --switch=p4runtime:"$(IFS=,; echo "${addresses[*]}")" > "$work/controller.log" 2>&1 ||
  fail "grid-controller: $(cat "$work/controller.log")"
cat "$work/controller.log"
[ "$(grep -c "written and read back" "$work/controller.log")" = 3 ] ||
  fail "not every switch read back what was written"
"${controller[@]}" --switch=p4runtime:"${addresses[0]},${addresses[1]}" > "$work/short.log" 2>&1 &&
  fail "two addresses for three switches were taken"
grep -q "2 addresses for 3 switches" "$work/short.log" || fail "$(cat "$work/short.log")"
echo "publish_test: 3 switches programmed over P4Runtime and read back; a short list refused"
exit 0
