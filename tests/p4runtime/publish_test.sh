#!/usr/bin/env bash
# grid-controller --switch=p4runtime: the testbed's three switches, each a
# simple_switch_grpc of its own with no program yet, programmed through
# P4Runtime (pipeline, entries, read-back) for an 8-worker grid plan; the
# same publication again, by position and by name, which writes nothing; a
# name the plan lacks, refused; --delete-job, refused while
# a second job shares the switches and taking them back to no entry once it
# is the only one; a publication with a switch down, which touches none; and
# one address too few, refused. Exit 77 (skipped) without the P4 toolchain or
# a build with the P4Runtime client.
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
controller=("$tools/grid-controller" --topology=testbed --workers=8 --planner=grid --job-id=7 --token=77
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
[ "$(grep -c "program committed; inserted .*; read back equal" "$work/controller.log")" = 3 ] ||
  fail "not every switch read back what was written"
switches=--switch=p4runtime:"$(IFS=,; echo "${addresses[*]}")"
"${controller[@]}" "$switches" > "$work/again.log" 2>&1 || fail "publishing again: $(cat "$work/again.log")"
[ "$(grep -c "program already there; inserted 0, modified 0, deleted 0" "$work/again.log")" = 3 ] ||
  fail "publishing the same job again wrote something: $(cat "$work/again.log")"
# The same by name, in another order: each address reaches its own switch.
"${controller[@]}" --switch=p4runtime:"S3=${addresses[2]},S1=${addresses[0]},S2=${addresses[1]}" \
  > "$work/named.log" 2>&1 || fail "publishing by name: $(cat "$work/named.log")"
[ "$(grep -c "inserted 0, modified 0, deleted 0" "$work/named.log")" = 3 ] ||
  fail "publishing by name wrote something: $(cat "$work/named.log")"
"${controller[@]}" --switch=p4runtime:"S1=${addresses[0]},S2=${addresses[1]},S9=${addresses[2]}" \
  > "$work/unknown.log" 2>&1 && fail "a switch the plan does not have was taken"
grep -q "the plan has no switch S9 (it has S1, S2, S3)" "$work/unknown.log" ||
  fail "$(cat "$work/unknown.log")"
# A second job beside it (its own slots), then job 7's deletion: refused.
"${controller[@]}" "$switches" --job-id=8 --slot-base=64 > "$work/job8.log" 2>&1 ||
  fail "job 8 beside job 7: $(cat "$work/job8.log")"
delete=("$tools/grid-controller" "$switches" --p4info="$p4/grid.p4info.txtpb"
        --p4-json="$p4/grid.json")
"${delete[@]}" --delete-job=7 > "$work/refused.log" 2>&1 && fail "job 7 deleted beside job 8"
grep -q "switch 3 at 127.0.0.1:$((base + 2)) also hold job 8: clearing job 7's registers" \
  "$work/refused.log" ||
  fail "$(cat "$work/refused.log")"
"${controller[@]}" "$switches" > "$work/unchanged.log" 2>&1 &&
  [ "$(grep -c "inserted 0, modified 0, deleted 0" "$work/unchanged.log")" = 3 ] ||
  fail "the refused deletion changed a switch: $(cat "$work/unchanged.log")"
# Both together: every switch back to no entry, its program still there.
"${delete[@]}" --delete-job=7,8 > "$work/deleted.log" 2>&1 || fail "$(cat "$work/deleted.log")"
[ "$(grep -c "registers cleared by committing the program again; holds no entry now" \
  "$work/deleted.log")" = 3 ] || fail "$(cat "$work/deleted.log")"
"${controller[@]}" "$switches" > "$work/after.log" 2>&1 &&
  [ "$(grep -c "program already there; inserted [1-9]" "$work/after.log")" = 3 ] ||
  fail "publishing after the deletion: $(cat "$work/after.log")"
# A switch down: the publication stops before writing to any.
kill "${pids[2]}"
wait "${pids[2]}" 2>/dev/null
"${controller[@]}" "$switches" --job-id=9 --slot-base=128 --p4runtime-timeout-s=2 \
  > "$work/down.log" 2>&1 && fail "published with a switch down"
grep -q "switch S3 at 127.0.0.1:$((base + 2)).*(nothing written to any switch)" "$work/down.log" ||
  fail "$(cat "$work/down.log")"
"${controller[@]}" --switch=p4runtime:"${addresses[0]},${addresses[1]}" > "$work/short.log" 2>&1 &&
  fail "two addresses for three switches were taken"
grep -q "2 addresses for 3 switches" "$work/short.log" || fail "$(cat "$work/short.log")"
cat "$work/refused.log" "$work/deleted.log" "$work/down.log"
echo "publish_test: 3 switches programmed, published again unchanged, a deletion refused beside" \
  "another job and done with both, a switch down refused before any write, a short list refused"
exit 0
