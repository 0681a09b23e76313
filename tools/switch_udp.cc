// grid-switch with kernel UDP sockets as ports: each port is a point-to-point
// link to one neighbour, carrying whole frames (udp-link transports at the
// hosts). No DPDK, so an emulated fabric runs on any machine.
//
//   grid-switch --config=S1.json --udp-port=127.0.0.1:41000@127.0.0.1:42000 ...
//
// Port i is the i-th --udp-port (BIND@PEER). The runtime is the library's
// (sw::SwitchRuntime) over pooled byte buffers; one thread runs it.
#include <poll.h>

#include <memory>
#include <thread>
#include <vector>

#include "switch/frame_pool.h"
#include "tools/switch_flags.h"
#include "tools/switch_metrics.h"
#include "tools/switch_trace.h"
#include "transport/udp.h"

namespace grid::tools {
namespace {

using sw::RuntimeTunables;
using Runtime = sw::SwitchRuntime<sw::PoolOps>;

std::unique_ptr<Transport> OpenLink(const std::string& spec) {
  const size_t at = spec.find('@');
  if (at == std::string::npos) Fail("--udp-port=" + spec + ": expected BIND@PEER");
  auto parsed = transport::ParseUdpSpec("udp-link:bind=" + spec.substr(0, at) +
                                        ",peer=" + spec.substr(at + 1));
  if (!parsed.ok()) Fail("--udp-port=" + spec + ": " + std::string(parsed.status().message()));
  auto link = transport::OpenUdp(*parsed);
  if (!link.ok()) {
    Fail("--udp-port=" + spec + ": " + std::string(link.status().message()), 1);
  }
  return *std::move(link);
}

// The switch over kernel UDP links: one runtime, one thread, ports that
// block in poll() when idle.
class UdpSwitch {
 public:
  explicit UdpSwitch(const SwitchFlags& flags) : flags_(flags) {
    const sw::SwitchConfig config = LoadConfig(flags_, 1);
    if (flags_.udp_ports.size() != config.num_ports) {
      Fail("the table file has " + std::to_string(config.num_ports) + " ports but " +
           std::to_string(flags_.udp_ports.size()) + " --udp-port flags were given");
    }
    auto pipeline = sw::Pipeline::Create(config);
    if (!pipeline.ok()) Fail(std::string(pipeline.status().message()));
    // Every queue full, each port holding one frame back, and a frame in
    // hand: the pool never runs out before a queue does.
    pool_ = std::make_unique<sw::FramePool>(config.num_ports * (RuntimeTunables::kQueueFrames + 2) +
                                            RuntimeTunables::kBurst);
    runtime_ =
        std::make_unique<Runtime>(*std::move(pipeline), PortShapings(flags_, config.num_ports, 1),
                                  0x5eed ^ config.node_id, sw::PoolOps{pool_.get()});
    if (trace_) trace_->Attach(*runtime_);
    for (const std::string& spec : flags_.udp_ports) links_.push_back(OpenLink(spec));
    for (const auto& link : links_) fds_.push_back({link->PollFd(), POLLIN, 0});
    more_.assign(links_.size(), false);
  }

  void Run() {
    std::fprintf(stderr, "grid-switch: %s, %zu UDP ports, running\n", name().c_str(),
                 links_.size());
    while (!g_stop) {
      size_t work = 0;
      // One poll() finds the ports with frames: a recvmmsg on each port
      // would cost a system call per idle port every round. A port that
      // filled its last batch is read again without asking: its transport
      // may hold frames the socket no longer shows (coalesced by GRO).
      const bool polled = ::poll(fds_.data(), fds_.size(), 0) > 0;
      for (uint16_t p = 0; p < links_.size(); ++p) {
        if (!more_[p] && !(polled && (fds_[p].revents & POLLIN))) continue;
        const size_t n = ReceiveOn(p);
        more_[p] = n == RuntimeTunables::kBurst;
        work += n;
      }
      work += runtime_->Flush(SteadyNs(), [&](uint16_t p, absl::Span<sw::FramePool::Buffer*> f) {
        return SendOn(p, f);
      });
      if (g_dump.exchange(false)) {
        std::fprintf(stderr, "%s\n", sw::CountersToJson(runtime_->pipeline().counters()).c_str());
      }
      if (g_reload.exchange(false)) Reload(runtime_->pipeline(), flags_, 1);
      if (metrics && metrics->Due(SteadyNs())) metrics->Post(SteadyNs(), pipeline().counters());
      if (work == 0) Idle(runtime_->Backlog());
    }
  }

  const sw::Pipeline& pipeline() const { return runtime_->pipeline(); }
  std::unique_ptr<SwitchMetrics> metrics;  // --metrics; posted from Run's loop

  // The final counters on stdout, as one JSON line.
  void Report() const {
    uint64_t foreign = 0;  // from anyone but a link's other end
    for (const auto& link : links_) foreign += link->foreign_frames();
    std::printf("%s\n", sw::RuntimeReportJson(name(), 1, runtime_->drops(),
                                              runtime_->pipeline().config().capacity_gbps,
                                              runtime_->pipeline().counters(), foreign)
                            .c_str());
    if (trace_) trace_->Write(runtime_->pipeline().config());
  }

 private:
  const std::string& name() const { return runtime_->pipeline().config().name; }

  size_t ReceiveOn(uint16_t p) {
    runtime_->Tick(SteadyNs());
    sw::PoolOps& ops = runtime_->ops();
    return links_[p]->Receive(RuntimeTunables::kBurst, [&](absl::Span<const uint8_t> f) {
      if (std::optional<sw::FramePool::Buffer*> b = ops.Make(f)) runtime_->Handle(*b, p);
    });
  }

  // The kernel copies what it takes: those buffers go back to the pool.
  size_t SendOn(uint16_t p, absl::Span<sw::FramePool::Buffer*> frames) {
    spans_.clear();
    for (sw::FramePool::Buffer* b : frames) spans_.emplace_back(*b);
    const size_t sent = links_[p]->Send(spans_);
    for (size_t i = 0; i < sent; ++i) runtime_->ops().Free(frames[i]);
    return sent;
  }

  // Sleep in poll() until a port has a frame, or briefly while a
  // rate-limited queue waits to drain, so many processes share two cores.
  void Idle(bool backlog) {
    constexpr auto kDrainWait = std::chrono::microseconds(20);
    constexpr int kPollMs = 5;
    if (backlog) {
      std::this_thread::sleep_for(kDrainWait);
    } else {
      ::poll(fds_.data(), fds_.size(), kPollMs);
    }
  }

  const SwitchFlags& flags_;
  std::unique_ptr<sw::FramePool> pool_;
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<SwitchTrace> trace_ = SwitchTrace::FromEnvironment();  // GRID_TRACE
  std::vector<std::unique_ptr<Transport>> links_;
  std::vector<pollfd> fds_;
  std::vector<bool> more_;  // the port's last read filled its batch
  std::vector<absl::Span<const uint8_t>> spans_;
};

}  // namespace

int RunUdpSwitch(int argc, char** argv) {
  const SwitchFlags flags = ParseSwitchFlags(argc, argv);
  UdpSwitch sw(flags);
  InstallSignals();
  const auto reporter = StartReporter(flags, {&sw.pipeline()});
  sw.metrics = SwitchMetrics::Start(flags, sw.pipeline().config().name, {&sw.pipeline()});
  sw.Run();
  if (reporter) reporter->Stop();
  sw.Report();
  return 0;
}

}  // namespace grid::tools
