// Kernel UDP sockets, moved in batches with sendmmsg/recvmmsg.
#include "transport/udp.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "transport/impaired.h"

namespace grid::transport {
namespace {

constexpr size_t kBatch = 32;
constexpr size_t kBufferBytes = wire::kMaxFrameBytes + 64;
// A link's frames go out as UDP GSO datagrams (one send, many frames of one
// size) and come in coalesced by UDP GRO: per frame, the kernel's work is a
// copy, not a datagram. At most this many frames per datagram, and 64 KiB.
constexpr size_t kMaxSegments = 64;
constexpr size_t kMaxDatagram = 65507;
constexpr size_t kGroBytes = 65535;

std::string Format(const sockaddr_in& a) {
  return absl::StrFormat("%s:%d", wire::IpToString(ntohl(a.sin_addr.s_addr)), ntohs(a.sin_port));
}

// A socket for `spec`, bound. `offload` (links only): asks for UDP GSO and
// GRO, and says whether the kernel has them. `reuseport`: one of a group of
// sockets on the same address (lanes).
absl::StatusOr<int> OpenSocket(const UdpSpec& spec, bool reuseport, bool* offload);

class UdpTransport final : public Transport {
 public:
  // `offload`: the socket takes UDP_SEGMENT and delivers UDP_GRO (links).
  // `lane`: "" or which lane of a group of sockets this is, for Describe.
  UdpTransport(int fd, UdpSpec spec, bool offload, std::string lane = "")
      : fd_(fd), spec_(std::move(spec)), offload_(offload), lane_(std::move(lane)) {
    const size_t room = offload_ ? kGroBytes : kBufferBytes;
    rx_store_.resize(kBatch * room);
    for (size_t i = 0; i < kBatch; ++i) {
      rx_iov_[i] = {rx_store_.data() + i * room, room};
      rx_msg_[i].msg_hdr.msg_iov = &rx_iov_[i];
      rx_msg_[i].msg_hdr.msg_iovlen = 1;
      rx_msg_[i].msg_hdr.msg_name = &rx_from_[i];
      rx_msg_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    }
    if (offload_) gso_iov_.resize(kBatch * kMaxSegments);
  }
  ~UdpTransport() override {
    if (fd_ >= 0) ::close(fd_);
  }

  // Lanes, for GRID datagrams (udp:): `lanes` sockets in a SO_REUSEPORT
  // group on this one's address, with a classic BPF program that picks the
  // socket by the datagram's slot field mod `lanes` (the kernel runs it on
  // the UDP payload, the GRID header onwards). This socket closes first, so
  // the address is free to bind again. Links (udp-link) have none: their
  // peers send runs of frames as one GSO datagram, which the kernel steers
  // whole on loopback, so the rank's threads share the link's socket.
  absl::StatusOr<std::vector<std::unique_ptr<Transport>>> OpenLanes(uint32_t lanes) override {
    if (spec_.link) return Transport::OpenLanes(lanes);
    // The address the socket has (port 0 in the spec: the one the kernel
    // chose), for every lane.
    UdpSpec spec = spec_;
    socklen_t length = sizeof(spec.bind);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&spec.bind), &length);
    ::close(fd_);
    fd_ = -1;
    std::vector<int> fds;
    auto fail = [&](absl::Status s) {
      for (int fd : fds) ::close(fd);
      return s;
    };
    for (uint32_t k = 0; k < lanes; ++k) {
      auto fd = OpenSocket(spec, /*reuseport=*/true, nullptr);
      if (!fd.ok()) return fail(fd.status());
      fds.push_back(*fd);
    }
    const uint32_t at = offsetof(wire::WireHeader, slot);
    sock_filter code[] = {
        {BPF_LD | BPF_H | BPF_ABS, 0, 0, at},  // the slot (a short frame: lane 0)
        {BPF_ALU | BPF_MOD | BPF_K, 0, 0, lanes},
        {BPF_RET | BPF_A, 0, 0, 0},
    };
    sock_fprog prog{static_cast<unsigned short>(std::size(code)), code};
    if (::setsockopt(fds[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) != 0) {
      return fail(absl::UnavailableError(
          absl::StrFormat("udp %s: steering %d lanes by slot (SO_ATTACH_REUSEPORT_CBPF): %s",
                          Format(spec.bind), lanes, std::strerror(errno))));
    }
    std::vector<std::unique_ptr<Transport>> out;
    for (uint32_t k = 0; k < lanes; ++k) {
      out.push_back(std::make_unique<UdpTransport>(
          fds[k], spec, false, absl::StrFormat(" (lane %d of %d, steered by slot)", k, lanes)));
    }
    return out;
  }

  size_t Send(absl::Span<const absl::Span<const uint8_t>> frames) override {
    if (gso_) return SendSegmented(frames);
    return SendEach(frames);
  }

  // One datagram per frame.
  size_t SendEach(absl::Span<const absl::Span<const uint8_t>> frames) {
    size_t done = 0;
    while (done < frames.size()) {
      const size_t n = std::min(kBatch, frames.size() - done);
      size_t built = 0;
      for (size_t i = 0; i < n; ++i) {
        const absl::Span<const uint8_t> f = frames[done + i];
        // A link carries any Ethernet frame; a datagram needs a GRID header.
        if (f.size() < (spec_.link ? sizeof(wire::EthernetHeader) : wire::kPayloadOffset)) continue;
        mmsghdr& m = tx_msg_[built];
        m = {};
        if (spec_.link) {
          tx_iov_[built] = {const_cast<uint8_t*>(f.data()), f.size()};
          tx_to_[built] = spec_.peer;
        } else {
          // The GRID datagram, to the frame's destination (or its route).
          uint32_t dst = 0;
          uint16_t port = 0;
          std::memcpy(&dst, f.data() + wire::kIpv4Offset + offsetof(wire::Ipv4Header, dst), 4);
          std::memcpy(&port, f.data() + wire::kUdpOffset + offsetof(wire::UdpHeader, dst_port), 2);
          sockaddr_in to{};
          to.sin_family = AF_INET;
          to.sin_addr.s_addr = dst;  // both in network order already
          to.sin_port = port;
          if (auto r = spec_.routes.find(ntohl(dst)); r != spec_.routes.end()) to = r->second;
          tx_to_[built] = to;
          tx_iov_[built] = {const_cast<uint8_t*>(f.data()) + wire::kGridOffset,
                            f.size() - wire::kGridOffset};
        }
        m.msg_hdr.msg_iov = &tx_iov_[built];
        m.msg_hdr.msg_iovlen = 1;
        m.msg_hdr.msg_name = &tx_to_[built];
        m.msg_hdr.msg_namelen = sizeof(sockaddr_in);
        ++built;
      }
      SendMessages(built);
      done += n;
    }
    return frames.size();
  }

  size_t Receive(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) override {
    if (offload_) return ReceiveCoalesced(max, on_frame);
    const unsigned want = static_cast<unsigned>(std::min(max, kBatch));
    for (unsigned i = 0; i < want; ++i) rx_msg_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    const int r = ::recvmmsg(fd_, rx_msg_.data(), want, MSG_DONTWAIT, nullptr);
    if (r <= 0) return 0;
    for (int i = 0; i < r; ++i) {
      const size_t len = rx_msg_[i].msg_len;
      uint8_t* buf = static_cast<uint8_t*>(rx_iov_[i].iov_base);
      if (spec_.link) {
        // A link has one other end: anything else is dropped before it is
        // read (docs/security.md).
        if (rx_from_[i].sin_addr.s_addr != spec_.peer.sin_addr.s_addr ||
            rx_from_[i].sin_port != spec_.peer.sin_port) {
          ++foreign_;
          continue;
        }
        on_frame({buf, len});
        continue;
      }
      // A datagram: give it back as the frame it would have been.
      wire::DatagramView d;
      if (wire::ParseDatagram({buf, len}, &d) != wire::WireError::kOk) {
        ++malformed_;
        continue;
      }
      wire::FrameAddress a;
      a.src_ip = ntohl(rx_from_[i].sin_addr.s_addr);
      for (const auto& [ip, addr] : spec_.routes) {
        if (addr.sin_addr.s_addr == rx_from_[i].sin_addr.s_addr &&
            addr.sin_port == rx_from_[i].sin_port) {
          a.src_ip = ip;
        }
      }
      a.dst_ip = ntohl(spec_.bind.sin_addr.s_addr);
      // The socket's own ports need not be GRID's (an emulation binds any
      // port); the rebuilt frame carries GRID's, as on a real network.
      a.src_port = wire::kUdpPortBase;
      a.dst_port = wire::kUdpPortBase;
      const size_t payload = size_t{d.header.num_elements} * wire::kElementBytes;
      if (!wire::EncodeFrame(a, d.header, {d.payload, payload}, absl::MakeSpan(frame_)).ok()) {
        ++malformed_;
        continue;
      }
      on_frame({frame_.data(), wire::FrameBytes(d.header.num_elements)});
    }
    return static_cast<size_t>(r);
  }

  void WaitReadable(absl::Duration timeout) override {
    if (rx_next_ < rx_count_) return;  // coalesced frames not handed out yet
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout))));
  }

  int PollFd() const override { return fd_; }
  bool datagrams() const override { return !spec_.link; }
  uint64_t foreign_frames() const override { return foreign_; }

  std::string Describe() const override {
    return spec_.link ? absl::StrFormat("udp-link %s -> %s%s%s", Format(spec_.bind),
                                        Format(spec_.peer), offload_ ? " (gso, gro)" : "", lane_)
                      : absl::StrFormat("udp %s%s", Format(spec_.bind), lane_);
  }

 private:
  // Sends tx_msg_[0, built). A full socket buffer loses the rest to the
  // network (loss recovery resends it); another error belongs to the first
  // message only (an unreachable destination): it is skipped. Returns
  // `built`, or the index of a segmented datagram the path refused.
  size_t SendMessages(size_t built) {
    size_t sent = 0;
    while (sent < built) {
      const int r = ::sendmmsg(fd_, tx_msg_.data() + sent, static_cast<unsigned>(built - sent), 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) break;
        if (tx_msg_[sent].msg_hdr.msg_controllen != 0 &&
            (errno == EINVAL || errno == EMSGSIZE || errno == EIO)) {
          return sent;
        }
        ++sent;
        continue;
      }
      sent += static_cast<size_t>(r);
    }
    return built;
  }

  // Runs of frames of one size, each run (up to kMaxSegments frames and
  // kMaxDatagram bytes) one datagram that the kernel cuts at the frame size.
  size_t SendSegmented(absl::Span<const absl::Span<const uint8_t>> frames) {
    size_t at = 0;
    while (at < frames.size()) {
      size_t built = 0;
      while (built < kBatch && at < frames.size()) {
        const size_t size = frames[at].size();
        if (size < sizeof(wire::EthernetHeader)) {
          ++at;
          continue;
        }
        iovec* iov = gso_iov_.data() + built * kMaxSegments;
        size_t k = 0;
        while (at < frames.size() && k < kMaxSegments && frames[at].size() == size &&
               (k + 1) * size <= kMaxDatagram) {
          iov[k++] = {const_cast<uint8_t*>(frames[at].data()), size};
          ++at;
        }
        mmsghdr& m = tx_msg_[built];
        m = {};
        tx_to_[built] = spec_.peer;
        m.msg_hdr.msg_name = &tx_to_[built];
        m.msg_hdr.msg_namelen = sizeof(sockaddr_in);
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = k;
        if (k > 1) {
          cmsghdr* c = reinterpret_cast<cmsghdr*>(tx_ctrl_[built].data());
          c->cmsg_level = SOL_UDP;
          c->cmsg_type = UDP_SEGMENT;
          c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
          const auto segment = static_cast<uint16_t>(size);
          std::memcpy(CMSG_DATA(c), &segment, sizeof(segment));
          m.msg_hdr.msg_control = c;
          m.msg_hdr.msg_controllen = CMSG_SPACE(sizeof(uint16_t));
        }
        ++built;
      }
      if (const size_t refused = SendMessages(built); refused < built) {
        // The path cannot take segmented datagrams (a frame wider than its
        // MTU): from here on, one datagram per frame.
        gso_ = false;
        std::vector<absl::Span<const uint8_t>> rest;
        for (size_t m = refused; m < built; ++m) {
          const msghdr& h = tx_msg_[m].msg_hdr;
          for (size_t k = 0; k < h.msg_iovlen; ++k) {
            rest.emplace_back(static_cast<const uint8_t*>(h.msg_iov[k].iov_base),
                              h.msg_iov[k].iov_len);
          }
        }
        for (; at < frames.size(); ++at) rest.push_back(frames[at]);
        SendEach(rest);
        return frames.size();
      }
    }
    return frames.size();
  }

  // Hands out up to `max` frames, cutting each coalesced datagram at its
  // segment size; what is left waits for the next call (WaitReadable then
  // returns at once).
  size_t ReceiveCoalesced(size_t max, absl::FunctionRef<void(absl::Span<const uint8_t>)> on_frame) {
    size_t n = 0;
    while (n < max) {
      if (rx_next_ == rx_count_) {
        if (n != 0) break;  // one system call per Receive
        for (size_t i = 0; i < kBatch; ++i) {
          rx_msg_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
          rx_msg_[i].msg_hdr.msg_control = rx_ctrl_[i].data();
          rx_msg_[i].msg_hdr.msg_controllen = rx_ctrl_[i].size();
        }
        const int r = ::recvmmsg(fd_, rx_msg_.data(), kBatch, MSG_DONTWAIT, nullptr);
        if (r <= 0) break;
        rx_count_ = static_cast<size_t>(r);
        rx_next_ = 0;
        rx_off_ = 0;
        for (size_t i = 0; i < rx_count_; ++i) {
          rx_segment_[i] = rx_msg_[i].msg_len;
          for (cmsghdr* c = CMSG_FIRSTHDR(&rx_msg_[i].msg_hdr); c != nullptr;
               c = CMSG_NXTHDR(&rx_msg_[i].msg_hdr, c)) {
            if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
              int segment = 0;
              std::memcpy(&segment, CMSG_DATA(c), sizeof(segment));
              if (segment > 0) rx_segment_[i] = static_cast<size_t>(segment);
            }
          }
          // A link has one other end: anything else is dropped before it
          // is read (docs/security.md).
          if (rx_from_[i].sin_addr.s_addr != spec_.peer.sin_addr.s_addr ||
              rx_from_[i].sin_port != spec_.peer.sin_port) {
            foreign_ +=
                (rx_msg_[i].msg_len + rx_segment_[i] - 1) / std::max<size_t>(1, rx_segment_[i]);
            rx_msg_[i].msg_len = 0;
          }
        }
      }
      const size_t len = rx_msg_[rx_next_].msg_len;
      if (rx_off_ >= len) {
        ++rx_next_;
        rx_off_ = 0;
        continue;
      }
      const size_t take = std::min(rx_segment_[rx_next_], len - rx_off_);
      on_frame({static_cast<uint8_t*>(rx_iov_[rx_next_].iov_base) + rx_off_, take});
      rx_off_ += take;
      ++n;
    }
    return n;
  }

  int fd_;
  UdpSpec spec_;
  const bool offload_;
  const std::string lane_;
  bool gso_ = offload_;            // off once the path refused a segmented datagram
  std::vector<uint8_t> rx_store_;  // kBatch buffers
  std::vector<iovec> gso_iov_;     // kMaxSegments per datagram
  // Control messages, aligned as cmsghdr must be.
  template <size_t kBytes>
  struct alignas(cmsghdr) Control {
    char bytes[kBytes];
    char* data() { return bytes; }
    static constexpr size_t size() { return kBytes; }
  };
  std::array<Control<CMSG_SPACE(sizeof(uint16_t))>, kBatch> tx_ctrl_{};
  std::array<Control<CMSG_SPACE(sizeof(int))>, kBatch> rx_ctrl_{};
  std::array<size_t, kBatch> rx_segment_{};
  size_t rx_count_ = 0, rx_next_ = 0, rx_off_ = 0;  // coalesced frames not handed out
  std::array<iovec, kBatch> rx_iov_{}, tx_iov_{};
  std::array<mmsghdr, kBatch> rx_msg_{}, tx_msg_{};
  std::array<sockaddr_in, kBatch> rx_from_{}, tx_to_{};
  std::array<uint8_t, kBufferBytes> frame_{};
  uint64_t malformed_ = 0;
  uint64_t foreign_ = 0;
};

}  // namespace

namespace {

absl::StatusOr<int> OpenSocket(const UdpSpec& spec, bool reuseport, bool* offload) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrFormat("udp socket: %s", std::strerror(errno)));
  const int buffer = 8 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  // GRID datagrams go out with no UDP checksum, as the wire protocol says
  // (switches rewrite payloads and addresses; the IPv4 header is checked).
  // A link's datagrams carry whole frames (the emulation's own wrapping):
  // they keep the kernel's checksum (free on loopback and offloading NICs),
  // which UDP GSO requires, and use GSO and GRO where the kernel has them.
  if (spec.link) {
    if (offload != nullptr) {
      const int on = 1;
      const int segment = 1024;
      *offload = ::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &segment, sizeof(segment)) == 0 &&
                 ::setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof(on)) == 0;
      const int none = 0;
      if (*offload) ::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &none, sizeof(none));
    }
  } else {
    const int no_check = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_NO_CHECK, &no_check, sizeof(no_check));
  }
  const int on = 1;
  if (reuseport && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0) {
    const int e = errno;
    ::close(fd);
    return absl::UnavailableError(
        absl::StrFormat("udp %s: SO_REUSEPORT: %s", Format(spec.bind), std::strerror(e)));
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&spec.bind), sizeof(spec.bind)) != 0) {
    const int e = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrFormat(
        "udp bind %s: %s%s", Format(spec.bind), std::strerror(e),
        e == EADDRINUSE ? ": another process holds this port, most likely a rank, switch or "
                          "root of a job still running on this fabric (or a communicator of "
                          "this rank not destroyed yet); end it, or give this job other ports "
                          "(grid-controller --udp-base-port)"
                        : ""));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> OpenUdp(const UdpSpec& spec) {
  bool offload = false;
  auto fd = OpenSocket(spec, /*reuseport=*/false, &offload);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<Transport> t(new UdpTransport(*fd, spec, offload));
  if (spec.faults.any()) t = std::make_unique<ImpairedTransport>(std::move(t), spec.faults);
  return t;
}

}  // namespace grid::transport
