#!/bin/sh
# mpirun's remote shell on a netns fabric (plm_rsh_agent): "HOST COMMAND..."
# runs COMMAND in the namespace whose host has address HOST, as listed in
# $GRID_NETNS_HOSTS (a store's grid/netns/hosts: "NS MAC IP GATEWAY_MAC").
# So OpenMPI's daemons, and the ranks they start, run on the emulated hosts
# and talk over the emulated links. scripts/netns_perf.sh uses it.
#
# Each host also gets its own hostname (a UTS namespace): OpenMPI names its
# session directories after the hostname, and daemons that share one race to
# create the same directories ("mkdir: File exists") and fail to start.
host=$1
shift
ns=$(awk -v h="$host" '$3 == h { print $1 }' "${GRID_NETNS_HOSTS:?}")
[ -n "$ns" ] || { echo "netns_rsh: no host $host in $GRID_NETNS_HOSTS" >&2; exit 255; }
exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$ns" "$*"
