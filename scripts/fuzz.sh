#!/usr/bin/env bash
# Longer fuzzing: every libFuzzer target (tests/fuzz/) for MINUTES each, two
# at a time, on the ASan+UBSan build. Each starts from its kept corpus
# (tests/fuzz/corpus/NAME/) and the valid inputs grid_fuzz_seeds writes;
# afterwards what it found is merged back into the kept corpus, minimized
# (libFuzzer -merge=1: only inputs that add coverage), so the next run and
# CTest's short runs start where this one ended. A crash leaves its input in
# build/fuzz-runs/NAME/ and fails the script.
#
#   scripts/fuzz.sh [MINUTES] [BUILD_DIR]     (MINUTES: 10, BUILD_DIR: build/asan)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
build=${2:-build/asan}
fuzzers=(wire_fuzz topology_fuzz plan_fuzz pipeline_fuzz switch_config_fuzz host_config_fuzz
  root_fuzz)

if [ ! -x "$build/tests/fuzz/grid_fuzz_seeds" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DGRID_SANITIZE=address,undefined -DGRID_FUZZ=ON
fi
cmake --build "$build" -j "$(nproc)" --target grid_fuzz_seeds "${fuzzers[@]}"

runs=$build/fuzz-runs
rm -rf "$runs"
mkdir -p "$runs"
"$build/tests/fuzz/grid_fuzz_seeds" "$runs/seeds"

# The seed kind and -max_len of each target, as tests/fuzz/CMakeLists.txt.
declare -A kind=([wire_fuzz]=wire [topology_fuzz]=topology [plan_fuzz]=plan
  [pipeline_fuzz]=pipeline [switch_config_fuzz]=switch [host_config_fuzz]=host [root_fuzz]=root)
declare -A max_len=([wire_fuzz]=4300 [topology_fuzz]=8192 [plan_fuzz]=16384
  [pipeline_fuzz]=4300 [switch_config_fuzz]=16384 [host_config_fuzz]=8192 [root_fuzz]=4300)

run() {  # run NAME: fuzz, then merge into the kept corpus
  local name=$1 dir=$runs/$1 kept=tests/fuzz/corpus/$1
  mkdir -p "$dir/new" "$kept"
  (cd "$dir" && "$OLDPWD/$build/tests/fuzz/$name" -max_total_time=$((minutes * 60)) \
    -max_len="${max_len[$name]}" -print_final_stats=1 -artifact_prefix="$dir/" \
    new "$OLDPWD/$kept" "$OLDPWD/$runs/seeds/${kind[$name]}") > "$dir/fuzz.log" 2>&1
  local status=$?
  mkdir -p "$dir/merged"
  "$build/tests/fuzz/$name" -merge=1 -max_len="${max_len[$name]}" "$dir/merged" "$kept" \
    "$dir/new" "$runs/seeds/${kind[$name]}" > "$dir/merge.log" 2>&1 || status=1
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

echo "| fuzzer | minutes | executions | exec/s | coverage (edges) | corpus kept | crashes |"
echo "|---|---|---|---|---|---|---|"
for name in "${fuzzers[@]}"; do
  log=$runs/$name/fuzz.log
  stat() { sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$log" | tail -1; }
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  crashes=$(ls "$runs/$name" | grep -c -E '^(crash|leak|timeout|oom)-' || true)
  echo "| $name | $minutes | $(stat number_of_executed_units) | $(stat average_exec_per_sec) |" \
    "${cov:-?} | $(ls "tests/fuzz/corpus/$name" | wc -l) | $crashes |"
  [ "$crashes" -eq 0 ] || status=1
done
exit $status
