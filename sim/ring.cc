#include "sim/ring.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_format.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/nix-vector-helper.h"
#include "ns3/node-container.h"
#include "ns3/packet.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/uinteger.h"

namespace grid::sim {

namespace {

constexpr uint16_t kPort = 5000;
// A socket buffer well above a 100 Gbps link's bandwidth-delay product at
// these topologies' round trips (tens of microseconds): TCP's window, not
// the buffer, limits a flow.
constexpr uint32_t kSocketBuffer = 4 << 20;
// Bytes handed to TCP per Send: big enough that a step is a few calls.
constexpr uint32_t kWrite = 64 << 10;

// One rank of the ring: receives from the previous rank, sends to the next.
class RingRank {
 public:
  RingRank(uint64_t chunk, uint64_t steps, int* connected, std::function<void()> all_connected)
      : chunk_(chunk),
        steps_(steps),
        connected_count_(connected),
        all_connected_(std::move(all_connected)) {}

  void Listen(ns3::Ptr<ns3::Node> node) {
    listener_ = ns3::Socket::CreateSocket(node, ns3::TcpSocketFactory::GetTypeId());
    listener_->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
    listener_->Listen();
    listener_->SetAcceptCallback(
        ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(),
        ns3::MakeCallback(&RingRank::Accepted, this));
  }
  void Connect(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address next) {
    tx_ = ns3::Socket::CreateSocket(node, ns3::TcpSocketFactory::GetTypeId());
    tx_->Bind();
    tx_->SetConnectCallback(ns3::MakeCallback(&RingRank::Connected, this),
                            ns3::MakeCallback(&RingRank::Failed, this));
    tx_->SetSendCallback(ns3::MakeCallback(&RingRank::CanSend, this));
    tx_->Connect(ns3::InetSocketAddress(next, kPort));
  }
  // Every connection is up: the allreduce starts.
  void Start() {
    started_ = true;
    Push();
  }
  bool done() const { return received_ >= steps_ * chunk_ && sent_ >= steps_ * chunk_; }
  ns3::Time done_at() const { return done_at_; }
  uint64_t sent() const { return sent_; }

 private:
  void Accepted(ns3::Ptr<ns3::Socket> s, const ns3::Address&) {
    s->SetRecvCallback(ns3::MakeCallback(&RingRank::Received, this));
  }
  void Connected(ns3::Ptr<ns3::Socket>) {
    if (++*connected_count_ == 0) all_connected_();
  }
  void Failed(ns3::Ptr<ns3::Socket>) {}  // never finishes: RunRing reports it
  void CanSend(ns3::Ptr<ns3::Socket>, uint32_t) { Push(); }
  void Received(ns3::Ptr<ns3::Socket> s) {
    while (ns3::Ptr<ns3::Packet> p = s->Recv()) {
      if (p->GetSize() == 0) break;
      received_ += p->GetSize();
    }
    Push();
    Finish();
  }
  // Sends what the steps received so far allow: step s + 1 once step s has
  // arrived from the previous rank.
  void Push() {
    if (!started_) return;
    const uint64_t allowed = std::min<uint64_t>(steps_, 1 + received_ / chunk_) * chunk_;
    while (sent_ < allowed) {
      const uint32_t room = tx_->GetTxAvailable();
      if (room == 0) return;
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({room, allowed - sent_, kWrite}));
      const int taken = tx_->Send(ns3::Create<ns3::Packet>(n));
      if (taken <= 0) return;
      sent_ += static_cast<uint64_t>(taken);
    }
    Finish();
  }
  void Finish() {
    if (done() && done_at_.IsZero()) done_at_ = ns3::Simulator::Now();
  }

  const uint64_t chunk_, steps_;
  int* connected_count_;
  std::function<void()> all_connected_;
  ns3::Ptr<ns3::Socket> listener_, tx_;
  bool started_ = false;
  uint64_t sent_ = 0, received_ = 0;
  ns3::Time done_at_;
};

}  // namespace

absl::StatusOr<RingOutcome> RunRing(const topology::Topology& topology,
                                    const std::vector<topology::NodeId>& hosts, uint64_t bytes,
                                    uint64_t seed, absl::Duration limit) {
  const absl::Time wall_start = absl::Now();  // reported, never used
  const int n = static_cast<int>(hosts.size());
  if (n < 2) return absl::InvalidArgumentError("ring: needs at least 2 ranks");
  for (topology::NodeId h : hosts) {
    if (h < 0 || h >= topology.num_nodes() || !topology.node(h).is_host()) {
      return absl::InvalidArgumentError(absl::StrFormat("ring: node %d is not a host", h));
    }
  }
  struct Teardown {
    ~Teardown() { ns3::Simulator::Destroy(); }
  } teardown;
  ns3::RngSeedManager::SetSeed(1);
  ns3::RngSeedManager::SetRun(seed);
  ns3::Config::SetDefault("ns3::TcpSocket::SegmentSize", ns3::UintegerValue(1448));
  ns3::Config::SetDefault("ns3::TcpSocket::SndBufSize", ns3::UintegerValue(kSocketBuffer));
  ns3::Config::SetDefault("ns3::TcpSocket::RcvBufSize", ns3::UintegerValue(kSocketBuffer));

  ns3::NodeContainer nodes;
  nodes.Create(topology.num_nodes());
  // Devices first, then the stack (its traffic-control layer takes the
  // devices it finds), then the addresses: a /30 per link.
  std::vector<ns3::NetDeviceContainer> devices;
  for (const topology::Link& link : topology.links()) {
    ns3::PointToPointHelper p2p;
    p2p.SetDeviceAttribute(
        "DataRate", ns3::DataRateValue(ns3::DataRate(static_cast<uint64_t>(link.gbps * 1e9))));
    p2p.SetChannelAttribute(
        "Delay",
        ns3::TimeValue(ns3::NanoSeconds(static_cast<int64_t>(link.latency_us * 1000 + 0.5))));
    devices.push_back(p2p.Install(nodes.Get(link.a), nodes.Get(link.b)));
  }
  // Nix-vector routing: a shortest path per pair, found when the pair
  // first talks. Global routing would compute every node's table up front,
  // which on the k=16 fat tree (1,344 nodes) took 48 s and 1.6 GB.
  ns3::InternetStackHelper stack;
  ns3::Ipv4NixVectorHelper nix;
  stack.SetRoutingHelper(nix);
  stack.Install(nodes);
  ns3::Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");
  std::vector<ns3::Ipv4Address> host_ip(topology.num_nodes());
  for (size_t l = 0; l < devices.size(); ++l) {
    const topology::Link& link = topology.links()[l];
    ns3::Ipv4InterfaceContainer ifc = addresses.Assign(devices[l]);
    addresses.NewNetwork();
    if (topology.node(link.a).is_host()) host_ip[link.a] = ifc.GetAddress(0);
    if (topology.node(link.b).is_host()) host_ip[link.b] = ifc.GetAddress(1);
  }

  const uint64_t chunk = (bytes + n - 1) / n;
  const uint64_t steps = 2 * static_cast<uint64_t>(n - 1);
  int connected = -n;  // reaches 0 when the last rank's connection is up
  ns3::Time start;
  std::vector<std::unique_ptr<RingRank>> ranks;
  auto start_all = [&] {
    start = ns3::Simulator::Now();
    for (auto& r : ranks) r->Start();
  };
  for (int r = 0; r < n; ++r) {
    ranks.push_back(std::make_unique<RingRank>(chunk, steps, &connected, start_all));
    ranks.back()->Listen(nodes.Get(hosts[r]));
  }
  // Inside the simulation: the nodes initialize (their traffic-control
  // layers find their devices) as it starts.
  for (int r = 0; r < n; ++r) {
    ns3::Simulator::ScheduleNow(
        [&, r] { ranks[r]->Connect(nodes.Get(hosts[r]), host_ip[hosts[(r + 1) % n]]); });
  }
  ns3::Simulator::Stop(ns3::NanoSeconds(absl::ToInt64Nanoseconds(limit)));
  ns3::Simulator::Run();

  RingOutcome out;
  out.bytes_per_rank = steps * chunk;
  for (int r = 0; r < n; ++r) {
    if (!ranks[r]->done()) {
      return absl::DeadlineExceededError(
          absl::StrFormat("ring: rank %d (host \"%s\") did not finish within %s of simulated time",
                          r, topology.node(hosts[r]).name, absl::FormatDuration(limit)));
    }
    out.comm_time =
        std::max(out.comm_time, absl::Nanoseconds((ranks[r]->done_at() - start).GetNanoSeconds()));
  }
  const double seconds = absl::ToDoubleSeconds(out.comm_time);
  out.gbps = seconds > 0 ? static_cast<double>(out.bytes_per_rank) * 8 / seconds / 1e9 : 0;
  out.events = ns3::Simulator::GetEventCount();
  out.wall_seconds = absl::ToDoubleSeconds(absl::Now() - wall_start);
  return out;
}

}  // namespace grid::sim
