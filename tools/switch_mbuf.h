// grid-switch's DPDK frames: the switch runtime's Ops over mbufs
// (lib/switch/runtime.h), and the hand-over of mbufs between lcores.
#ifndef GRID_TOOLS_SWITCH_MBUF_H_
#define GRID_TOOLS_SWITCH_MBUF_H_

#include <rte_mbuf.h>

#include <cstring>
#include <optional>

#include "absl/types/span.h"
#include "util/tsan.h"

namespace grid::tools {

// Every mbuf this switch gives back to the pool goes through here: another
// lcore may take it out next (util/tsan.h).
inline void FreeMbuf(rte_mbuf* m) {
  util::TsanRelease(m);
  rte_pktmbuf_free(m);
}

// An mbuf from the pool or from another lcore's ring (util/tsan.h).
inline rte_mbuf* Taken(rte_mbuf* m) {
  if (m != nullptr) util::TsanAcquire(m);
  return m;
}

// The runtime's frames are mbufs: forwarded frames go out in their own mbuf
// (its refcount raised for each further use), built ones are copied into
// mbufs from the pool.
struct MbufOps {
  using Frame = rte_mbuf*;
  rte_mempool* pool = nullptr;

  std::optional<absl::Span<uint8_t>> Data(Frame m) {
    if (rte_pktmbuf_linearize(m) != 0) return std::nullopt;  // no room in the pool
    return absl::Span<uint8_t>(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m));
  }
  size_t Length(const Frame& m) const { return rte_pktmbuf_pkt_len(m); }
  void Trim(Frame m, size_t length) {
    rte_pktmbuf_data_len(m) = static_cast<uint16_t>(length);
    m->pkt_len = static_cast<uint32_t>(length);
  }
  std::optional<Frame> Share(Frame m) {
    rte_mbuf_refcnt_update(m, 1);
    return m;
  }
  std::optional<Frame> Make(absl::Span<const uint8_t> bytes) {
    rte_mbuf* o = Taken(rte_pktmbuf_alloc(pool));
    if (o == nullptr) return std::nullopt;
    char* dst = rte_pktmbuf_append(o, static_cast<uint16_t>(bytes.size()));
    if (dst == nullptr) {
      FreeMbuf(o);
      return std::nullopt;
    }
    std::memcpy(dst, bytes.data(), bytes.size());
    return o;
  }
  std::optional<Frame> Copy(const Frame& m) {
    rte_mbuf* c = Taken(rte_pktmbuf_copy(m, pool, 0, UINT32_MAX));
    if (c == nullptr) return std::nullopt;
    return c;
  }
  void Free(Frame m) { FreeMbuf(m); }
};

}  // namespace grid::tools

#endif  // GRID_TOOLS_SWITCH_MBUF_H_
