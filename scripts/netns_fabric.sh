# Shell helpers for a fabric of network namespaces and veth pairs, as
# grid-controller --netns=PREFIX describes it in its store (tools/emulation.h):
#   grid/netns/links   "IF NS IF NS" per veth pair ("-": this namespace)
#   grid/netns/hosts   "NS MAC IP GATEWAY_MAC" per host
#   grid/netns/switch/<name>   the namespace a switch runs in ("-": this one)
# Every host gets a namespace with eth0; grid-switch's ports are in a
# namespace per switch, simple_switch's stay here. Sourced by
# scripts/bmv2_testbed.sh, netns_perf.sh and torch_ddp_netns.sh. Needs root
# (CAP_NET_ADMIN) and iproute2.
#
#   netns_probe                          whether namespaces and veths can be made here
#   netns_up STORE_DIR udp|af_packet     create namespaces and veths, configure hosts
#   netns_down PREFIX                    delete them (idempotent)
#   netns_loss IF NS PERCENT             random loss of what IF (in NS, "-": here) sends
#   netns_grid_up / netns_grid_down      a GRID job's switches and root on it (below)

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

# A GRID job on grid-switch processes in namespaces, as netns_perf.sh and
# torch_ddp_netns.sh run it: grid-controller plans it (the testbed topology,
# the ranks on kernel UDP) into WORK/store, the namespaces come up, every
# link is shaped to GBPS (SHAPE switch: by grid-switch, which marks
# CONGESTION from its queues; tc: tbf on both ends of every veth, and
# grid-switch sees no queue), the hosts' TCP offloads are turned off (the
# switches read whole frames of at most an MTU), and the switches and the
# root start. Their pids go to netns_pids; logs to WORK. Returns 77 where
# the kernel has no tbf, 1 on any other failure (said on stderr).
#   netns_grid_up TOOLS WORK PREFIX JOB GBPS SHAPE [grid-controller flags...]
#   netns_grid_down PREFIX      stop what netns_grid_up started, remove it
#   netns_rank_ns WORK RANK     the namespace of rank RANK's host
#   netns_rank_ip WORK RANK     its address
netns_pids=()
netns_grid_up() {
  local tools=$1 work=$2 prefix=$3 job=$4 gbps=$5 shape=$6 shaping=()
  shift 6
  case $shape in
    switch) shaping=(--link-gbps="$gbps") ;;
    tc) ;;
    *) echo "netns: SHAPE is switch or tc, not $shape" >&2; return 1 ;;
  esac
  "$tools/grid-controller" --topology=testbed --store="file:$work/store" --job-id="$job" \
    --switch=grid --netns="$prefix" --host-transport=udp --eal-memory-mb=64 "${shaping[@]}" \
    "$@" > "$work/controller.log" 2>&1 || { cat "$work/controller.log" >&2; return 1; }
  netns_up "$work/store" udp > "$work/netns.log" 2>&1 || { cat "$work/netns.log" >&2; return 1; }
  local a an b bn end dev ns burst
  if [ "$shape" = tc ]; then
    # Each direction of each link at GBPS, with a burst of 1 ms of it (at
    # least 16 KiB).
    burst=$(awk -v g="$gbps" 'BEGIN { b = g * 1e9 / 8 / 1000; print (b < 16384) ? 16384 : int(b) }')
    while read -r a an b bn; do
      [ -n "$a" ] || continue
      for end in "$a:$an" "$b:$bn"; do
        IFS=: read -r dev ns <<< "$end"
        netns_run "$ns" tc qdisc add dev "$dev" root tbf rate "${gbps}gbit" burst "$burst" \
          latency 50ms || { echo "netns: tc tbf on $dev ($ns) failed: no tbf here?" >&2; return 77; }
      done
    done < "$work/store/grid/netns/links"
  fi
  # The hosts' kernels would hand the switches TCP segments of up to 64 KiB
  # with their checksums left to the NIC.
  while read -r ns _; do
    [ -n "$ns" ] || continue
    ip netns exec "$ns" ethtool -K eth0 tx off tso off gso off gro off >/dev/null 2>&1 ||
      { echo "netns: ethtool -K in $ns failed" >&2; return 1; }
  done < "$work/store/grid/netns/hosts"
  # Each switch runs in its own namespace (tools/emulation.h says why). Not
  # through netns_run: $! must be grid-switch's pid (ip netns exec execs
  # it), not a subshell's, for netns_grid_down to stop it.
  local s pid in_ns ports
  for s in $(ls "$work/store/grid/switch"); do
    mapfile -t ports < "$work/store/grid/switch-ports/$s"
    ns=$(cat "$work/store/grid/netns/switch/$s")
    in_ns=()
    [ "$ns" = - ] || in_ns=(ip netns exec "$ns")
    "${in_ns[@]}" "$tools/grid-switch" "${ports[@]}" --store="file:$work/store" --name="$s" \
      > "$work/switch-$s.log" 2>&1 &
    pid=$!
    sleep 1
    kill -0 "$pid" 2>/dev/null || {
      echo "netns: switch $s did not start: $(grep -m1 -i -E 'could not|fail' "$work/switch-$s.log")" >&2
      return 1
    }
    netns_pids+=("$pid")
  done
  ip netns exec "$(cat "$work/store/grid/netns/root")" "$tools/grid-root" \
    --store="file:$work/store" > "$work/root.log" 2>&1 &
  netns_pids+=($!)
}

netns_grid_down() {
  local prefix=$1 p i
  for p in "${netns_pids[@]}"; do kill -INT "$p" 2>/dev/null; done
  # Up to 5 s to stop on their own (a node's last status says "end"); then
  # killed. The shell's notices of killed jobs go nowhere.
  for i in $(seq 50); do
    for p in "${netns_pids[@]}"; do kill -0 "$p" 2>/dev/null && break; done
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  { for p in "${netns_pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p"; done; } 2>/dev/null
  netns_pids=()
  netns_down "$prefix"
}

netns_rank_ns() { cat "$1/store/grid/netns/rank/$2"; }
netns_rank_ip() {
  awk -v ns="$(netns_rank_ns "$1" "$2")" '$1 == ns { print $3 }' "$1/store/grid/netns/hosts"
}
