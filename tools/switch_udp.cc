// grid-switch with kernel UDP sockets as ports: each port is a point-to-point
// link to one neighbour, carrying whole frames (udp-link transports at the
// hosts). No DPDK, so an emulated fabric runs on any machine.
//
//   grid-switch --config=S1.json --udp-port=127.0.0.1:41000@127.0.0.1:42000 ...
//               [--impair=PORT:loss=P,dup=P,reorder=P,gbps=G]... [--capacity-gbps=C]
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

}  // namespace

int RunUdpSwitch(int argc, char** argv) {
  const SwitchFlags flags = ParseSwitchFlags(argc, argv);
  const std::string& config_path = flags.config_path;
  const std::vector<std::string>& port_specs = flags.udp_ports;
  const sw::SwitchConfig config = LoadConfig(config_path);
  if (port_specs.size() != config.num_ports) {
    Fail("the table file has " + std::to_string(config.num_ports) + " ports but " +
         std::to_string(port_specs.size()) + " --udp-port flags were given");
  }
  auto pipeline = sw::Pipeline::Create(config);
  if (!pipeline.ok()) Fail(std::string(pipeline.status().message()));
  std::vector<UdpPort> ports(port_specs.size());
  for (size_t p = 0; p < port_specs.size(); ++p) {
    const std::string& spec = port_specs[p];
    const size_t at = spec.find('@');
    if (at == std::string::npos) Fail("--udp-port=" + spec + ": expected BIND@PEER");
    auto parsed = transport::ParseUdpSpec("udp-link:bind=" + spec.substr(0, at) +
                                          ",peer=" + spec.substr(at + 1));
    if (!parsed.ok()) Fail("--udp-port=" + spec + ": " + std::string(parsed.status().message()));
    auto link = transport::OpenUdp(*parsed);
    if (!link.ok()) Fail("--udp-port=" + spec + ": " + std::string(link.status().message()));
    ports[p].link = *std::move(link);
  }
  for (const auto& [p, imp] : flags.impairments) {
    if (p >= ports.size()) Fail("--impair: port " + std::to_string(p) + " does not exist");
    ports[p].faults = PortFaults(imp, 0x5eed ^ config.node_id, p);
    ports[p].bucket.Configure(imp.gbps, 64 * 1024 * 8);
  }
  TokenBucket capacity;
  capacity.Configure(flags.capacity_gbps, 64 * 1024 * 8);
  uint64_t capacity_drops = 0;
  InstallSignals();
  std::fprintf(stderr, "grid-switch: %s, %zu UDP ports, running\n", config.name.c_str(),
               ports.size());

  sw::Output out;
  std::vector<uint8_t> frame;
  auto enqueue = [&](uint16_t p, absl::Span<const uint8_t> f) {
    UdpPort& port = ports[p];
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
  };
  std::vector<pollfd> fds(ports.size());
  for (size_t p = 0; p < ports.size(); ++p) fds[p] = {ports[p].link->PollFd(), POLLIN, 0};
  while (!g_stop) {
    size_t work = 0;
    for (uint16_t p = 0; p < ports.size(); ++p) {
      work += ports[p].link->Receive(32, [&](absl::Span<const uint8_t> f) {
        if (capacity.limited() && f.size() >= wire::kPayloadOffset) {
          wire::FrameView view;
          if (wire::ParseFrame(f, &view) == wire::WireError::kOk &&
              view.header.type == wire::MessageType::kData &&
              view.header.agg_node == config.node_id && !capacity.Take(f.size() * 8.0)) {
            ++capacity_drops;
            return;
          }
        }
        frame.assign(f.begin(), f.end());
        out.Clear();
        pipeline->Process(absl::MakeSpan(frame), p, &out);
        for (const sw::OutFrame& o : out.frames) enqueue(o.port, out.Bytes(o, frame));
      });
    }
    bool queued = false;
    for (uint16_t p = 0; p < ports.size(); ++p) {
      UdpPort& port = ports[p];
      if (port.has_held && port.size == 0) {  // a pause never strands it
        port.Push(port.held);
        port.has_held = false;
      }
      absl::Span<const uint8_t> batch[32];
      size_t n = 0;
      while (port.size > 0 && n < 32 && port.bucket.Take(port.ring[port.head].size() * 8.0)) {
        batch[n++] = port.ring[port.head];
        port.head = (port.head + 1) % kQueue;
        --port.size;
      }
      if (n > 0) port.link->Send(absl::MakeConstSpan(batch, n));
      work += n;
      queued |= port.size > 0;
      pipeline->SetQueueDepth(p, static_cast<uint32_t>(port.size));
    }
    if (g_dump.exchange(false)) {
      std::fprintf(stderr, "%s\n", sw::CountersToJson(pipeline->counters()).c_str());
    }
    if (g_reload.exchange(false)) Reload(*pipeline, config_path);
    // Idle: sleep in poll() until a port has a frame (or a rate-limited
    // queue may drain), so many processes share two cores.
    if (work == 0) {
      if (queued) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      } else {
        ::poll(fds.data(), fds.size(), 5);
      }
    }
  }
  uint64_t impaired = 0, queue_drops = 0, foreign = 0;
  for (const UdpPort& p : ports) {
    impaired += p.impaired_drops;
    queue_drops += p.queue_drops;
    foreign += p.link->foreign_frames();  // from anyone but the link's other end
  }
  std::printf(
      "{\"switch\":\"%s\",\"lcores\":1,\"impaired_drops\":%llu,\"queue_drops\":%llu,"
      "\"capacity_drops\":%llu,\"foreign_drops\":%llu,\"counters\":%s}\n",
      config.name.c_str(), static_cast<unsigned long long>(impaired),
      static_cast<unsigned long long>(queue_drops), static_cast<unsigned long long>(capacity_drops),
      static_cast<unsigned long long>(foreign), sw::CountersToJson(pipeline->counters()).c_str());
  return 0;
}

}  // namespace grid::tools
