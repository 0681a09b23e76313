#include "sim/fabric.h"

#include <deque>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "ns3/data-rate.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/mac48-address.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/point-to-point-channel.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/simulator.h"
#include "switch/runtime.h"
#include "util/random.h"

namespace grid::sim {

using topology::NodeId;

absl::Time Now() { return absl::UnixEpoch() + absl::Nanoseconds(NowNs()); }
int64_t NowNs() { return ns3::Simulator::Now().GetNanoSeconds(); }

namespace {

using Bytes = std::vector<uint8_t>;
// IPv4's EtherType: ns-3's point-to-point device frames only IP, and the
// GRID frame inside is IPv4/UDP.
constexpr uint16_t kProtocol = 0x0800;

// Buffers for the switch runtime's frames, reused.
class FramePool {
 public:
  ~FramePool() {
    for (Bytes* b : free_) delete b;
  }
  Bytes* Get() {
    if (free_.empty()) return new Bytes;
    Bytes* b = free_.back();
    free_.pop_back();
    return b;
  }
  void Put(Bytes* b) { free_.push_back(b); }

 private:
  std::vector<Bytes*> free_;
};

// sw::SwitchRuntime's frame handling (switch/runtime.h) on pooled vectors.
struct BytesOps {
  using Frame = Bytes*;
  FramePool* pool;
  std::optional<absl::Span<uint8_t>> Data(Frame f) { return absl::MakeSpan(*f); }
  size_t Length(const Frame& f) { return f->size(); }
  void Trim(Frame f, size_t length) { f->resize(length); }
  std::optional<Frame> Share(Frame f) { return Copy(f); }
  std::optional<Frame> Make(absl::Span<const uint8_t> bytes) {
    Bytes* b = pool->Get();
    b->assign(bytes.begin(), bytes.end());
    return b;
  }
  std::optional<Frame> Copy(const Frame& f) { return Make(*f); }
  void Free(Frame f) { pool->Put(f); }
};

using Runtime = sw::SwitchRuntime<BytesOps>;

uint64_t Fnv(absl::Span<const uint8_t> bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

ns3::Ptr<ns3::Packet> ToPacket(absl::Span<const uint8_t> bytes) {
  return ns3::Create<ns3::Packet>(bytes.data(), static_cast<uint32_t>(bytes.size()));
}

}  // namespace

class Fabric::Impl {
 public:
  // One end of a link: a node's port and the device behind it.
  struct PortEnd {
    Impl* impl = nullptr;
    NodeId node = topology::kNoNode;
    uint16_t port = 0;
    topology::ArcId in_arc = 0;  // the direction that arrives here
    ns3::Ptr<ns3::PointToPointNetDevice> device;
    bool OnRx(ns3::Ptr<ns3::NetDevice>, ns3::Ptr<const ns3::Packet> p, uint16_t,
              const ns3::Address&) {
      impl->Arrive(*this, p);
      return true;
    }
    void OnTxEnd(ns3::Ptr<const ns3::Packet>) { impl->TxEnded(*this); }
  };

  class HostPort;
  struct SwitchNode {
    sw::SwitchConfig config;
    std::unique_ptr<Runtime> runtime;
    std::vector<PortEnd*> ports;
    bool flush_pending = false;
  };

  Impl(const topology::Topology& topology, transport::LinkFaults faults)
      : topology_(topology), link_down_(topology.links().size(), false) {
    for (topology::ArcId arc = 0; arc < topology.num_arcs(); ++arc) {
      transport::LinkFaults f = faults;
      f.seed = util::Mix(faults.seed, static_cast<uint64_t>(arc));
      faults_.emplace_back(f);
    }
    arc_bytes_.assign(topology.num_arcs(), 0);
  }

  absl::Status Build(const std::map<NodeId, sw::SwitchConfig>& switches);
  void Arrive(PortEnd& end, ns3::Ptr<const ns3::Packet> packet);
  void TxEnded(PortEnd& end);
  void Deliver(PortEnd& end, Bytes frame);
  void ScheduleFlush(NodeId node);
  void Flush(NodeId node);
  void HoldRelease(PortEnd& end);

  const topology::Topology topology_;
  std::vector<transport::FaultApplier<Bytes>> faults_;  // by arc
  std::vector<bool> link_down_;                         // by link
  std::vector<uint64_t> arc_bytes_;
  std::vector<ns3::Ptr<ns3::Node>> nodes_;
  std::deque<PortEnd> ends_;                  // stable addresses: the callbacks hold them
  std::vector<std::vector<PortEnd*>> ports_;  // by node, by port
  std::map<NodeId, SwitchNode> switches_;
  std::map<NodeId, std::unique_ptr<HostPort>> hosts_;
  FramePool pool_;
  uint64_t digest_ = 0;
  FabricStats stats_;
};

class Fabric::Impl::HostPort final : public Transport {
 public:
  HostPort(Impl* impl, PortEnd* end, std::function<void()> on_arrival)
      : impl_(impl), end_(end), on_arrival_(std::move(on_arrival)) {}

  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    size_t n = 0;
    for (absl::Span<const uint8_t> f : frames) {
      if (!end_->device->Send(ToPacket(f), end_->device->GetBroadcast(), kProtocol)) {
        refused_ = true;  // the NIC's queue is full: the engine sends it again
        ++impl_->stats_.device_drops;
        break;
      }
      ++n;
    }
    return n;
  }
  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    size_t n = 0;
    while (n < max && !inbox_.empty()) {
      const Bytes f = std::move(inbox_.front());
      inbox_.pop_front();
      on_frame(f);
      ++n;
    }
    return n;
  }
  void WaitReadable(absl::Duration) override {}  // simulated time never waits
  std::string Describe() const override {
    return absl::StrFormat("ns-3 host \"%s\"", impl_->topology_.node(end_->node).name);
  }

  void Arrived(Bytes frame) {
    inbox_.push_back(std::move(frame));
    on_arrival_();
  }
  void TxEnded() {
    if (!refused_) return;
    refused_ = false;
    on_arrival_();
  }

 private:
  Impl* impl_;
  PortEnd* end_;
  std::function<void()> on_arrival_;
  std::deque<Bytes> inbox_;
  bool refused_ = false;
};

absl::Status Fabric::Impl::Build(const std::map<NodeId, sw::SwitchConfig>& switches) {
  const int n = topology_.num_nodes();
  nodes_.resize(n);
  ports_.resize(n);
  for (NodeId v = 0; v < n; ++v) nodes_[v] = ns3::CreateObject<ns3::Node>();
  for (NodeId v = 0; v < n; ++v) {
    const auto adj = topology_.neighbors(v);
    for (size_t p = 0; p < adj.size(); ++p) {
      PortEnd& end = ends_.emplace_back();
      end.impl = this;
      end.node = v;
      end.port = static_cast<uint16_t>(p);
      end.in_arc = topology::Topology::Reverse(adj[p].arc);
      end.device = ns3::CreateObject<ns3::PointToPointNetDevice>();
      end.device->SetAddress(ns3::Mac48Address::Allocate());
      end.device->SetDataRate(
          ns3::DataRate(static_cast<uint64_t>(topology_.ArcGbps(adj[p].arc) * 1e9)));
      auto queue = ns3::CreateObject<ns3::DropTailQueue<ns3::Packet>>();
      const uint32_t frames = topology_.node(v).is_host() ? FabricTunables::kHostQueueFrames
                                                          : FabricTunables::kSwitchDeviceFrames;
      queue->SetMaxSize(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, frames));
      end.device->SetQueue(queue);
      end.device->SetMtu(65535);
      nodes_[v]->AddDevice(end.device);
      end.device->SetReceiveCallback(ns3::MakeCallback(&PortEnd::OnRx, &end));
      end.device->TraceConnectWithoutContext("PhyTxEnd",
                                             ns3::MakeCallback(&PortEnd::OnTxEnd, &end));
      ports_[v].push_back(&end);
    }
  }
  // One channel per link, its latency from the topology.
  for (size_t l = 0; l < topology_.links().size(); ++l) {
    const topology::Link& link = topology_.links()[l];
    auto channel = ns3::CreateObject<ns3::PointToPointChannel>();
    channel->SetAttribute(
        "Delay",
        ns3::TimeValue(ns3::NanoSeconds(static_cast<int64_t>(link.latency_us * 1000 + 0.5))));
    for (NodeId end : {link.a, link.b}) {
      const NodeId other = end == link.a ? link.b : link.a;
      const auto adj = topology_.neighbors(end);
      for (size_t p = 0; p < adj.size(); ++p) {
        if (adj[p].node == other && adj[p].arc / 2 == static_cast<topology::ArcId>(l)) {
          ports_[end][p]->device->Attach(channel);
        }
      }
    }
  }
  for (NodeId s : topology_.Switches()) {
    auto it = switches.find(s);
    if (it == switches.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("switch \"%s\" has no tables", topology_.node(s).name));
    }
    auto pipeline = sw::Pipeline::Create(it->second);
    if (!pipeline.ok()) return pipeline.status();
    SwitchNode& node = switches_[s];
    node.config = it->second;
    node.ports = ports_[s];
    node.runtime = std::make_unique<Runtime>(*std::move(pipeline), std::vector<sw::PortShaping>{},
                                             util::Mix(0x5eed, s), BytesOps{&pool_});
  }
  return absl::OkStatus();
}

void Fabric::Impl::Arrive(PortEnd& end, ns3::Ptr<const ns3::Packet> packet) {
  Bytes frame(packet->GetSize());
  packet->CopyData(frame.data(), static_cast<uint32_t>(frame.size()));
  arc_bytes_[end.in_arc] += frame.size();
  if (link_down_[end.in_arc / 2]) {
    ++stats_.lost;
    return;
  }
  auto& faults = faults_[end.in_arc];
  faults.Apply(
      std::move(frame), [](const Bytes& b) { return std::optional<Bytes>(b); },
      [&](Bytes&&) { ++stats_.lost; }, [&](Bytes&& b) { Deliver(end, std::move(b)); });
  if (faults.holding()) HoldRelease(end);
}

void Fabric::Impl::HoldRelease(PortEnd& end) {
  ns3::Simulator::Schedule(
      ns3::NanoSeconds(absl::ToInt64Nanoseconds(FabricTunables::kReorderRelease)), [this, &end] {
        faults_[end.in_arc].Release([&](Bytes&& b) { Deliver(end, std::move(b)); });
      });
}

void Fabric::Impl::Deliver(PortEnd& end, Bytes frame) {
  ++stats_.delivered;
  digest_ = util::Mix(
      digest_, util::Mix(static_cast<uint64_t>(NowNs()),
                         util::Mix((uint64_t{static_cast<uint32_t>(end.node)} << 16) | end.port,
                                   Fnv(frame))));
  if (auto h = hosts_.find(end.node); h != hosts_.end()) {
    h->second->Arrived(std::move(frame));
    return;
  }
  auto s = switches_.find(end.node);
  if (s == switches_.end()) return;  // a host nobody attached: nothing listens
  Runtime& runtime = *s->second.runtime;
  runtime.Tick(NowNs());
  Bytes* f = pool_.Get();
  *f = std::move(frame);
  runtime.Handle(f, end.port);
  ScheduleFlush(end.node);
}

void Fabric::Impl::ScheduleFlush(NodeId node) {
  SwitchNode& s = switches_.at(node);
  if (s.flush_pending) return;
  s.flush_pending = true;
  ns3::Simulator::ScheduleNow([this, node] { Flush(node); });
}

void Fabric::Impl::Flush(NodeId node) {
  SwitchNode& s = switches_.at(node);
  s.flush_pending = false;
  s.runtime->Flush(NowNs(), [&](uint16_t port, absl::Span<Bytes*> frames) {
    PortEnd& end = *s.ports[port];
    size_t sent = 0;
    for (Bytes* f : frames) {
      if (!end.device->Send(ToPacket(*f), end.device->GetBroadcast(), kProtocol)) break;
      pool_.Put(f);
      ++sent;
    }
    return sent;
  });
}

void Fabric::Impl::TxEnded(PortEnd& end) {
  if (auto h = hosts_.find(end.node); h != hosts_.end()) {
    h->second->TxEnded();
  } else if (switches_.count(end.node)) {
    ScheduleFlush(end.node);
  }
}

Fabric::Fabric(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Fabric::~Fabric() {
  for (auto& [node, s] : impl_->switches_) s.runtime->Drain();
}

absl::StatusOr<std::unique_ptr<Fabric>> Fabric::Create(
    const topology::Topology& topology, const std::map<NodeId, sw::SwitchConfig>& switches,
    transport::LinkFaults faults) {
  auto impl = std::make_unique<Impl>(topology, faults);
  if (absl::Status s = impl->Build(switches); !s.ok()) return s;
  return std::unique_ptr<Fabric>(new Fabric(std::move(impl)));
}

absl::StatusOr<Transport*> Fabric::Attach(NodeId node, std::function<void()> on_arrival) {
  const topology::Topology& t = impl_->topology_;
  if (node < 0 || node >= t.num_nodes() || !t.node(node).is_host()) {
    return absl::InvalidArgumentError(absl::StrFormat("ns-3 fabric: node %d is not a host", node));
  }
  if (impl_->ports_[node].empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ns-3 fabric: host \"%s\" has no link", t.node(node).name));
  }
  if (impl_->hosts_.count(node)) {
    return absl::AlreadyExistsError(
        absl::StrFormat("ns-3 fabric: host \"%s\" is attached already", t.node(node).name));
  }
  auto port =
      std::make_unique<Impl::HostPort>(impl_.get(), impl_->ports_[node][0], std::move(on_arrival));
  Transport* out = port.get();
  impl_->hosts_.emplace(node, std::move(port));
  return out;
}

void Fabric::SetLinkDown(NodeId a, NodeId b, bool down) {
  for (const topology::Adjacent& adj : impl_->topology_.neighbors(a)) {
    if (adj.node == b) impl_->link_down_[adj.arc / 2] = down;
  }
}

void Fabric::Isolate(NodeId node, bool isolated) {
  for (const topology::Adjacent& adj : impl_->topology_.neighbors(node)) {
    impl_->link_down_[adj.arc / 2] = isolated;
  }
}

absl::Status Fabric::RestartSwitch(NodeId node) {
  auto it = impl_->switches_.find(node);
  if (it == impl_->switches_.end()) {
    return absl::NotFoundError(absl::StrFormat("ns-3 fabric: node %d is not a switch", node));
  }
  auto pipeline = sw::Pipeline::Create(it->second.config);
  if (!pipeline.ok()) return pipeline.status();
  it->second.runtime->Drain();
  it->second.runtime =
      std::make_unique<Runtime>(*std::move(pipeline), std::vector<sw::PortShaping>{},
                                util::Mix(0x5eed, node), BytesOps{&impl_->pool_});
  return absl::OkStatus();
}

uint64_t Fabric::digest() const { return impl_->digest_; }

FabricStats Fabric::stats() const {
  FabricStats s = impl_->stats_;
  for (const auto& f : impl_->faults_) {
    s.duplicated += f.injector().duplicated();
    s.reordered += f.injector().reordered();
  }
  for (const auto& [node, sw] : impl_->switches_) s.switch_queue_drops += sw.runtime->drops().queue;
  return s;
}

absl::StatusOr<sw::Counters> Fabric::SwitchCounters(NodeId node) const {
  auto it = impl_->switches_.find(node);
  if (it == impl_->switches_.end()) {
    return absl::NotFoundError(absl::StrFormat("ns-3 fabric: node %d is not a switch", node));
  }
  return it->second.runtime->pipeline().counters();
}

const std::vector<uint64_t>& Fabric::arc_bytes() const { return impl_->arc_bytes_; }

}  // namespace grid::sim
