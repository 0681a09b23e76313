// The baseline allreduce_perf compares GRID with: a host-based ring allreduce
// (reduce-scatter, then allgather; what NCCL and Gloo do) over the same
// transport and fabric. Frames are plain IPv4/UDP to the neighbour's address,
// which switches forward by their IPv4 routes. Each chunk is acknowledged,
// and unacknowledged chunks are resent, so the ring survives the drops of
// rate-limited queues.
#ifndef GRID_BENCH_RING_ALLREDUCE_H_
#define GRID_BENCH_RING_ALLREDUCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grid/control.h"
#include "grid/transport.h"

namespace grid::bench {

struct RingPeer {
  uint32_t ip = 0;
};

class Ring {
 public:
  // `self` is this rank's worker config (its address and first hop);
  // `peers[r]` every rank's address.
  Ring(const host_config::WorkerConfig& self, std::vector<RingPeer> peers, Transport* transport);

  // Sums `data` (float32) across the ring, in place.
  absl::Status AllReduce(float* data, size_t count, absl::Duration timeout);

  // After the last operation: keeps answering the neighbour's resends for a
  // while (a lost ack would leave it waiting).
  void Linger(absl::Duration d);

  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t retransmissions() const { return retransmissions_; }

 private:
  struct Chunk {
    absl::Time sent = absl::InfinitePast();
    bool acked = false;
  };
  void SendData(uint16_t step, uint32_t chunk, const float* values, uint16_t n);
  void SendAck(uint32_t op, uint16_t step, uint32_t chunk);
  void Poll(size_t count);
  void Flush();

  host_config::WorkerConfig self_;
  std::vector<RingPeer> peers_;
  Transport* transport_;
  int rank_, world_;
  uint32_t op_ = 0;
  // Per operation and step: received chunks (staged), and sent chunks' acks.
  std::vector<std::vector<float>> staged_;
  std::vector<std::vector<bool>> got_;
  std::vector<std::vector<Chunk>> sent_;
  size_t block_ = 0, chunks_per_block_ = 0;
  std::vector<std::vector<uint8_t>> tx_;
  size_t tx_count_ = 0;
  uint64_t bytes_sent_ = 0, retransmissions_ = 0;
};

}  // namespace grid::bench

#endif  // GRID_BENCH_RING_ALLREDUCE_H_
