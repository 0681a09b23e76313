#!/usr/bin/env bash
# The build without DPDK (GRID_WITH_DPDK=OFF), as a machine without
# libdpdk-dev has it: the library, the tools (grid-switch with UDP ports
# only), the PyTorch backend and the tests, which run over kernel UDP and
# skip, saying why, where they need DPDK (memif, af_packet). Not part of
# scripts/test.sh: a third build does not fit CI's time on 2 cores.
#
#   scripts/test_nodpdk.sh [CTEST_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=build/udp-only  # a path without "dpdk": install_consumer looks for DPDK flags by name
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRID_WITH_DPDK=OFF \
  -DGRID_WERROR="${GRID_WERROR:-OFF}"
cmake --build "$build" -j "$(nproc)"
# Nothing in it may link DPDK.
if ldd "$build/lib/libgrid.so" "$build/tools/grid-switch" | grep -q librte; then
  echo "test_nodpdk: a binary of the build without DPDK links DPDK" >&2
  exit 1
fi
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -LE soak "$@"
