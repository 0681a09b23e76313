// DPDK port helpers that the transport and grid-switch share
// (transport/dpdk.h): mbuf sizing, the MTU, and memif's sockets, links and
// doorbells.
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grid/wire.h"
#include "transport/doorbell.h"
#include "transport/dpdk.h"

namespace grid::transport {

uint16_t GridMbufDataRoom() {
  return static_cast<uint16_t>(
      std::max<size_t>(RTE_MBUF_DEFAULT_BUF_SIZE, wire::kMaxFrameBytes + RTE_PKTMBUF_HEADROOM));
}

void FitMtuToGridFrames(uint16_t port) {
  rte_eth_dev_info info{};
  const auto mtu = static_cast<uint16_t>(wire::kMaxFrameBytes - 14);  // less the Ethernet header
  if (rte_eth_dev_info_get(port, &info) == 0 && info.max_mtu >= mtu) {
    (void)rte_eth_dev_set_mtu(port, mtu);
  }
}

absl::Status StartQueues(uint16_t port, uint16_t queues, rte_mempool* pool) {
  rte_eth_conf conf{};
  const int socket = rte_eth_dev_socket_id(port);
  bool ok = rte_eth_dev_configure(port, queues, queues, &conf) >= 0;
  for (uint16_t q = 0; ok && q < queues; ++q) {
    ok = rte_eth_rx_queue_setup(port, q, kPortDescriptors, socket, nullptr, pool) >= 0 &&
         rte_eth_tx_queue_setup(port, q, kPortDescriptors, socket, nullptr) >= 0;
  }
  if (!ok || rte_eth_dev_start(port) < 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot start DPDK port %d with %d queue pairs", port, queues));
  }
  rte_eth_promiscuous_enable(port);
  FitMtuToGridFrames(port);
  return absl::OkStatus();
}

absl::Status WaitForMemifServers(int argc, char** argv, absl::Duration timeout) {
  std::vector<std::string> sockets;
  for (const MemifVdev& v : ParseMemifVdevs(argc, argv)) {
    if (!v.server && !v.socket.empty()) sockets.push_back(v.socket);
  }
  const absl::Time deadline = absl::Now() + timeout;
  for (const std::string& path : sockets) {
    while (::access(path.c_str(), F_OK) != 0) {
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(absl::StrFormat("memif: no server socket %s after %s",
                                                           path, absl::FormatDuration(timeout)));
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  return absl::OkStatus();
}

absl::Status AwaitMemifClientLinks(int argc, char** argv, absl::Span<const uint16_t> ports,
                                   absl::Duration timeout) {
  struct Client {
    uint16_t port;
    std::string socket;
    absl::Duration patience;  // before the next restart
    absl::Time started;
  };
  const absl::Time begin = absl::Now();
  std::vector<Client> waiting;
  for (const MemifVdev& v : ParseMemifVdevs(argc, argv)) {
    uint16_t port = 0;
    if (v.server || rte_eth_dev_get_port_by_name(v.name.c_str(), &port) != 0 ||
        std::find(ports.begin(), ports.end(), port) == ports.end()) {
      continue;
    }
    waiting.push_back(
        {port, v.socket.empty() ? "(abstract)" : v.socket, absl::Milliseconds(250), begin});
  }
  int restarts = 0;
  while (!waiting.empty()) {
    const absl::Time now = absl::Now();
    for (auto it = waiting.begin(); it != waiting.end();) {
      rte_eth_link link{};
      if (rte_eth_link_get_nowait(it->port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP) {
        it = waiting.erase(it);
        continue;
      }
      if (now - it->started >= it->patience) {
        // A failed start (the server's socket went away) is retried too.
        (void)rte_eth_dev_stop(it->port);
        (void)rte_eth_dev_start(it->port);
        ++restarts;
        it->started = absl::Now();
        it->patience = std::min(2 * it->patience, absl::Seconds(2));
      }
      ++it;
    }
    if (waiting.empty()) break;
    if (absl::Now() - begin >= timeout) {
      std::string names;
      for (const Client& c : waiting) {
        absl::StrAppend(&names, names.empty() ? "" : ", ",
                        absl::StrFormat("port %d (socket %s)", c.port, c.socket));
      }
      return absl::DeadlineExceededError(absl::StrFormat(
          "memif: no link on %s after %s and %d restarts: is its server running and does it have "
          "that id?",
          names, absl::FormatDuration(timeout), restarts));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return absl::OkStatus();
}

MemifBells OpenMemifBells(int argc, char** argv, absl::Span<const uint16_t> ports) {
  MemifBells bells;
  std::vector<std::string> own;
  for (const MemifVdev& v : ParseMemifVdevs(argc, argv)) {
    uint16_t port = 0;
    if (v.socket.empty() || rte_eth_dev_get_port_by_name(v.name.c_str(), &port) != 0 ||
        std::find(ports.begin(), ports.end(), port) == ports.end()) {
      continue;
    }
    own.push_back(BellPath(v, /*own=*/true));
    if (bells.peers.size() <= port) bells.peers.resize(port + 1u);
    bells.peers[port] = std::make_unique<PeerBell>(BellPath(v, /*own=*/false));
  }
  if (own.empty()) return bells;
  auto bell = Doorbell::Create(own);
  if (!bell.ok()) return MemifBells{};  // napping still works
  bells.own = *std::move(bell);
  return bells;
}

}  // namespace grid::transport
