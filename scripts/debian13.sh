#!/usr/bin/env bash
# Builds and tests this clone on Debian 13 (trixie), from whatever Debian
# this machine runs: in a Debian 13 root made once with debootstrap and kept
# outside the clone, scripts/install-deps.sh installs Debian 13's packages
# (GCC 14, Abseil 20240722, DPDK 24.11, torch 2.6, ...), the project is built
# with its defaults (RelWithDebInfo, GRID_WERROR as given) and the release
# suite runs: `ctest -LE soak`, the torch tests with it (label torch, torch
# 2.6 there). Tests that need network namespaces or the P4 toolchain skip
# inside the root, saying why, as they do in any chroot.
#
#   scripts/debian13.sh [CTEST_ARGS...]     e.g. -L torch
#
# env: GRID_DEBIAN13_ROOT  where the root is kept (default /var/cache/grid/debian13;
#                          remove it to start again)
#      GRID_DEBIAN13_MIRROR the Debian mirror (default: the one apt uses here)
#      GRID_WERROR         ON makes warnings in GRID's own code errors (CI sets it)
#
# Needs root (debootstrap, chroot, mounts). The mounts live in a private
# mount namespace (unshare), so they end with the script however it ends.
# A run on a machine that has the root takes the build from where the last
# left it (ccache inside the root); docs/platforms.md has the timings.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
root=${GRID_DEBIAN13_ROOT:-/var/cache/grid/debian13}
marker=$root/.grid-debian13-root
say() { echo "debian13: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { say "needs root: debootstrap, chroot and mounts"; exit 1; }
. scripts/debian.sh
[ -n "$debian_codename" ] || { say "not a Debian machine (no VERSION_CODENAME in /etc/os-release)"; exit 1; }

# The mirror apt already uses here (deb822 .sources or one-line lists),
# not its security suite.
mirror=${GRID_DEBIAN13_MIRROR:-$(
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v '^\s*#' | grep -o 'https\?://[^ ]*' | grep -v -- '-security' | head -1 || true)}
mirror=${mirror:-http://deb.debian.org/debian}

start=$SECONDS
if [ ! -f "$marker" ]; then
  command -v debootstrap > /dev/null || {
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap > /dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap; }
  }
  # Into a side folder, moved into place when whole: an interrupted run
  # leaves nothing that looks like a root.
  say "making a Debian 13 root in $root from $mirror (once; about 2 minutes)"
  rm -rf "$root.partial"
  mkdir -p "$(dirname "$root")"
  debootstrap --variant=minbase trixie "$root.partial" "$mirror" > "$root.partial.log" 2>&1 ||
    { tail -20 "$root.partial.log" >&2; say "debootstrap failed (log: $root.partial.log)"; exit 1; }
  touch "$root.partial/.grid-debian13-root"
  rm -rf "$root"
  mv "$root.partial" "$root"
  rm -f "$root.partial.log"
  say "root made in $((SECONDS - start)) s"
else
  say "using the Debian 13 root in $root"
fi

# What a name lookup and apt need inside: this machine's resolver and
# hosts (a root without /etc/hosts cannot resolve its own host name, and
# mpirun then waits on DNS).
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp /etc/hosts "$root/etc/hosts"

# P4Runtime's .proto files, where this machine has them beside the clone:
# the build's default (../shared/p4tools/proto) then resolves inside too.
protos=$src/../shared/p4tools/proto
[ -d "$protos" ] || protos=

werror=${GRID_WERROR:-OFF}
ctest_args=$(printf '%q ' "$@")
inside=$(cat <<EOF
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
cd /grid/src
t=\$SECONDS
scripts/install-deps.sh
# ccache keeps the objects in the root: a later run on this machine
# compiles only what changed, whatever the clone's file times.
dpkg-query -W -f='\${Status}' ccache 2>/dev/null | grep -q 'ok installed' ||
  apt-get install -y -qq --no-install-recommends ccache > /dev/null
export CCACHE_DIR=/grid/ccache
echo "debian13: packages in \$((SECONDS - t)) s; \$(gcc --version | head -1), \$(/usr/bin/python3 -c 'import torch; print("torch", torch.__version__)')"
t=\$SECONDS
cmake -S /grid/src -B /grid/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DGRID_WERROR=$werror
cmake --build /grid/build -j \$(nproc)
echo "debian13: built in \$((SECONDS - t)) s"
t=\$SECONDS
ctest --test-dir /grid/build --output-on-failure -j \$(nproc) -LE soak $ctest_args
echo "debian13: tests in \$((SECONDS - t)) s"
EOF
)

# In a mount namespace of its own: /proc, /sys, /dev and the clone appear
# inside the root for this run only.
unshare --mount --propagation private bash -euo pipefail -c '
  root=$1 src=$2 protos=$3 inside=$4
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mkdir -p "$root/grid/src" "$root/grid/build" "$root/grid/ccache"
  mount --bind "$src" "$root/grid/src"
  if [ -n "$protos" ]; then
    mkdir -p "$root/grid/shared/p4tools/proto"
    mount --bind "$protos" "$root/grid/shared/p4tools/proto"
  fi
  exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    chroot "$root" bash -c "$inside"
' debian13 "$root" "$src" "$protos" "$inside"
say "passed in $((SECONDS - start)) s"
