// grid-switch with kernel UDP sockets as ports: each port is a point-to-point
// link to one neighbour, carrying whole frames (udp-link transports at the
// hosts). No DPDK, so an emulated fabric runs on any machine.
//
//   grid-switch --config=S1.json --udp-port=127.0.0.1:41000@127.0.0.1:42000 ...
//               [--impair=PORT:loss=P,dup=P,reorder=P,gbps=G]... [--capacity-gbps=C]
//               [--rate-scale=S]
//
// Port i is the i-th --udp-port (BIND@PEER). Signals as in DPDK mode.
#include <poll.h>

#include <array>
#include <atomic>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "grid/switch.h"
#include "grid/wire.h"
#include "switch_common.h"
#include "transport/udp.h"
#include "util/random.h"

namespace grid::tools {
namespace {

constexpr size_t kQueue = 1024;

// A port: its link, its impairments, and a fixed ring of frames waiting for
// its rate limit (no allocation per packet).
struct UdpPort {
  std::unique_ptr<Transport> link;
  transport::FaultInjector faults{transport::LinkFaults{}};
  TokenBucket bucket;
  std::vector<std::vector<uint8_t>> ring = std::vector<std::vector<uint8_t>>(kQueue);
  size_t head = 0, size = 0;
  std::vector<uint8_t> held;
  bool has_held = false;
  uint64_t impaired_drops = 0, queue_drops = 0;

  void Push(absl::Span<const uint8_t> f) {
    if (size == kQueue) {
      ++queue_drops;
      return;
    }
    std::vector<uint8_t>& slot = ring[(head + size++) % kQueue];
    slot.assign(f.begin(), f.end());
  }
};

constexpr size_t kBatch = 32;  // frames per receive or send call

// The switch over kernel UDP links: one pipeline, one thread, ports that
// block in poll() when idle.
class UdpSwitch {
 public:
  explicit UdpSwitch(const SwitchFlags& flags)
      : flags_(flags), config_(LoadConfig(flags.config_path)) {
    ApplyCapacity(config_, flags_, 1);
  }

  void Open() {
    if (flags_.udp_ports.size() != config_.num_ports) {
      Fail("the table file has " + std::to_string(config_.num_ports) + " ports but " +
           std::to_string(flags_.udp_ports.size()) + " --udp-port flags were given");
    }
    auto pipeline = sw::Pipeline::Create(config_);
    if (!pipeline.ok()) Fail(std::string(pipeline.status().message()));
    pipeline_.emplace(*std::move(pipeline));
    ports_ = std::vector<UdpPort>(flags_.udp_ports.size());
    for (size_t p = 0; p < ports_.size(); ++p) ports_[p].link = OpenLink(flags_.udp_ports[p]);
    for (const auto& [p, imp] : flags_.impairments) {
      if (p >= ports_.size()) Fail("--impair: port " + std::to_string(p) + " does not exist");
      ports_[p].faults = PortFaults(imp, 0x5eed ^ config_.node_id, p);
      ports_[p].bucket.Configure(imp.gbps, kBucketBurstBits);
    }
    fds_.resize(ports_.size());
    more_.assign(ports_.size(), false);
    for (size_t p = 0; p < ports_.size(); ++p) fds_[p] = {ports_[p].link->PollFd(), POLLIN, 0};
  }

  void Run() {
    std::fprintf(stderr, "grid-switch: %s, %zu UDP ports, running\n", config_.name.c_str(),
                 ports_.size());
    while (!g_stop) {
      size_t work = 0;
      // One poll() finds the ports with frames: a recvmmsg on each port
      // would cost a system call per idle port every round. A port that
      // filled its last batch is read again without asking: its transport
      // may hold frames the socket no longer shows (coalesced by GRO).
      const bool polled = ::poll(fds_.data(), fds_.size(), 0) > 0;
      for (uint16_t p = 0; p < ports_.size(); ++p) {
        if (!more_[p] && !(polled && (fds_[p].revents & POLLIN))) continue;
        const size_t n = ReceiveOn(p);
        more_[p] = n == kBatch;
        work += n;
      }
      bool queued = false;
      for (uint16_t p = 0; p < ports_.size(); ++p) work += TransmitOn(p, &queued);
      if (g_dump.exchange(false)) {
        std::fprintf(stderr, "%s\n", sw::CountersToJson(pipeline_->counters()).c_str());
      }
      if (g_reload.exchange(false)) Reload(*pipeline_, flags_, 1);
      if (work == 0) Idle(queued);
    }
  }

  // The final counters on stdout, as one JSON line.
  void Report() const {
    uint64_t impaired = 0, queue_drops = 0, foreign = 0;
    for (const UdpPort& p : ports_) {
      impaired += p.impaired_drops;
      queue_drops += p.queue_drops;
      foreign += p.link->foreign_frames();  // from anyone but the link's other end
    }
    std::printf(
        "{\"switch\":\"%s\",\"lcores\":1,\"impaired_drops\":%llu,\"queue_drops\":%llu,"
        "\"capacity_gbps\":%g,\"foreign_drops\":%llu,\"counters\":%s}\n",
        config_.name.c_str(), static_cast<unsigned long long>(impaired),
        static_cast<unsigned long long>(queue_drops), pipeline_->config().capacity_gbps,
        static_cast<unsigned long long>(foreign),
        sw::CountersToJson(pipeline_->counters()).c_str());
  }

 private:
  static std::unique_ptr<Transport> OpenLink(const std::string& spec) {
    const size_t at = spec.find('@');
    if (at == std::string::npos) Fail("--udp-port=" + spec + ": expected BIND@PEER");
    auto parsed = transport::ParseUdpSpec("udp-link:bind=" + spec.substr(0, at) +
                                          ",peer=" + spec.substr(at + 1));
    if (!parsed.ok()) Fail("--udp-port=" + spec + ": " + std::string(parsed.status().message()));
    auto link = transport::OpenUdp(*parsed);
    if (!link.ok()) Fail("--udp-port=" + spec + ": " + std::string(link.status().message()));
    return *std::move(link);
  }

  size_t ReceiveOn(uint16_t p) {
    capacity_.Grant(*pipeline_);
    return ports_[p].link->Receive(kBatch, [&](absl::Span<const uint8_t> f) {
      frame_.assign(f.begin(), f.end());
      out_.Clear();
      pipeline_->Process(absl::MakeSpan(frame_), p, &out_);
      for (const sw::OutFrame& o : out_.frames) Enqueue(o.port, out_.Bytes(o, frame_));
    });
  }

  // Hands a frame to port p's transmit side, through its impairments.
  void Enqueue(uint16_t p, absl::Span<const uint8_t> f) {
    UdpPort& port = ports_[p];
    const int copies = port.faults.Copies();
    if (copies == 0) {
      ++port.impaired_drops;
      return;
    }
    for (int c = 0; c < copies; ++c) {
      if (port.faults.Hold(!port.has_held)) {
        port.held.assign(f.begin(), f.end());  // goes out after the next one
        port.has_held = true;
        continue;
      }
      port.Push(f);
      if (port.has_held) {
        port.Push(port.held);
        port.has_held = false;
      }
    }
  }

  // Sends what port p's rate limit allows; notes whether frames still wait.
  size_t TransmitOn(uint16_t p, bool* queued) {
    UdpPort& port = ports_[p];
    if (port.has_held && port.size == 0) {  // a pause never strands it
      port.Push(port.held);
      port.has_held = false;
    }
    absl::Span<const uint8_t> batch[kBatch];
    size_t n = 0;
    while (port.size > 0 && n < kBatch && port.bucket.Take(port.ring[port.head].size() * 8.0)) {
      batch[n++] = port.ring[port.head];
      port.head = (port.head + 1) % kQueue;
      --port.size;
    }
    if (n > 0) port.link->Send(absl::MakeConstSpan(batch, n));
    *queued |= port.size > 0;
    pipeline_->SetQueueDepth(p, static_cast<uint32_t>(port.size));
    return n;
  }

  // Sleep in poll() until a port has a frame, or briefly while a
  // rate-limited queue waits to drain, so many processes share two cores.
  void Idle(bool queued) {
    constexpr auto kDrainWait = std::chrono::microseconds(20);
    constexpr int kPollMs = 5;
    if (queued) {
      std::this_thread::sleep_for(kDrainWait);
    } else {
      ::poll(fds_.data(), fds_.size(), kPollMs);
    }
  }

  const SwitchFlags& flags_;
  sw::SwitchConfig config_;
  std::optional<sw::Pipeline> pipeline_;
  std::vector<UdpPort> ports_;
  std::vector<pollfd> fds_;
  std::vector<bool> more_;  // the port's last read filled its batch
  CapacityClock capacity_;
  sw::Output out_;
  std::vector<uint8_t> frame_;
};

}  // namespace

int RunUdpSwitch(int argc, char** argv) {
  const SwitchFlags flags = ParseSwitchFlags(argc, argv);
  UdpSwitch sw(flags);
  sw.Open();
  InstallSignals();
  sw.Run();
  sw.Report();
  return 0;
}

}  // namespace grid::tools
