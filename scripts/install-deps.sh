#!/usr/bin/env bash
# Installs, with apt, whatever the build, the tests and the demo need on Debian
# 12 (bookworm) or 13 (trixie) and is not installed yet. Idempotent: with
# everything present it only checks.
set -euo pipefail

# The release's codename picks the few names that differ between the two.
. "$(dirname "$0")/debian.sh"
case $debian_codename in
  bookworm | trixie | "") ;;
  *) echo "install-deps: Debian '$debian_codename' is untried (12 bookworm and 13 trixie are); using trixie's names" >&2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config git
  clang-$debian_clang libclang-rt-$debian_clang-dev    # sanitizer and libFuzzer builds (scripts/test.sh)
  libdpdk-dev                            # transports, grid-switch
  libabsl-dev                            # Status, StatusOr, Span, strings
  libgtest-dev libgmock-dev libbenchmark-dev
  coinor-libclp-dev                      # the GRID planner's LP
  nlohmann-json3-dev                     # topology and plan files
  libibverbs-dev                         # the optional RDMA transport
  gnuplot-nox                            # grid-sim plots
  graphviz                               # docs/datapath.svg from its source (scripts/docs.sh)
  iproute2                               # veth pairs for the af_packet test and netns fabrics
  nftables                               # link loss on netns fabrics (no netem in these kernels)
  ethtool                                # TCP offloads off on netns hosts (scripts/netns_perf.sh)
  cpp                                    # the P4 compile tests preprocess with it
  python3                                # scripts/check_layering.py (CTest layering)
  python3-torch libtorch-dev pybind11-dev python3-dev  # the PyTorch backend (bindings/torch)
  python3-setuptools                     # torch.compile's C++ code generation (torch 2.x tests)
  libgloo-dev                            # Gloo's ring beside GRID in bench/allreduce_perf
  libopenmpi-dev openmpi-bin             # MPI_Allreduce beside GRID (scripts/netns_perf.sh)
  libns3-dev                             # grid-ns3, the packet-level simulator (sim/)
  time                                   # peak memory in scripts/ns3_large.sh
  tshark                                 # the Wireshark dissector's test (tools/wireshark)
  prometheus                             # promtool, which checks grid-switch/grid-root --metrics
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # the P4Runtime client (p4runtime/)
)
# The P4 toolchain, where it is at hand (../shared/p4tools, or P4TOOLS=DIR):
# the Debian runtime packages its p4c and BMv2 binaries need. They were built
# on Debian 12 and name its packages, so other releases leave them out.
p4tools=${P4TOOLS:-$(dirname "$0")/../../shared/p4tools}
if [ -f "$p4tools/bmv2-runtime-packages.txt" ] && [ "$debian_codename" = bookworm ]; then
  mapfile -t p4_packages < <(grep -v '^\s*$' "$p4tools/bmv2-runtime-packages.txt")
  packages+=("${p4_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
