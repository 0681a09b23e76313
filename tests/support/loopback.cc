#include "support/loopback.h"

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "transport/lanes.h"
#include "util/random.h"

namespace grid::testing {

using topology::NodeId;

class LoopbackFabric::HostPort final : public Transport {
 public:
  HostPort(LoopbackFabric* fabric, NodeId node, Inbox* inbox)
      : fabric_(fabric), node_(node), inbox_(inbox) {}

  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    {
      std::lock_guard<std::mutex> lock(inbox_->mu);
      if (inbox_->disconnected) return frames.size();  // gone: swallowed
    }
    for (absl::Span<const uint8_t> f : frames) fabric_->Forward(node_, 0, f);
    return frames.size();
  }

  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    batch_.clear();
    if (Empty()) fabric_->ReleaseHeld();
    {
      std::lock_guard<std::mutex> lock(inbox_->mu);
      while (batch_.size() < max && !inbox_->frames.empty()) {
        batch_.push_back(std::move(inbox_->frames.front()));
        inbox_->frames.pop_front();
      }
    }
    for (const std::vector<uint8_t>& f : batch_) on_frame(f);
    return batch_.size();
  }

  void WaitReadable(absl::Duration timeout) override {
    if (Empty()) fabric_->ReleaseHeld();
    std::unique_lock<std::mutex> lock(inbox_->mu);
    inbox_->cv.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                        [&] { return !inbox_->frames.empty(); });
  }

  std::string Describe() const override {
    return absl::StrFormat("loopback host \"%s\"", fabric_->topology_.node(node_).name);
  }

 private:
  bool Empty() const {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    return inbox_->frames.empty();
  }
  LoopbackFabric* fabric_;
  NodeId node_;
  Inbox* inbox_;
  std::vector<std::vector<uint8_t>> batch_;
};

absl::StatusOr<std::unique_ptr<LoopbackFabric>> LoopbackFabric::Create(
    const topology::Topology& topology, const std::map<NodeId, sw::SwitchConfig>& configs,
    LinkFaults faults) {
  std::unique_ptr<LoopbackFabric> f(new LoopbackFabric(topology));
  for (topology::ArcId arc = 0; arc < topology.num_arcs(); ++arc) {
    LinkFaults link = faults;
    link.seed = util::Mix(faults.seed, static_cast<uint64_t>(arc));
    f->faults_.emplace_back(link);
  }
  for (NodeId s : topology.Switches()) {
    auto node = std::make_unique<SwitchNode>();
    if (auto it = configs.find(s); it != configs.end()) {
      auto p = sw::Pipeline::Create(it->second);
      if (!p.ok()) return p.status();
      node->pipeline = std::make_unique<sw::Pipeline>(std::move(*p));
      node->config = it->second;
    }
    f->switches_.emplace(s, std::move(node));
  }
  for (NodeId h : topology.Hosts()) f->hosts_.emplace(h, std::make_unique<Inbox>());
  return f;
}

absl::StatusOr<std::unique_ptr<Transport>> LoopbackFabric::Attach(NodeId node) {
  auto it = hosts_.find(node);
  if (it == hosts_.end()) {
    return absl::InvalidArgumentError(absl::StrFormat("loopback: node %d is not a host", node));
  }
  if (topology_.neighbors(node).empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("loopback: host \"%s\" has no link", topology_.node(node).name));
  }
  return std::unique_ptr<Transport>(new HostPort(this, node, it->second.get()));
}

absl::StatusOr<std::vector<std::unique_ptr<Transport>>> LoopbackFabric::AttachLanes(
    NodeId node, uint32_t lanes) {
  auto first = Attach(node);
  if (!first.ok()) return first.status();
  std::vector<std::unique_ptr<Transport>> out;
  out.push_back(*std::move(first));
  auto& more = more_lanes_[node];
  more.clear();
  for (uint32_t k = 1; k < lanes; ++k) {
    more.push_back(std::make_unique<Inbox>());
    out.push_back(std::unique_ptr<Transport>(new HostPort(this, node, more.back().get())));
  }
  return out;
}

void LoopbackFabric::Disconnect(NodeId node) {
  auto it = hosts_.find(node);
  if (it == hosts_.end()) return;
  std::vector<Inbox*> all = {it->second.get()};
  if (auto m = more_lanes_.find(node); m != more_lanes_.end()) {
    for (auto& box : m->second) all.push_back(box.get());
  }
  for (Inbox* box : all) {
    std::lock_guard<std::mutex> lock(box->mu);
    box->disconnected = true;
    box->frames.clear();
  }
}

void LoopbackFabric::InjectFrom(NodeId node, absl::Span<const uint8_t> frame, uint16_t port) {
  Forward(node, port, frame);
}

void LoopbackFabric::SetLinkDown(NodeId a, NodeId b, bool down) {
  for (const topology::Adjacent& adj : topology_.neighbors(a)) {
    if (adj.node == b) link_down_[adj.arc / 2].store(down);
  }
}

absl::Status LoopbackFabric::RestartSwitch(NodeId node) {
  auto it = switches_.find(node);
  if (it == switches_.end()) {
    return absl::NotFoundError(absl::StrFormat("loopback: node %d runs no pipeline", node));
  }
  std::lock_guard<std::mutex> lock(it->second->mu);
  if (!it->second->pipeline) {
    return absl::NotFoundError(absl::StrFormat("loopback: node %d runs no pipeline", node));
  }
  auto fresh = sw::Pipeline::Create(it->second->config);
  if (!fresh.ok()) return fresh.status();
  it->second->pipeline = std::make_unique<sw::Pipeline>(*std::move(fresh));
  return absl::OkStatus();
}

FabricStats LoopbackFabric::stats() const {
  FabricStats s{delivered_.load(), lost_.load(), 0, 0};
  std::lock_guard<std::mutex> lock(faults_mu_);
  for (const auto& link : faults_) {
    s.duplicated += link.injector().duplicated();
    s.reordered += link.injector().reordered();
  }
  return s;
}

// Runs fn on switch `node`'s pipeline under its lock (a restart replaces
// the pipeline).
template <typename Fn>
auto LoopbackFabric::WithPipeline(NodeId node, Fn fn) const
    -> absl::StatusOr<decltype(fn(std::declval<const sw::Pipeline&>()))> {
  auto it = switches_.find(node);
  if (it == switches_.end()) {
    return absl::NotFoundError(absl::StrFormat("loopback: node %d runs no pipeline", node));
  }
  std::lock_guard<std::mutex> lock(it->second->mu);
  if (!it->second->pipeline) {
    return absl::NotFoundError(absl::StrFormat("loopback: node %d runs no pipeline", node));
  }
  return fn(*it->second->pipeline);
}

absl::StatusOr<std::vector<node::JobDrops>> LoopbackFabric::SwitchJobDrops(NodeId node) const {
  return WithPipeline(node, [](const sw::Pipeline& p) { return p.job_drops().Snapshot(); });
}

absl::StatusOr<sw::Counters> LoopbackFabric::SwitchCounters(NodeId node) const {
  return WithPipeline(node, [](const sw::Pipeline& p) { return p.counters(); });
}

void LoopbackFabric::Forward(NodeId from, uint16_t port, absl::Span<const uint8_t> frame) {
  const auto links = topology_.neighbors(from);
  if (port >= links.size()) return;
  const NodeId to = links[port].node;
  if (link_down_[links[port].arc / 2].load()) {
    ++lost_;
    return;
  }
  // The port of `to` that faces `from`.
  uint16_t in_port = 0;
  const auto back = topology_.neighbors(to);
  for (size_t p = 0; p < back.size(); ++p) {
    if (back[p].node == from) in_port = static_cast<uint16_t>(p);
  }
  // Decided under the lock, delivered without it: frames may come back
  // through this link.
  std::vector<Bytes> out;
  {
    std::lock_guard<std::mutex> lock(faults_mu_);
    auto& link = faults_[links[port].arc];
    const bool was_holding = link.holding();
    link.Apply(
        Bytes(frame.begin(), frame.end()), [](const Bytes& b) { return std::optional<Bytes>(b); },
        [&](Bytes&&) { ++lost_; }, [&](Bytes&& b) { out.push_back(std::move(b)); });
    holding_ += static_cast<int>(link.holding()) - static_cast<int>(was_holding);
  }
  for (const Bytes& b : out) Deliver(to, in_port, b);
}

void LoopbackFabric::ReleaseHeld() {
  if (holding_.load() == 0) return;
  std::vector<Arrival> out;
  {
    std::lock_guard<std::mutex> lock(faults_mu_);
    for (topology::ArcId arc = 0; arc < static_cast<topology::ArcId>(faults_.size()); ++arc) {
      if (!faults_[arc].holding()) continue;
      const NodeId to = topology_.ArcTo(arc), from = topology_.ArcFrom(arc);
      uint16_t in_port = 0;
      const auto back = topology_.neighbors(to);
      for (size_t p = 0; p < back.size(); ++p) {
        if (back[p].node == from) in_port = static_cast<uint16_t>(p);
      }
      faults_[arc].Release([&](Bytes&& b) { out.push_back({to, in_port, std::move(b)}); });
      --holding_;
    }
  }
  for (const Arrival& a : out) Deliver(a.to, a.in_port, a.frame);
}

void LoopbackFabric::Deliver(NodeId to, uint16_t in_port, absl::Span<const uint8_t> frame) {
  if (auto h = hosts_.find(to); h != hosts_.end()) {
    Inbox* box = h->second.get();
    if (auto m = more_lanes_.find(to); m != more_lanes_.end() && !m->second.empty()) {
      const uint32_t lane = transport::LaneOf(frame, static_cast<uint32_t>(m->second.size() + 1));
      if (lane > 0) box = m->second[lane - 1].get();
    }
    Enqueue(*box, frame);
    Arrived(to, frame);
    return;
  }
  auto s = switches_.find(to);
  if (s == switches_.end()) return;
  // Process under the switch's lock, then forward with no lock held: frames
  // may come back through this switch.
  std::vector<std::pair<uint16_t, std::vector<uint8_t>>> emitted;
  {
    SwitchNode& node = *s->second;
    std::lock_guard<std::mutex> lock(node.mu);
    // Read under the lock: RestartSwitch replaces the pipeline under it.
    if (!node.pipeline) return;
    std::vector<uint8_t> copy(frame.begin(), frame.end());
    node.out.Clear();
    node.capacity.Grant(*node.pipeline, absl::GetCurrentTimeNanos());
    node.pipeline->Process(absl::MakeSpan(copy), in_port, &node.out);
    for (const sw::OutFrame& f : node.out.frames) {
      const auto bytes = node.out.Bytes(f, copy);
      emitted.emplace_back(f.port, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    }
  }
  Arrived(to, frame);
  for (const auto& [port, bytes] : emitted) Forward(to, port, bytes);
}

void LoopbackFabric::SetTrigger(Trigger trigger) {
  std::lock_guard<std::mutex> lock(trigger_mu_);
  trigger_ = std::move(trigger);
  matched_ = 0;
  fired_ = false;
  armed_ = trigger_.fault != nullptr;
}

void LoopbackFabric::Arrived(NodeId to, absl::Span<const uint8_t> frame) {
  if (!armed_.load()) return;
  std::function<void(const wire::FrameView&)> fault;
  wire::FrameView v;
  {
    std::lock_guard<std::mutex> lock(trigger_mu_);
    if (!armed_.load() || to != trigger_.at) return;
    if (wire::ParseFrame(frame, &v) != wire::WireError::kOk) return;
    if (trigger_.match && !trigger_.match(v)) return;
    if (++matched_ < trigger_.after) return;
    armed_ = false;
    fault = std::move(trigger_.fault);
  }
  fault(v);
  fired_ = true;
}

void LoopbackFabric::Enqueue(Inbox& inbox, absl::Span<const uint8_t> frame) {
  {
    std::lock_guard<std::mutex> lock(inbox.mu);
    if (inbox.disconnected) return;
    inbox.frames.emplace_back(frame.begin(), frame.end());
  }
  ++delivered_;
  inbox.cv.notify_one();
}

}  // namespace grid::testing
