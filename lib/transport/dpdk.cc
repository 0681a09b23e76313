// DPDK: any PMD (memif, af_packet, net_ring, tap, real NICs), with the EAL
// arguments passed through. One DPDK transport per process, because the EAL
// is initialised once per process.
#include "transport/dpdk.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "transport/impaired.h"
#include "transport/lanes.h"
#include "util/tsan.h"

namespace grid::transport {
namespace {

constexpr uint16_t kBurst = 32;
// A host's one peer (its switch) wakes it once this many frames have come,
// or when the switch runs out of input: a rank then wakes once per few
// results, not once per frame (transport/doorbell.h).
constexpr uint32_t kWakeFrames = 8;
// Empty polls, each after a sched_yield(), before blocking on the doorbell.
constexpr int kYieldsBeforeSleep = 16;
constexpr uint32_t kMaxQueues = 64;  // queue pairs a dpdk: spec may ask for
std::atomic<bool> g_eal_in_use{false};

// The started port and its mbuf pool, shared by a transport and the lanes
// it opened (OpenLanes); the last owner stops the port and the EAL.
struct DpdkPort {
  uint16_t id = 0;
  uint16_t queues = 1;
  rte_mempool* pool = nullptr;
  // Lane k's inbox: frames of its slots that arrived on another lane's
  // queue (a peer that does not steer by slot), handed over as mbufs.
  std::vector<rte_ring*> inboxes;

  ~DpdkPort() {
    for (rte_ring* r : inboxes) {
      void* m = nullptr;
      while (rte_ring_dequeue(r, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
      rte_ring_free(r);
    }
    rte_eth_dev_stop(id);
    rte_eth_dev_close(id);
    rte_mempool_free(pool);
    rte_eal_cleanup();
    g_eal_in_use = false;
  }
};

// The whole port (queue pairs 0 to queues-1, bursts taking them in turn),
// or one lane of it: queue pair `first`, receiving the frames of the slots
// s with s mod lanes = lane (transport/lanes.h).
class DpdkTransport final : public Transport {
 public:
  DpdkTransport(std::shared_ptr<DpdkPort> port, std::string describe, MemifBells bells)
      : shared_(std::move(port)),
        port_(shared_->id),
        first_(0),
        queues_(shared_->queues),
        pool_(shared_->pool),
        describe_(std::move(describe)),
        bells_(std::move(bells)),
        peer_(bells_.peer(port_)) {}

  // Lane `lane` of `lanes`, on queue pair `lane`: no doorbells (a peer that
  // steers slots to queues is a multi-lcore grid-switch, which has none).
  DpdkTransport(std::shared_ptr<DpdkPort> port, uint32_t lane, uint32_t lanes, std::string describe)
      : shared_(std::move(port)),
        port_(shared_->id),
        first_(static_cast<uint16_t>(lane)),
        queues_(1),
        pool_(shared_->pool),
        describe_(std::move(describe)),
        peer_(nullptr),
        lane_(lane),
        lanes_(lanes) {}

  ~DpdkTransport() override {
    for (uint16_t i = 0; i < stashed_; ++i) rte_pktmbuf_free(stash_[i]);
  }

  // One lane per queue pair, when the spec asked for exactly `lanes` of
  // them (queues=N): lane k sends and receives on queue pair k. A frame
  // that arrives on another lane's queue is passed to its lane, so the
  // result is right whatever the peer does; it is fast when the peer sends
  // slot s on queue s mod lanes, as grid-switch's pipeline lcores do.
  absl::StatusOr<std::vector<std::unique_ptr<Transport>>> OpenLanes(uint32_t lanes) override {
    if (lanes_ != 1 || lanes < 2 || lanes != queues_ || !shared_->inboxes.empty()) {
      return Transport::OpenLanes(lanes);
    }
    for (uint32_t k = 0; k < lanes; ++k) {
      const std::string name = absl::StrFormat("grid_lane%d", k);
      rte_ring* r = rte_ring_create(name.c_str(), kInboxFrames, static_cast<int>(rte_socket_id()),
                                    RING_F_SC_DEQ);
      if (r == nullptr) {
        return absl::UnavailableError(
            absl::StrFormat("%s: lane %d's inbox: %s", describe_, k, rte_strerror(rte_errno)));
      }
      shared_->inboxes.push_back(r);
    }
    std::vector<std::unique_ptr<Transport>> out;
    for (uint32_t k = 0; k < lanes; ++k) {
      out.push_back(std::make_unique<DpdkTransport>(
          shared_, k, lanes,
          absl::StrFormat("%s, lane %d of %d on queue pair %d", describe_, k, lanes, k)));
    }
    return out;
  }

  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    size_t done = 0, any = 0;
    while (done < frames.size()) {
      rte_mbuf* m[kBurst];
      uint16_t n = 0;
      while (n < kBurst && done + n < frames.size()) {
        const absl::Span<const uint8_t> f = frames[done + n];
        rte_mbuf* b = rte_pktmbuf_alloc(pool_);
        if (b == nullptr) break;
        char* dst = rte_pktmbuf_append(b, static_cast<uint16_t>(f.size()));
        if (dst == nullptr) {
          rte_pktmbuf_free(b);
          break;
        }
        std::memcpy(dst, f.data(), f.size());
        m[n++] = b;
      }
      if (n == 0) break;
      // Bursts take the transmit queues in turn.
      const uint16_t sent = rte_eth_tx_burst(port_, NextTxQueue(), m, n);
      for (uint16_t i = sent; i < n; ++i) rte_pktmbuf_free(m[i]);
      done += n;
      any += sent;
      // What the queue refused is lost to it; loss recovery resends it.
    }
    if (any != 0 && peer_ != nullptr) peer_->Ring(static_cast<uint32_t>(any));
    return frames.size();
  }

  size_t SendBuilt(size_t count, size_t bytes,
                   absl::FunctionRef<void(size_t, absl::Span<uint8_t>)> build) override {
    size_t done = 0, any = 0;
    while (done < count) {
      rte_mbuf* m[kBurst];
      const auto n = static_cast<uint16_t>(std::min<size_t>(kBurst, count - done));
      if (bytes > UINT16_MAX || rte_pktmbuf_alloc_bulk(pool_, m, n) != 0) break;
      uint16_t built = 0;
      for (; built < n; ++built) {
        char* dst = rte_pktmbuf_append(m[built], static_cast<uint16_t>(bytes));
        if (dst == nullptr) break;
        build(done + built, {reinterpret_cast<uint8_t*>(dst), bytes});
      }
      // Never an empty burst: DPDK 24.11's memif reads the first mbuf of any.
      const uint16_t sent = built == 0 ? 0 : rte_eth_tx_burst(port_, NextTxQueue(), m, built);
      for (uint16_t i = sent; i < n; ++i) rte_pktmbuf_free(m[i]);
      any += sent;
      // As in Send, what the queue refused counts as taken and lost to it:
      // loss recovery resends it.
      done += built;
      if (built < n) break;
    }
    if (any != 0 && peer_ != nullptr) peer_->Ring(static_cast<uint32_t>(any));
    return done;
  }

  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    rte_mbuf* m[kBurst];
    uint16_t n = 0;
    if (stashed_ != 0) {  // what WaitReadable() found
      n = stashed_;
      std::copy(stash_, stash_ + n, m);
      stashed_ = 0;
    } else {
      n = Poll(m, static_cast<uint16_t>(std::min<size_t>(max, kBurst)));
    }
    for (uint16_t i = 0; i < n; ++i) {
      if (rte_pktmbuf_linearize(m[i]) == 0) {
        const absl::Span<const uint8_t> frame(rte_pktmbuf_mtod(m[i], const uint8_t*),
                                              rte_pktmbuf_data_len(m[i]));
        if (lanes_ > 1) {
          const uint32_t owner = LaneOf(frame, lanes_);
          if (owner != lane_) {
            // Another lane's: its inbox takes the mbuf (a full inbox drops
            // it, as a full queue would; its sender resends).
            util::TsanRelease(m[i]);
            if (rte_ring_enqueue(shared_->inboxes[owner], m[i]) != 0) rte_pktmbuf_free(m[i]);
            continue;
          }
        }
        on_frame(frame);
      }
      rte_pktmbuf_free(m[i]);
    }
    return n;
  }

  // Memif ports block on this process's doorbell, which the peer rings after
  // sending (transport/doorbell.h), once the peer has a bell. Other
  // poll-mode drivers have no descriptor to sleep on: they nap briefly, so
  // many processes can share two cores.
  void WaitReadable(absl::Duration timeout) override {
    if (stashed_ != 0 || (lanes_ > 1 && !rte_ring_empty(shared_->inboxes[lane_]))) return;
    if (bells_.own == nullptr || peer_ == nullptr || !peer_->Present()) {
      std::this_thread::sleep_for(
          absl::ToChronoMicroseconds(std::min(timeout, absl::Microseconds(50))));
      return;
    }
    if (peer_ != nullptr) peer_->Flush();
    // Yield a few times first: on a machine with more pollers than cores the
    // peer that will answer often runs meanwhile, and a yield costs less
    // than a sleep and a wake-up.
    for (int i = 0; i < kYieldsBeforeSleep; ++i) {
      sched_yield();
      stashed_ = Poll(stash_, kBurst);
      if (stashed_ != 0) return;
    }
    bells_.own->Arm(kWakeFrames);
    stashed_ = Poll(stash_, kBurst);
    if (stashed_ != 0) {
      bells_.own->Disarm();
    } else {
      bells_.own->Wait(timeout);
    }
  }
  std::string Describe() const override { return describe_; }

 private:
  // Frames one lane's inbox holds (a power of two; the ring keeps one free).
  static constexpr unsigned kInboxFrames = 4096;

  std::shared_ptr<DpdkPort> shared_;
  uint16_t port_;
  uint16_t first_;  // this transport's queue pairs: first_ .. first_ + queues_ - 1
  uint16_t queues_;
  uint16_t rx_queue_ = 0, tx_queue_ = 0;  // the next, counted from first_
  rte_mempool* pool_;
  std::string describe_;
  MemifBells bells_;
  PeerBell* peer_;
  uint32_t lane_ = 0, lanes_ = 1;
  rte_mbuf* stash_[kBurst];
  uint16_t stashed_ = 0;

  uint16_t NextTxQueue() {
    const uint16_t q = first_ + tx_queue_;
    tx_queue_ = static_cast<uint16_t>((tx_queue_ + 1) % queues_);
    return q;
  }

  // A lane's inbox first. Then every receive queue in turn (a NIC's RSS
  // spreads flows over them); the first that has frames gives this batch.
  uint16_t Poll(rte_mbuf** m, uint16_t max) {
    uint16_t n = 0;
    if (lanes_ > 1) {
      n = static_cast<uint16_t>(rte_ring_dequeue_burst(shared_->inboxes[lane_],
                                                       reinterpret_cast<void**>(m), max, nullptr));
      for (uint16_t i = 0; i < n; ++i) util::TsanAcquire(m[i]);
      if (n != 0) return n;
    }
    for (uint16_t tries = 0; n == 0 && tries < queues_; ++tries) {
      n = rte_eth_rx_burst(port_, first_ + rx_queue_, m, max);
      rx_queue_ = static_cast<uint16_t>((rx_queue_ + 1) % queues_);
    }
    return n;
  }
};

}  // namespace

namespace {

// "dpdk:EAL ARGUMENTS [-- port=N queues=N loss=P dup=P reorder=P seed=N]".
struct DpdkSpec {
  std::vector<std::string> eal = {"grid"};
  uint16_t port = 0;
  uint16_t queues = 1;
  LinkFaults faults;
};

absl::StatusOr<DpdkSpec> ParseDpdkSpec(std::string_view spec) {
  const std::string_view args = spec.substr(spec.find(':') + 1);
  DpdkSpec out;
  bool options = false;
  for (absl::string_view a :
       absl::StrSplit(absl::string_view(args.data(), args.size()), ' ', absl::SkipEmpty())) {
    if (a == "--") {
      options = true;
      continue;
    }
    if (!options) {
      out.eal.emplace_back(a);
      continue;
    }
    uint32_t p = 0;
    const size_t eq = a.find('=');
    const absl::string_view key = a.substr(0, eq);
    const absl::string_view value = eq == absl::string_view::npos ? "" : a.substr(eq + 1);
    auto fault = ParseFault(std::string_view(key.data(), key.size()),
                            std::string_view(value.data(), value.size()), out.faults);
    if (key == "port" && absl::SimpleAtoi(value, &p) && p <= 65535) {
      out.port = static_cast<uint16_t>(p);
    } else if (key == "queues" && absl::SimpleAtoi(value, &p) && p >= 1 && p <= kMaxQueues) {
      out.queues = static_cast<uint16_t>(p);
    } else if (!fault.ok() || !*fault) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "transport \"%s\": after --: port=N, queues=N, loss=P, dup=P, reorder=P, seed=N; not "
          "\"%s\"",
          spec, std::string(a)));
    }
  }
  return out;
}

// The mbuf pool and the port's queue pairs, started; the error says what
// failed.
absl::StatusOr<rte_mempool*> StartPort(uint16_t port, uint16_t queues) {
  // Every receive queue holds its descriptors' mbufs, and sends need their own.
  const unsigned mbufs = std::max(8191u, queues * 2u * kPortDescriptors + 4095u);
  rte_mempool* pool = rte_pktmbuf_pool_create("grid_transport", mbufs, 256, 0, GridMbufDataRoom(),
                                              static_cast<int>(rte_socket_id()));
  if (pool == nullptr)
    return absl::UnavailableError(std::string("mbuf pool: ") + rte_strerror(rte_errno));
  if (absl::Status s = StartQueues(port, queues, pool); !s.ok()) {
    rte_mempool_free(pool);
    return s;
  }
  return pool;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> OpenDpdk(std::string_view spec) {
  auto parsed = ParseDpdkSpec(spec);
  if (!parsed.ok()) return parsed.status();
  if (g_eal_in_use.exchange(true)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("transport \"%s\": this process already has a DPDK transport", spec));
  }
  std::vector<char*> argv;
  for (std::string& s : parsed->eal) argv.push_back(s.data());
  if (absl::Status s =
          WaitForMemifServers(static_cast<int>(argv.size()), argv.data(), absl::Seconds(60));
      !s.ok()) {
    g_eal_in_use = false;
    return s;
  }
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    g_eal_in_use = false;
    return absl::UnavailableError(
        absl::StrFormat("transport \"%s\": EAL initialisation: %s", spec, rte_strerror(rte_errno)));
  }
  auto fail = [&](const std::string& what) {
    rte_eal_cleanup();
    g_eal_in_use = false;
    return absl::UnavailableError(absl::StrFormat("transport \"%s\": %s", spec, what));
  };
  const uint16_t port = parsed->port, queues = parsed->queues;
  // rte_eal_init succeeds even when a --vdev failed: check the port exists.
  if (!rte_eth_dev_is_valid_port(port)) {
    return fail(absl::StrFormat("no DPDK port %d (%d available; check --vdev/-a)", port,
                                rte_eth_dev_count_avail()));
  }
  auto pool = StartPort(port, queues);
  if (!pool.ok()) return fail(std::string(pool.status().message()));
  // Only for the driver's name in what Describe() says: "?" where the
  // port cannot say.
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port, &info) != 0) info.driver_name = nullptr;
  // rte_eal_init may have permuted argv: parse the spec's own copy.
  std::vector<char*> eal_args;
  for (std::string& s : parsed->eal) eal_args.push_back(s.data());
  const uint16_t ports[] = {port};
  if (absl::Status s = AwaitMemifClientLinks(static_cast<int>(eal_args.size()), eal_args.data(),
                                             ports, absl::Seconds(60));
      !s.ok()) {
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);
    rte_mempool_free(*pool);
    return fail(std::string(s.message()));
  }
  MemifBells bells = OpenMemifBells(static_cast<int>(eal_args.size()), eal_args.data(), ports);
  std::string describe = absl::StrFormat("dpdk port %d (%s, %d queue pairs%s)", port,
                                         info.driver_name ? info.driver_name : "?", queues,
                                         bells.own != nullptr ? ", doorbell" : "");
  auto shared = std::make_shared<DpdkPort>();
  shared->id = port;
  shared->queues = queues;
  shared->pool = *pool;
  std::unique_ptr<Transport> t(
      new DpdkTransport(std::move(shared), std::move(describe), std::move(bells)));
  if (parsed->faults.any()) {
    t = std::make_unique<ImpairedTransport>(std::move(t), parsed->faults);
  }
  return t;
}

}  // namespace grid::transport
