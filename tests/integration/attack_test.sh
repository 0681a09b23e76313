#!/usr/bin/env bash
# Adversarial traffic against grid-switch and grid-root in a running job of
# separate processes (docs/security.md, "Tested"). Seven ranks on the
# testbed over kernel UDP links; grid-attack plays the eighth worker host
# (W8, unused by the job) and sends every class of tools/attacks.h, and a
# stranger sends from outside the links. Then:
# - every rank's every element is right;
# - W8's switch (S3) dropped each class under its reason, and took from
#   its two members exactly their own chunks (its job counters);
# - the stranger's frames were dropped at the link (foreign_drops), the
#   forged partials at the root, the forged results at the member.
#
#   attack_test.sh TOOLS_DIR
set -uo pipefail
tools=$1
cd "$(dirname "$0")/../.."
. scripts/fabric.sh
work=$(mktemp -d /tmp/grid-attack.XXXXXX)
trap 'fabric_kill; rm -rf "$work"' EXIT
fail() {
  echo "attack_test: FAIL: $*"
  for f in "$work"/*.log "$work"/*.json; do echo "== $f"; tail -c 600 "$f"; echo; done
  exit 1
}

# The widest frames (the in-process adversarial tests use 64 elements).
iterations=30 count=3000 elements=1024
fabric_start "$tools" "$work" --topology=testbed --workers=7 --planner=switchml --slots=64 \
  --elements=$elements \
  --udp-base-port=$((20000 + RANDOM % 30000)) --job-id=$((1 + RANDOM % 1000)) || fail "controller"
GRID_TIMEOUT_MS=60000 fabric_ranks 7 "$tools/grid-allreduce-check" --iterations=$iterations \
  --count=$count --types=int32,float32
"$tools/grid-attack" --store="file:$work/store" --topology=testbed --host=W8 --pps=2000 \
  --seconds=4 > "$work/attack.json" 2>&1 &
attacker=$!
"$tools/grid-attack" --store="file:$work/store" --topology=testbed --host=W8 --from-elsewhere \
  --classes=impersonate,wrong_token --pps=500 --seconds=4 > "$work/stranger.json" 2>&1 &
stranger=$!
wait "$attacker" || fail "grid-attack"
wait "$stranger" || fail "grid-attack --from-elsewhere"
fabric_wait_ranks || fail "a rank failed"
fabric_stop

for r in $(seq 0 6); do
  grep -q '"ok":true' "$work/rank-$r.log" || fail "rank $r"
  grep -q '"wrong":0,' "$work/rank-$r.log" || fail "rank $r has wrong elements"
done
s3=$(tail -n 1 "$work/switch-S3.log")
value() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" <<< "$2" | head -n 1; }
for reason in bad_token unknown_job not_member bad_ingress bad_source frame.length grid.payload \
              ipv4.ihl ipv4.flags_fragment ttl_expired; do
  n=$(value "$reason" "$s3")
  [ -n "$n" ] && [ "$n" -gt 0 ] || fail "S3 counted no drops as $reason"
done
[ "$(value foreign_drops "$s3")" -gt 0 ] || fail "S3's links dropped nothing from the stranger"
# S3 aggregates W5 and W6: each chunk of theirs once, nothing else. Per
# iteration: int32 and float32 chunks, and the float's probes.
chunks=$(( (count + elements - 1) / elements ))
# And Create's fence (docs/worker.md, "One run per job"): one int32 chunk each.
expected=$(( 2 * iterations * (3 * chunks) + 2 ))
[ "$(value data "$s3")" -eq "$expected" ] || fail "S3 aggregated $(value data "$s3"), not $expected"
root=$(tail -n 1 "$work/root.log")
[ "$(value foreign "$root")" -gt 0 ] || fail "the root dropped no forged partial"
victim=$(sed -n 's/.*"victim_rank":\([0-9]*\).*/\1/p' "$work/attack.json")
[ "$(value foreign "$(cat "$work/rank-$victim.log")")" -gt 0 ] ||
  fail "rank $victim dropped no forged result"
# The token is in the store, private to its owner, and in no log or report.
token=$(sed -n 's/.*"token": *\([0-9]*\).*/\1/p' "$work/store/grid/root" | head -n 1)
[ -n "$token" ] || fail "no token in the root's config"
[ "$(stat -c %a "$work/store/grid/root")" = 600 ] || fail "the root's config is not 0600"
hex=$(printf '%x' "$token")
if grep -l -i -E "(^|[^0-9a-f])($token|0x$hex|$hex)([^0-9a-f]|\$)" "$work"/*.log "$work"/*.json; then
  fail "a log or report prints the job's token"
fi
echo "attack_test: OK: $(cat "$work/attack.json")"
echo "attack_test: S3 drops: $(sed -n 's/.*"drops":\({[^}]*}\).*/\1/p' <<< "$s3"), foreign_drops $(value foreign_drops "$s3")"
