# Shell helpers for a fabric of network namespaces and veth pairs, as
# grid-controller --netns=PREFIX describes it in its store (tools/emulation.h):
#   grid/netns/links   "IF NS IF NS" per veth pair ("-": this namespace)
#   grid/netns/hosts   "NS MAC IP GATEWAY_MAC" per host
#   grid/netns/switch/<name>   the namespace a switch runs in ("-": this one)
# Every host gets a namespace with eth0; grid-switch's ports are in a
# namespace per switch, simple_switch's stay here. Sourced by
# scripts/bmv2_testbed.sh. Needs root (CAP_NET_ADMIN) and iproute2.
#
#   netns_probe                          whether namespaces and veths can be made here
#   netns_up STORE_DIR udp|af_packet     create namespaces and veths, configure hosts
#   netns_down PREFIX                    delete them (idempotent)
#   netns_loss IF NS PERCENT             random loss of what IF (in NS, "-": here) sends

netns_run() {  # NS COMMAND...: in namespace NS, or here for "-"
  local ns=$1
  shift
  if [ "$ns" = "-" ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

# Root is not always enough: in a chroot or a container without mount
# propagation `ip netns add` fails ("mount --make-rslave /"), and a kernel
# without veth refuses the pairs. Makes one namespace with a veth pair in
# it, runs a command there and removes it; on failure prints what ip said
# and returns 1, so callers skip (exit 77) with the reason instead of
# failing midway.
netns_probe() {
  local ns=gridprobe$$ err
  if ! err=$(ip netns add "$ns" 2>&1); then
    echo "ip netns add: ${err:-failed}"
    return 1
  fi
  if ! err=$(ip -n "$ns" link add gprobea type veth peer name gprobeb 2>&1); then
    ip netns del "$ns" 2>/dev/null
    echo "ip link add type veth: ${err:-failed}"
    return 1
  fi
  if ! err=$(ip netns exec "$ns" true 2>&1); then
    ip netns del "$ns" 2>/dev/null
    echo "ip netns exec: ${err:-failed}"
    return 1
  fi
  ip netns del "$ns" 2>/dev/null
  return 0
}

netns_up() {
  local store=$1 transport=$2 a an b bn ns mac ip gw pair=0
  # Every namespace named in hosts or links (grid-switch's have their own).
  for ns in $( (awk '{print $1}' "$store/grid/netns/hosts"
                awk '{print $2; print $4}' "$store/grid/netns/links") | grep -v '^-$' | sort -u); do
    ip netns add "$ns" || return 1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$ns" link set lo up
  done
  while read -r a an b bn; do
    [ -n "$a" ] || continue
    # Created here under temporary names, then each end moved and renamed.
    pair=$((pair + 1))
    ip link add "gvtmpa$pair" type veth peer name "gvtmpb$pair" || return 1
    local end tmp name where
    for end in "gvtmpa$pair:$a:$an" "gvtmpb$pair:$b:$bn"; do
      IFS=: read -r tmp name where <<< "$end"
      if [ "$where" != "-" ]; then ip link set "$tmp" netns "$where" || return 1; fi
      netns_run "$where" ip link set "$tmp" name "$name" || return 1
      netns_run "$where" sysctl -qw "net.ipv6.conf.$name.disable_ipv6=1" 2>/dev/null
      netns_run "$where" ip link set "$name" up || return 1
    done
  done < "$store/grid/netns/links"
  while read -r ns mac ip gw; do
    [ -n "$ns" ] || continue
    ip -n "$ns" link set eth0 address "$mac" || return 1
    if [ "$transport" = udp ]; then
      # Every destination through one gateway whose MAC is the host's switch.
      ip -n "$ns" addr add "$ip/32" dev eth0
      ip -n "$ns" route add 10.255.255.254 dev eth0
      ip -n "$ns" neigh add 10.255.255.254 lladdr "$gw" dev eth0 nud permanent
      ip -n "$ns" route add default via 10.255.255.254 dev eth0
    fi
  done < "$store/grid/netns/hosts"
}

netns_down() {
  local prefix=$1 ns link
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-"); do
    ip netns del "$ns"
  done
  for link in $(nft list tables netdev 2>/dev/null | awk '{print $3}' | grep "^loss_$prefix"); do
    nft delete table netdev "$link"
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
                grep -E "^${prefix}[0-9]+p[0-9]+$"); do
    ip link del "$link" 2>/dev/null
  done
  return 0
}

# Loss is nftables' random drop at the sending interface's egress hook. tc
# netem would do, but these machines' kernels lack it (CONFIG_NET_SCH_NETEM),
# and a drop at the receiving end's ingress hook comes after the packet
# sockets that BMv2 and DPDK's af_packet read, so it would not be seen.
netns_loss() {
  local dev=$1 ns=$2 percent=$3
  # A table per device, deleted with the fabric (netns_down).
  netns_run "$ns" nft add table netdev "loss_$dev" || return 1
  netns_run "$ns" nft add chain netdev "loss_$dev" egress \
    "{ type filter hook egress device $dev priority 0; }" || return 1
  netns_run "$ns" nft add rule netdev "loss_$dev" egress numgen random mod 1000 \
    lt $((percent * 10)) drop
}
