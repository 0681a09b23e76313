#include "tools/emulation.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "transport/faults.h"

namespace grid::tools {
namespace {

using topology::NodeId;

// Every host's port on an emulated fabric (GRID's first UDP port).
constexpr int kHostPort = wire::kUdpPortBase;

// `lcores` EAL lcores, all free to run on either of the machine's first two
// CPUs.
std::vector<std::string> Eal(int memory_mb, const std::string& prefix, int lcores = 1) {
  return {"--no-huge",
          "--no-pci",
          "-m",
          std::to_string(memory_mb),
          "--no-shconf",
          "--no-telemetry",
          "--log-level=error",
          lcores == 1 ? std::string("--lcores=0@(0-1)")
                      : absl::StrFormat("--lcores=(0-%d)@(0-1)", lcores - 1),
          "--file-prefix=" + prefix};
}

// " -- loss=P dup=P ... seed=N" for a host's DPDK transport.
std::string DpdkFaults(const std::string& impairment, int seed) {
  if (impairment.empty()) return "";
  std::string out = " --";
  for (absl::string_view kv : absl::StrSplit(impairment, ',')) absl::StrAppend(&out, " ", kv);
  return absl::StrCat(out, " seed=", seed);
}

// The --impair and --rate-scale lines of switch `node`'s grid-switch:
// faults on every port, and each port's rate (link_gbps, or its link's rate
// times the scale).
std::string SwitchShaping(const Fabric& f, const EmulationOptions& o, NodeId node) {
  std::string lines;
  const auto adjacent = f.topology.neighbors(node);
  for (size_t p = 0; p < adjacent.size(); ++p) {
    std::string s = o.impairment;
    std::string gbps = o.link_gbps;
    if (gbps.empty() && o.scale > 0) {
      gbps = absl::StrFormat("%.9g", f.topology.ArcGbps(adjacent[p].arc) * o.scale);
    }
    if (!gbps.empty()) s += (s.empty() ? "gbps=" : ",gbps=") + gbps;
    if (!s.empty()) absl::StrAppend(&lines, "--impair=", p, ":", s, "\n");
  }
  if (o.scale > 0) absl::StrAppend(&lines, absl::StrFormat("--rate-scale=%.9g\n", o.scale));
  return lines;
}

// The switches in node order, with their index (BMv2 thrift ports).
std::vector<std::pair<NodeId, const sw::SwitchConfig*>> Switches(const Fabric& f) {
  std::vector<std::pair<NodeId, const sw::SwitchConfig*>> out;
  for (const auto& [node, config] : f.switches) out.emplace_back(node, &config);
  return out;
}

// Puts `value` under the key of every rank's and the root's transport.
void HostTransports(const Fabric& f, Keys& keys,
                    const std::function<std::string(NodeId host, const std::string& name)>& spec) {
  for (const host_config::WorkerConfig& w : f.workers) {
    keys.emplace_back(absl::StrFormat("grid/transport/%d", w.rank),
                      spec(w.node, absl::StrFormat("gw%d-%d", f.job_id, w.rank)));
  }
  keys.emplace_back("grid/root-transport", spec(f.root.node, absl::StrFormat("gr%d", f.job_id)));
}

}  // namespace

Keys UdpEmulation(const Fabric& f, const EmulationOptions& o, int base, const std::string& host) {
  // Link i is two UDP sockets, one per direction's arc: the socket at `node`
  // for its port-th link is base + the arc out of `node`, the neighbour's is
  // base + the reverse arc.
  Keys keys;
  auto end = [&](NodeId node, size_t port) {
    const topology::ArcId arc = f.topology.neighbors(node)[port].arc;
    return std::pair{base + arc, base + topology::Topology::Reverse(arc)};
  };
  for (const auto& [node, c] : f.switches) {
    std::string lines;
    for (size_t p = 0; p < f.topology.neighbors(node).size(); ++p) {
      const auto [own, peer] = end(node, p);
      lines += absl::StrFormat("--udp-port=%s:%d@%s:%d\n", host, own, host, peer);
    }
    lines += SwitchShaping(f, o, node);
    keys.emplace_back("grid/switch-ports/" + c.name, lines);
  }
  auto link = [&](NodeId node) {
    const auto [own, peer] = end(node, 0);
    return absl::StrFormat("udp-link:bind=%s:%d,peer=%s:%d%s%s,seed=%d", host, own, host, peer,
                           o.impairment.empty() ? "" : ",", o.impairment, own);
  };
  HostTransports(f, keys, [&](NodeId node, const std::string&) { return link(node); });
  // Every host's link, the job's or not: a tool that plays another host
  // (grid-attack) takes one that no rank uses.
  for (NodeId h : f.topology.Hosts()) {
    keys.emplace_back("grid/host-transport/" + f.topology.node(h).name, link(h));
  }
  return keys;
}

Keys MemifEmulation(const Fabric& f, const EmulationOptions& o, const std::string& dir) {
  // One memif socket per link, DIR/link<i>.sock. A host is always the
  // client; between switches, the lower node id serves.
  Keys keys;
  auto vdev = [&](NodeId node, size_t port, int index) {
    const topology::Adjacent& adj = f.topology.neighbors(node)[port];
    const bool serves = f.topology.node(node).is_switch() &&
                        (!f.topology.node(adj.node).is_switch() || node < adj.node);
    return absl::StrFormat(
        "--vdev=net_memif%d,role=%s,id=0,socket=%s/link%d.sock,socket-abstract=no,bsize=8192",
        index, serves ? "server" : "client", dir, adj.arc / 2);
  };
  for (const auto& [node, c] : f.switches) {
    std::string lines;
    // N queue pairs: a receiving lcore and N pipeline lcores.
    const int lcores = o.memif_queues == 1 ? 1 : o.memif_queues + 1;
    for (const std::string& a :
         Eal(o.eal_memory_mb, absl::StrFormat("gs%d-%s", f.job_id, c.name), lcores)) {
      lines += a + "\n";
    }
    for (size_t p = 0; p < f.topology.neighbors(node).size(); ++p) {
      lines += vdev(node, p, static_cast<int>(p)) + "\n";
    }
    lines += "--\n";
    lines += SwitchShaping(f, o, node);
    keys.emplace_back("grid/switch-ports/" + c.name, lines);
  }
  HostTransports(f, keys, [&](NodeId node, const std::string& prefix) {
    std::string options = DpdkFaults(o.impairment, node + 1);
    if (o.memif_queues != 1) {
      options = absl::StrCat(options.empty() ? " --" : options, " queues=", o.memif_queues);
    }
    return absl::StrCat("dpdk:", absl::StrJoin(Eal(o.eal_memory_mb, prefix), " "), " ",
                        vdev(node, 0, 0), options);
  });
  return keys;
}

Keys NetnsEmulation(const Fabric& f, const EmulationOptions& o, const std::string& prefix,
                    const std::string& host_transport) {
  const topology::Topology& topo = f.topology;
  auto switch_if = [&](NodeId s, size_t port) {
    return absl::StrFormat("%s%dp%d", prefix, s, port);
  };
  auto node_ns = [&](NodeId n) { return absl::StrFormat("%s-%s", prefix, topo.node(n).name); };
  // grid-switch gets a namespace of its own: DPDK's af_packet driver names
  // its PACKET_FANOUT group after (pid XOR ifindex), and groups are per
  // namespace, so switches sharing one collide ("could not set
  // PACKET_FANOUT"). simple_switch's ports stay in the caller's namespace,
  // where simple_switch_CLI reaches its thrift port.
  // BMv2, programmed through its CLI or P4Runtime.
  const bool bmv2 = o.kind == SwitchKind::kBmv2 || o.kind == SwitchKind::kP4Runtime;
  auto switch_ns = [&](NodeId s) { return bmv2 ? std::string("-") : node_ns(s); };
  Keys keys;
  // The veth pairs: "IF NS IF NS", "-" for the caller's namespace.
  std::string links;
  for (NodeId s : topo.Switches()) {
    const auto adjacent = topo.neighbors(s);
    for (size_t p = 0; p < adjacent.size(); ++p) {
      const NodeId peer = adjacent[p].node;
      if (!topo.node(peer).is_switch()) {
        absl::StrAppend(&links, switch_if(s, p), " ", switch_ns(s), " eth0 ", node_ns(peer), "\n");
        continue;
      }
      if (peer < s) continue;  // listed from the lower id
      const auto back = topo.neighbors(peer);
      for (size_t q = 0; q < back.size(); ++q) {
        if (back[q].arc == topology::Topology::Reverse(adjacent[p].arc)) {
          absl::StrAppend(&links, switch_if(s, p), " ", switch_ns(s), " ", switch_if(peer, q), " ",
                          switch_ns(peer), "\n");
        }
      }
    }
  }
  keys.emplace_back("grid/netns/links", links);
  // Each host: "NS MAC IP GATEWAY_MAC", the gateway being its switch.
  std::string hosts;
  for (NodeId h : topo.Hosts()) {
    absl::StrAppend(&hosts, node_ns(h), " ", wire::MacToString(control::NodeMac(h)), " ",
                    wire::IpToString(control::NodeIp(h)), " ",
                    wire::MacToString(control::NodeMac(topo.neighbors(h)[0].node)), "\n");
  }
  keys.emplace_back("grid/netns/hosts", hosts);
  for (const host_config::WorkerConfig& w : f.workers) {
    keys.emplace_back(absl::StrFormat("grid/netns/rank/%d", w.rank), node_ns(w.node));
  }
  keys.emplace_back("grid/netns/root", node_ns(f.root.node));
  int index = 0;
  for (const auto& [node, c] : Switches(f)) {
    std::string lines;
    const size_t ports = topo.neighbors(node).size();
    if (bmv2) {
      absl::StrAppend(&lines, "--thrift-port\n", o.bmv2_thrift_base + index, "\n--device-id\n",
                      index, "\n");
      for (size_t p = 0; p < ports; ++p)
        absl::StrAppend(&lines, "-i\n", p, "@", switch_if(node, p), "\n");
    } else {
      for (const std::string& a :
           Eal(o.eal_memory_mb, absl::StrFormat("gs%d-%s", f.job_id, c->name))) {
        lines += a + "\n";
      }
      for (size_t p = 0; p < ports; ++p) {
        absl::StrAppend(&lines, "--vdev=net_af_packet", p, ",iface=", switch_if(node, p), "\n");
      }
      lines += "--\n";
      lines += SwitchShaping(f, o, node);
    }
    keys.emplace_back("grid/switch-ports/" + c->name, lines);
    keys.emplace_back("grid/netns/switch/" + c->name, switch_ns(node));
    ++index;
  }
  HostTransports(f, keys, [&](NodeId node, const std::string& eal_prefix) {
    if (host_transport == "af_packet") {
      return absl::StrCat("dpdk:", absl::StrJoin(Eal(o.eal_memory_mb, eal_prefix), " "),
                          " --vdev=net_af_packet0,iface=eth0", DpdkFaults(o.impairment, node + 1));
    }
    return absl::StrFormat("udp:bind=%s:%d%s%s,seed=%d", wire::IpToString(control::NodeIp(node)),
                           kHostPort, o.impairment.empty() ? "" : ",", o.impairment, node + 1);
  });
  return keys;
}

EmulationOptions EmulationOptionsFrom(const Flags& flags) {
  EmulationOptions o;
  const std::string kind = flags.String("switch", "grid");
  if (kind.rfind("p4runtime:", 0) == 0) {
    o.kind = SwitchKind::kP4Runtime;
    o.p4runtime = absl::StrSplit(kind.substr(10), ',', absl::SkipEmpty());
    if (o.p4runtime.empty()) flags.Fail("--switch=p4runtime: give each switch's ADDR:PORT");
  } else if (kind != "grid" && kind != "bmv2") {
    flags.Fail("--switch: grid, bmv2 or p4runtime:ADDR[,ADDR...]");
  } else {
    o.kind = kind == "bmv2" ? SwitchKind::kBmv2 : SwitchKind::kGrid;
  }
  o.impairment = flags.String("link-impairment", "");
  // Checked here: the switches take it as they start, in the background.
  if (auto faults = transport::ParseLinkFaults(o.impairment, false); !faults.ok()) {
    flags.Fail("--link-impairment: " + std::string(faults.status().message()));
  }
  if (auto gbps = flags.Get("link-gbps")) {
    double g = 0;
    if (!absl::SimpleAtod(*gbps, &g) || g <= 0) flags.Fail("--link-gbps: expected a rate > 0");
    o.link_gbps = *gbps;
  }
  if (auto scale = flags.Get("emulation-scale")) {
    if (flags.Get("link-gbps")) flags.Fail("--link-gbps and --emulation-scale: one or the other");
    if (!absl::SimpleAtod(*scale, &o.scale) || !(o.scale > 0)) {
      flags.Fail("--emulation-scale: expected a factor > 0");
    }
  }
  o.eal_memory_mb = static_cast<int>(flags.Int("eal-memory-mb", 128, 32, 65536));
  o.memif_queues = static_cast<int>(flags.Int("memif-queues", 1, 1, 8));
  o.bmv2_thrift_base = static_cast<int>(flags.Int("bmv2-thrift-base", 9090, 1, 65000));
  return o;
}

}  // namespace grid::tools
