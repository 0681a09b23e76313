#include "ring_allreduce.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "grid/wire.h"

namespace grid::bench {
namespace {

constexpr uint16_t kRingPort = 47000;  // outside GRID's range: routed as plain IPv4
constexpr size_t kChunkFloats = 256;
constexpr size_t kHeaderBytes = 12;  // op u32, step u16, chunk u32, count u16
constexpr uint16_t kAckCount = 0xffff;
constexpr size_t kWindow = 64;
constexpr absl::Duration kRto = absl::Milliseconds(30);

void Put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
void Put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint16_t Get16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint32_t Get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Writes Ethernet/IPv4/UDP for `payload` bytes; returns the frame size.
size_t Frame(std::vector<uint8_t>& f, const host_config::WorkerConfig& self, uint32_t dst,
             size_t payload) {
  const size_t size = wire::kGridOffset + payload;
  f.assign(size, 0);
  wire::EthernetHeader eth{};
  eth.dst = self.next_hop_mac;
  eth.src = self.mac;
  eth.ether_type = wire::HostToNet16(wire::kEtherTypeIpv4);
  std::memcpy(f.data(), &eth, sizeof(eth));
  wire::Ipv4Header ip{};
  ip.version_ihl = 0x45;
  ip.total_length = wire::HostToNet16(static_cast<uint16_t>(size - wire::kIpv4Offset));
  ip.ttl = 64;
  ip.protocol = wire::kIpProtocolUdp;
  ip.src = wire::HostToNet32(self.ip);
  ip.dst = wire::HostToNet32(dst);
  ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
  std::memcpy(f.data() + wire::kIpv4Offset, &ip, sizeof(ip));
  wire::UdpHeader udp{};
  udp.src_port = wire::HostToNet16(kRingPort);
  udp.dst_port = wire::HostToNet16(kRingPort);
  udp.length = wire::HostToNet16(static_cast<uint16_t>(size - wire::kUdpOffset));
  std::memcpy(f.data() + wire::kUdpOffset, &udp, sizeof(udp));
  return size;
}

}  // namespace

Ring::Ring(const host_config::WorkerConfig& self, std::vector<RingPeer> peers, Transport* transport)
    : self_(self),
      peers_(std::move(peers)),
      transport_(transport),
      rank_(self.rank),
      world_(self.world),
      tx_(32) {}

void Ring::Flush() {
  if (tx_count_ == 0) return;
  std::vector<absl::Span<const uint8_t>> spans(tx_.begin(), tx_.begin() + tx_count_);
  transport_->Send(spans);
  for (const auto& s : spans) bytes_sent_ += s.size();
  tx_count_ = 0;
}

void Ring::SendData(uint16_t step, uint32_t chunk, const float* values, uint16_t n) {
  if (tx_count_ == tx_.size()) Flush();
  std::vector<uint8_t>& f = tx_[tx_count_++];
  Frame(f, self_, peers_[(rank_ + 1) % world_].ip, kHeaderBytes + n * 4u);
  uint8_t* p = f.data() + wire::kGridOffset;
  Put32(p, op_);
  Put16(p + 4, step);
  Put32(p + 6, chunk);
  Put16(p + 10, n);
  std::memcpy(p + kHeaderBytes, values, n * 4u);
}

void Ring::SendAck(uint32_t op, uint16_t step, uint32_t chunk) {
  if (tx_count_ == tx_.size()) Flush();
  std::vector<uint8_t>& f = tx_[tx_count_++];
  Frame(f, self_, peers_[(rank_ + world_ - 1) % world_].ip, kHeaderBytes);
  uint8_t* p = f.data() + wire::kGridOffset;
  Put32(p, op);
  Put16(p + 4, step);
  Put32(p + 6, chunk);
  Put16(p + 10, kAckCount);
}

void Ring::Poll(size_t count) {
  transport_->Receive(32, [&](absl::Span<const uint8_t> f) {
    if (f.size() < wire::kGridOffset + kHeaderBytes) return;
    uint16_t port;
    std::memcpy(&port, f.data() + wire::kUdpOffset + offsetof(wire::UdpHeader, dst_port), 2);
    if (wire::NetToHost16(port) != kRingPort) return;
    const uint8_t* p = f.data() + wire::kGridOffset;
    const uint32_t op = Get32(p);
    const uint16_t step = Get16(p + 4);
    const uint32_t chunk = Get32(p + 6);
    const uint16_t n = Get16(p + 10);
    if (op + 1 == op_ && n != kAckCount) {
      // The previous operation's data whose ack was lost: the neighbour is
      // still waiting for it.
      SendAck(op, step, chunk);
      return;
    }
    if (op != op_) return;
    if (step >= got_.size() || chunk >= chunks_per_block_) return;
    if (n == kAckCount) {
      sent_[step][chunk].acked = true;
      return;
    }
    if (f.size() < wire::kGridOffset + kHeaderBytes + n * 4u || n > kChunkFloats) return;
    SendAck(op_, step, chunk);  // every copy, so a lost ack is repaired
    if (got_[step][chunk]) return;
    got_[step][chunk] = true;
    std::memcpy(staged_[step].data() + chunk * kChunkFloats, p + kHeaderBytes, n * 4u);
  });
  (void)count;
}

absl::Status Ring::AllReduce(float* data, size_t count, absl::Duration timeout) {
  ++op_;
  const int steps = 2 * (world_ - 1);
  block_ = (count + world_ - 1) / world_;
  chunks_per_block_ = std::max<size_t>(1, (block_ + kChunkFloats - 1) / kChunkFloats);
  staged_.assign(steps, std::vector<float>(chunks_per_block_ * kChunkFloats));
  got_.assign(steps, std::vector<bool>(chunks_per_block_, false));
  sent_.assign(steps, std::vector<Chunk>(chunks_per_block_));
  auto block_range = [&](int b) {
    const size_t begin = std::min(count, static_cast<size_t>(b) * block_);
    return std::pair{begin, std::min(count, begin + block_)};
  };
  const absl::Time deadline = absl::Now() + timeout;
  for (int step = 0; step < steps; ++step) {
    // Reduce-scatter sends block (r - step), allgather block (r + 1 - step').
    const int send_block = ((rank_ - step) % world_ + world_) % world_;
    const int recv_block = ((rank_ - step - 1) % world_ + world_) % world_;
    const auto [sb, se] = block_range(send_block);
    const size_t n_send = se - sb;
    const size_t chunks = (n_send + kChunkFloats - 1) / kChunkFloats;
    for (size_t c = chunks; c < chunks_per_block_; ++c) sent_[step][c].acked = true;
    const auto [rb, re] = block_range(recv_block);
    const size_t recv_chunks = (re - rb + kChunkFloats - 1) / kChunkFloats;
    for (size_t c = recv_chunks; c < chunks_per_block_; ++c) got_[step][c] = true;
    size_t next = 0;
    while (true) {
      const absl::Time now = absl::Now();
      if (now > deadline) {
        return absl::DeadlineExceededError(
            absl::StrFormat("ring rank %d: step %d of %d timed out", rank_, step, steps));
      }
      size_t in_flight = 0, acked = 0;
      for (size_t c = 0; c < chunks; ++c) {
        Chunk& k = sent_[step][c];
        if (k.acked) {
          ++acked;
          continue;
        }
        if (k.sent != absl::InfinitePast()) {
          if (now - k.sent < kRto) {
            ++in_flight;
            continue;
          }
          ++retransmissions_;
        } else if (c != next || in_flight >= kWindow) {
          continue;
        } else {
          ++next;
        }
        const size_t begin = sb + c * kChunkFloats;
        SendData(static_cast<uint16_t>(step), static_cast<uint32_t>(c), data + begin,
                 static_cast<uint16_t>(std::min(kChunkFloats, se - begin)));
        k.sent = now;
        ++in_flight;
      }
      Flush();
      Poll(count);
      Flush();
      const bool received =
          std::all_of(got_[step].begin(), got_[step].end(), [](bool b) { return b; });
      if (acked == chunks && received) break;
      if (in_flight >= kWindow || next == chunks) transport_->WaitReadable(absl::Microseconds(200));
    }
    // Apply what came in: add during reduce-scatter, copy during allgather.
    const float* in = staged_[step].data();
    if (step < world_ - 1) {
      for (size_t i = rb; i < re; ++i) data[i] += in[i - rb];
    } else {
      std::copy(in, in + (re - rb), data + rb);
    }
  }
  return absl::OkStatus();
}

void Ring::Linger(absl::Duration d) {
  const absl::Time until = absl::Now() + d;
  ++op_;  // so the last operation's stragglers are acknowledged
  while (absl::Now() < until) {
    Poll(0);
    Flush();
    transport_->WaitReadable(absl::Microseconds(500));
  }
}

}  // namespace grid::bench
