#!/usr/bin/env bash
# Where network namespaces cannot be made (a chroot: `ip netns add` fails
# on "mount --make-rslave /"), the netns scripts skip with the reason
# (exit 77) instead of failing midway (issue 40). An `ip` on PATH that
# fails as a chroot's does stands in for such a machine.
#
#   tests/integration/netns_skip_test.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
build=$1
[ "$(id -u)" -eq 0 ] || { echo "skipped: netns_perf.sh skips without root before it probes"; exit 77; }
command -v ethtool >/dev/null || { echo "skipped: netns_perf.sh needs ethtool before it probes"; exit 77; }

fake=$(mktemp -d /tmp/grid-netns-skip.XXXXXX)
trap 'rm -rf "$fake"' EXIT
cat > "$fake/ip" <<'IP'
#!/bin/sh
case "$1 $2" in
  "netns add")
    echo 'mount --make-rslave /: Permission denied' >&2
    exit 1 ;;
  "netns list") exit 0 ;;
esac
echo "fake ip: unexpected: $*" >&2
exit 1
IP
chmod +x "$fake/ip"

PATH="$fake:$PATH" GLOO=0 MPI=0 scripts/netns_perf.sh "$build" > "$fake/out" 2>&1
rc=$?
cat "$fake/out"
if [ $rc -ne 77 ]; then
  echo "FAIL: netns_perf.sh exited $rc where namespaces cannot be made, not 77 (skip)"
  exit 1
fi
if ! grep -q "no network namespaces here: ip netns add: mount --make-rslave /" "$fake/out"; then
  echo "FAIL: the skip does not say why"
  exit 1
fi
echo "PASS: skipped, with the reason"
