#!/usr/bin/env bash
# The torch backend under another machine's torch: one with torch 2.x (a pip
# torch with CUDA, say) and a compiler and CMake, but no package manager and
# no network, such as a GPU machine lent for a check. It builds GRID there
# without DPDK against the torch of its python3, starts a UDP fabric on its
# cores (grid-controller, three grid-switch, grid-root) and runs the torch
# checks of tests/torch/torch_test.sh on CPU tensors, 4 ranks under torchrun:
# dist_check.py, then DDP (the MLP; the CNN with BatchNorm, no_sync and
# unused parameters), a compiled model and FSDP, each against Gloo. Every
# log goes into OUT; the summary ends the output.
#
#   scripts/device_check.sh OUT [DEPS]
#
# DEPS: the Debian libraries GRID builds against (Abseil, Clp, nlohmann-json),
# gathered beforehand on a Debian machine by scripts/device_deps.sh
# (default .device-deps, where present). A machine that has them installed
# needs none. CUDA tensors are not checked: the backend serves the CPU.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/device_check.sh OUT [DEPS]}
deps=${2:-.device-deps}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${GRID_TORCH_PYTHON:-$(command -v python3)}
build=${GRID_DEVICE_BUILD:-build/device}
summary=$out/summary.txt
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

{
  echo "date: $(date -u)"
  echo "python: $py ($("$py" --version 2>&1))"
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1
  nvidia-smi -L 2>&1 | head -4
  echo "cores: $(nproc)"
  (c++ --version || g++ --version) 2>&1 | head -1
  cmake --version | head -1
} > "$out/environment.txt" 2>&1
cat "$out/environment.txt"

cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRID_WITH_DPDK=OFF -DGRID_WITH_VERBS=OFF
            -DGRID_WITH_NS3=OFF -DGRID_WITH_P4RUNTIME=OFF -DGRID_BUILD_TESTS=OFF
            -DGRID_BUILD_BENCHMARKS=OFF -DGRID_BUILD_EXAMPLES=OFF -DGRID_WITH_TORCH=ON
            -DGRID_TORCH_PYTHON="$py")
command -v ninja > /dev/null || cmake_args[1]="Unix Makefiles"
if [ -d "$deps/usr" ]; then
  d=$(cd "$deps" && pwd)
  lib=$d/usr/lib/x86_64-linux-gnu
  cmake_args+=(-Dabsl_DIR="$lib/cmake/absl" -Dnlohmann_json_DIR="$d/usr/share/cmake/nlohmann_json")
  # Clp is found through pkg-config; its .pc files say /usr, which the
  # sysroot makes DEPS/usr.
  export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$d
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  note "device_check: libraries from $deps"
fi

start=$SECONDS
if ! cmake -S . -B "$build" "${cmake_args[@]}" > "$out/configure.log" 2>&1; then
  tail -30 "$out/configure.log"
  note "device_check: FAILED: configure (configure.log)"
  exit 1
fi
grep 'GRID:' "$out/configure.log"
if ! cmake --build "$build" -j "$(nproc)" > "$out/build.log" 2>&1; then
  grep -m 20 -B2 -A6 'error' "$out/build.log"
  note "device_check: FAILED: build (build.log)"
  exit 1
fi
note "device_check: built in $((SECONDS - start)) s"

status=0
for check in dist ddp ddp_cnn compile fsdp; do
  t=$SECONDS
  FABRIC_LOGS="$out/$check" GRID_TORCH_PYTHON="$py" \
    tests/torch/torch_test.sh "$build/tools" "$build/python" "$check" > "$out/$check.log" 2>&1
  rc=$?
  case $rc in
    0) note "device_check: $check passed in $((SECONDS - t)) s: $(grep -h 'against' "$out/$check.log" | tail -1)" ;;
    77) note "device_check: $check skipped: $(tail -1 "$out/$check.log")" ;;
    *) note "device_check: $check FAILED in $((SECONDS - t)) s (rc $rc): $(grep -m1 FAIL "$out/$check.log")"
       tail -40 "$out/$check.log"
       status=1 ;;
  esac
done
note "device_check: $([ $status = 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s, logs in $out"
exit $status
