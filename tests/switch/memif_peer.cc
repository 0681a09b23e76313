// The other end of grid-switch in the memif integration test: every neighbour
// of S2 in the testbed (SwitchML's plan: S2 aggregates W3, W4 and W7).
//   memif_peer ports                 prints S2's port count
//   memif_peer write-config FILE     writes S2's table entries
//   memif_peer [EAL args] -- run [QUEUES]
//                                    drives the switch and checks what comes back
//                                    (QUEUES: memif queue pairs, as the switch has)
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fabric.h"

namespace {

using grid::testing::Job;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kSlots = 16;
constexpr uint16_t kElements = 4;

Job TestbedJob() { return grid::testing::MakeJob("testbed", "switchml", 8, 1, kSlots, kElements); }

int Fail(const std::string& message) {
  std::fprintf(stderr, "memif_peer: FAIL: %s\n", message.c_str());
  return 1;
}

class Ports {
 public:
  Ports(rte_mempool* pool, uint16_t queues) : pool_(pool), queues_(queues) {}

  bool Send(uint16_t port, const std::vector<uint8_t>& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (m == nullptr) return false;
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())), frame.data(),
                frame.size());
    for (int tries = 0; tries < 1000; ++tries) {
      // Round robin over the queue pairs, as a rank's DPDK transport sends.
      if (rte_eth_tx_burst(port, static_cast<uint16_t>(next_tx_ % queues_), &m, 1) == 1) {
        ++next_tx_;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    rte_pktmbuf_free(m);
    return false;
  }

  // Frames received on `port` within `timeout`, until `want` have arrived.
  std::vector<std::vector<uint8_t>> Receive(uint16_t port, size_t want,
                                            std::chrono::milliseconds timeout) {
    std::vector<std::vector<uint8_t>> got;
    const auto deadline = Clock::now() + timeout;
    rte_mbuf* bufs[32];
    while (got.size() < want && Clock::now() < deadline) {
      uint16_t n = 0;
      for (uint16_t q = 0; q < queues_ && n == 0; ++q) n = rte_eth_rx_burst(port, q, bufs, 32);
      for (uint16_t i = 0; i < n; ++i) {
        const uint8_t* d = rte_pktmbuf_mtod(bufs[i], const uint8_t*);
        got.emplace_back(d, d + rte_pktmbuf_data_len(bufs[i]));
        rte_pktmbuf_free(bufs[i]);
      }
      if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return got;
  }

 private:
  rte_mempool* pool_;
  uint16_t queues_;
  uint32_t next_tx_ = 0;
};

int Run(const Job& job, uint16_t queues) {
  const grid::topology::NodeId s2 = job.node("S2");
  const uint16_t ports = static_cast<uint16_t>(job.topo.neighbors(s2).size());
  if (rte_eth_dev_count_avail() != ports)
    return Fail("expected " + std::to_string(ports) + " memif ports");
  rte_mempool* pool = rte_pktmbuf_pool_create("peer", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                              static_cast<int>(rte_socket_id()));
  if (pool == nullptr) return Fail("mbuf pool");
  for (uint16_t p = 0; p < ports; ++p) {
    rte_eth_conf conf{};
    bool ok = rte_eth_dev_configure(p, queues, queues, &conf) >= 0;
    for (uint16_t q = 0; ok && q < queues; ++q) {
      ok = rte_eth_rx_queue_setup(p, q, 1024, rte_eth_dev_socket_id(p), nullptr, pool) >= 0 &&
           rte_eth_tx_queue_setup(p, q, 1024, rte_eth_dev_socket_id(p), nullptr) >= 0;
    }
    if (!ok || rte_eth_dev_start(p) < 0) return Fail("cannot start port " + std::to_string(p));
  }
  // The switch (memif server) must accept every connection.
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  for (uint16_t p = 0; p < ports; ++p) {
    rte_eth_link link{};
    while (rte_eth_link_get_nowait(p, &link) == 0 && link.link_status != RTE_ETH_LINK_UP) {
      if (Clock::now() > deadline)
        return Fail("memif port " + std::to_string(p) + " never came up");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  Ports io(pool, queues);
  const std::vector<int> members = {2, 3, 6};  // W3, W4, W7
  const uint16_t to_s1 = job.PortTo(s2, job.node("S1"));
  auto port_of = [&](int rank) { return job.PortTo(s2, job.plan.job.workers[rank]); };

  // 1. Aggregation, one window (P chunks) at a time as the protocol does.
  constexpr uint32_t kChunks = 160;
  uint64_t partials = 0, repeats = 0;
  for (uint32_t base = 0; base < kChunks; base += kSlots) {
    for (uint32_t c = base; c < base + kSlots; ++c) {
      for (int r : members) {
        const std::vector<int32_t> v = {r, static_cast<int32_t>(c), -r, 1000 * r};
        if (!io.Send(port_of(r), grid::testing::DataFrame(job, r, 1, c, v))) return Fail("send");
      }
    }
    // Every chunk of the window, once; the link may duplicate and reorder
    // (a late copy of an earlier window's partial is ignored).
    std::vector<bool> seen(kSlots, false);
    uint32_t distinct = 0;
    const auto window_deadline = Clock::now() + std::chrono::seconds(10);
    while (distinct < kSlots && Clock::now() < window_deadline) {
      for (const auto& f : io.Receive(to_s1, 1, std::chrono::milliseconds(100))) {
        auto v = grid::wire::DecodeFrame(f);
        if (!v.ok()) return Fail("partial: " + std::string(v.status().message()));
        const uint32_t c = v->header.chunk;
        if (v->header.type != grid::wire::MessageType::kPartial || c >= base + kSlots) {
          return Fail("unexpected frame for chunk " + std::to_string(c));
        }
        const int32_t expect[] = {11, static_cast<int32_t>(3 * c), -11, 11000};
        for (int i = 0; i < kElements; ++i) {
          if (grid::wire::LoadElement(v->payload, i) != expect[i]) {
            return Fail("chunk " + std::to_string(c) + " element " + std::to_string(i) +
                        " is wrong");
          }
        }
        if (c < base || seen[c - base]) {
          ++repeats;  // a duplicate the link made
          continue;
        }
        seen[c - base] = true;
        ++distinct;
        ++partials;
      }
    }
    if (distinct != kSlots) {
      return Fail("window at chunk " + std::to_string(base) + ": " + std::to_string(distinct) +
                  " partials of " + std::to_string(kSlots));
    }
  }
  // 2. A result from the root, replicated to the three members.
  grid::wire::Header h;
  h.type = grid::wire::MessageType::kResult;
  h.job_id = job.params.job_id;
  h.job_token = job.params.token;
  h.rank = grid::wire::kAllRanks;
  h.agg_node = static_cast<uint16_t>(s2);
  h.path = job.labels.from_root.at(s2);
  h.fan_in = job.root_fan_in;
  h.num_elements = kElements;
  std::vector<uint8_t> payload(4 * kElements, 7), result(grid::wire::FrameBytes(kElements));
  grid::wire::FrameAddress from_root;  // the root's address, as the switch requires of results
  from_root.src_ip = grid::control::NodeIp(job.plan.job.root);
  (void)grid::wire::EncodeFrame(from_root, h, payload, absl::MakeSpan(result));
  if (!io.Send(to_s1, result)) return Fail("send result");
  for (int r : members) {
    auto got = io.Receive(port_of(r), 1, std::chrono::seconds(5));
    if (got.size() != 1) return Fail("no result replica for rank " + std::to_string(r));
    auto v = grid::wire::DecodeFrame(got[0]);
    if (!v.ok() || v->header.rank != r) return Fail("bad replica for rank " + std::to_string(r));
  }
  // 3. Forwarding by label: a partial passing through S2 toward S1.
  grid::wire::Header t = h;
  t.type = grid::wire::MessageType::kPartial;
  t.agg_node = static_cast<uint16_t>(job.plan.job.root);
  t.path = job.labels.to_root.at(s2);
  std::vector<uint8_t> transit(grid::wire::FrameBytes(kElements));
  (void)grid::wire::EncodeFrame({}, t, payload, absl::MakeSpan(transit));
  // From another switch (S3): a host's port only takes its host's address.
  if (!io.Send(job.PortTo(s2, job.node("S3")), transit)) return Fail("send transit");
  bool forwarded = false;
  for (const auto& f : io.Receive(to_s1, 4, std::chrono::seconds(2))) {
    auto v = grid::wire::DecodeFrame(f);
    forwarded = forwarded || (v.ok() && v->header.path == t.path &&
                              v->header.type == grid::wire::MessageType::kPartial);
  }
  if (!forwarded) return Fail("transit not forwarded");
  std::printf("memif_peer: OK: %llu partials exact, 3 replicas, 1 forwarded, duplicates=%llu\n",
              static_cast<unsigned long long>(partials), static_cast<unsigned long long>(repeats));
  for (uint16_t p = 0; p < ports; ++p) rte_eth_dev_stop(p);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Job job = TestbedJob();
  if (argc >= 2 && std::string(argv[1]) == "ports") {
    std::printf("%zu\n", job.topo.neighbors(job.node("S2")).size());
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "write-config") {
    std::ofstream(argv[2]) << grid::sw::ConfigToJson(job.configs.at(job.node("S2")));
    return 0;
  }
  const int eal = rte_eal_init(argc, argv);
  if (eal < 0) return Fail("EAL initialisation failed");
  argc -= eal;
  argv += eal;
  if (argc < 2 || argc > 3 || std::string(argv[1]) != "run") {
    return Fail("usage: memif_peer [EAL] -- run [QUEUES]");
  }
  const int queues = argc == 3 ? std::atoi(argv[2]) : 1;
  if (queues < 1 || queues > 8) return Fail("QUEUES must be 1..8");
  const int rc = Run(job, static_cast<uint16_t>(queues));
  rte_eal_cleanup();
  return rc;
}
