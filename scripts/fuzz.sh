#!/usr/bin/env bash
# Longer fuzzing: every libFuzzer target (tests/fuzz/) for MINUTES each, two
# at a time, on the ASan+UBSan build. Each starts from its kept corpus
# (tests/fuzz/corpus/NAME/) and the valid inputs grid_fuzz_seeds writes;
# afterwards what it found is merged back into the kept corpus, minimized
# (libFuzzer -merge=1: only inputs that add coverage), so the next run and
# CTest's short runs start where this one ended. A crash leaves its input in
# build/asan/fuzz-runs/NAME/ and fails the script; once fixed, copy it into
# tests/fuzz/regressions/NAME/, which every run (and CTest) replays.
#
#   scripts/fuzz.sh [MINUTES] [BUILD_DIR]     (MINUTES: 10, BUILD_DIR: build/asan)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/debian.sh  # debian_clang
minutes=${1:-10}
seconds=${FUZZ_SECONDS:-$((minutes * 60))}  # FUZZ_SECONDS: a quick try of the script
build=${2:-build/asan}
case $build in /*) ;; *) build=$PWD/$build ;; esac
# FUZZERS: a subset, e.g. "wire_fuzz root_fuzz".
read -r -a fuzzers <<< "${FUZZERS:-wire_fuzz topology_fuzz plan_fuzz pipeline_fuzz \
switch_config_fuzz host_config_fuzz root_fuzz p4_entries_fuzz node_status_fuzz \
fault_schedule_fuzz}"

if [ ! -x "$build/tests/fuzz/grid_fuzz_seeds" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-$debian_clang -DCMAKE_CXX_COMPILER=clang++-$debian_clang \
    -DGRID_SANITIZE=address,undefined -DGRID_FUZZ=ON
fi
cmake --build "$build" -j "$(nproc)" --target grid_fuzz_seeds "${fuzzers[@]}" || exit 1

root=$PWD
bin=$build/tests/fuzz
runs=$build/fuzz-runs
for name in "${fuzzers[@]}"; do rm -rf "${runs:?}/$name"; done
rm -rf "$runs/seeds"
mkdir -p "$runs"
"$bin/grid_fuzz_seeds" "$runs/seeds"

# The seed kind and -max_len of each target, as tests/fuzz/CMakeLists.txt.
declare -A kind=([wire_fuzz]=wire [topology_fuzz]=topology [plan_fuzz]=plan
  [pipeline_fuzz]=pipeline [switch_config_fuzz]=switch [host_config_fuzz]=host [root_fuzz]=root
  [p4_entries_fuzz]=p4_entries [node_status_fuzz]=node [fault_schedule_fuzz]=fault_schedule)
declare -A max_len=([wire_fuzz]=4300 [topology_fuzz]=8192 [plan_fuzz]=16384
  [pipeline_fuzz]=4300 [switch_config_fuzz]=16384 [host_config_fuzz]=8192 [root_fuzz]=4300
  [p4_entries_fuzz]=16384 [node_status_fuzz]=4096 [fault_schedule_fuzz]=1024)

run() {  # run NAME: fuzz, then merge what it found into the kept corpus
  local name=$1 dir=$runs/$1 kept=$root/tests/fuzz/corpus/$1 status=0
  local regressions=$root/tests/fuzz/regressions/$1
  mkdir -p "$dir/new" "$dir/merged" "$kept"
  [ -d "$regressions" ] || regressions=
  "$bin/$name" -max_total_time="$seconds" -max_len="${max_len[$name]}" \
    -print_final_stats=1 -artifact_prefix="$dir/" "$dir/new" "$kept" "$runs/seeds/${kind[$name]}" \
    ${regressions:+"$regressions"} > "$dir/fuzz.log" 2>&1 || status=1
  "$bin/$name" -merge=1 -max_len="${max_len[$name]}" "$dir/merged" "$kept" "$dir/new" \
    "$runs/seeds/${kind[$name]}" > "$dir/merge.log" 2>&1 || status=1
  if [ "$status" -eq 0 ]; then
    rm -rf "$kept" && mv "$dir/merged" "$kept"
  fi
  return $status
}

status=0
for ((i = 0; i < ${#fuzzers[@]}; i += 2)); do
  pids=()
  for name in "${fuzzers[@]:i:2}"; do
    run "$name" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
done

echo "| fuzzer | seconds | executions | exec/s | coverage (edges) | corpus kept | crashes |"
echo "|---|---|---|---|---|---|---|"
for name in "${fuzzers[@]}"; do
  log=$runs/$name/fuzz.log
  field() { sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$log" | tail -1; }
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  crashes=$(ls "$runs/$name" | grep -c -E '^(crash|leak|timeout|oom)-' || true)
  echo "| $name | $seconds | $(field number_of_executed_units) | $(field average_exec_per_sec) |" \
    "${cov:-?} | $(ls "tests/fuzz/corpus/$name" | wc -l) | $crashes |"
  [ "$crashes" -eq 0 ] || status=1
done
exit $status
