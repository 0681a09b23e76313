#include "p4/traffic.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "util/random.h"

namespace grid::testing {
namespace {

using topology::NodeId;
using wire::FrameAddress;
using wire::Header;
using wire::MessageType;

constexpr uint16_t kOtherJob = 8;  // a job no switch knows

uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return wire::NetToHost16(v);
}
void Store16(uint8_t* p, uint16_t v) {
  v = wire::HostToNet16(v);
  std::memcpy(p, &v, 2);
}

// Rewrites the IPv4 header through `edit`, with a correct checksum unless
// the edit is to the checksum itself.
template <typename Edit>
void EditIpv4(std::vector<uint8_t>& f, Edit edit, bool fix_checksum = true) {
  wire::Ipv4Header ip;
  std::memcpy(&ip, f.data() + wire::kIpv4Offset, sizeof(ip));
  edit(ip);
  if (fix_checksum) ip.checksum = wire::HostToNet16(wire::Ipv4Checksum(ip));
  std::memcpy(f.data() + wire::kIpv4Offset, &ip, sizeof(ip));
}

class Generator {
 public:
  Generator(const Job& job, NodeId sw, uint64_t seed)
      : job_(job), sw_(sw), config_(job.configs.at(sw)), rng_(seed) {
    const sw::JobEntry& entry = config_.jobs.at(job.params.job_id);
    if (entry.aggregate) agg_ = &*entry.aggregate;
    elements_ = job.params.elements;
    pool_ = job.params.slots;
  }

  std::vector<Packet> Run(size_t budget) {
    if (agg_ != nullptr) PlanStream(budget);
    while (out_.size() < budget) {
      const double r = rng_.Uniform();
      if (agg_ != nullptr && r < 0.62 && Contribute()) continue;
      if (agg_ != nullptr && r < 0.70 && Late()) continue;
      if (agg_ != nullptr && r < 0.75 && Result()) continue;
      if (agg_ != nullptr && r < 0.77 && Collide()) continue;
      Other();
    }
    return std::move(out_);
  }

 private:
  struct Position {
    uint32_t op_seq = 0, chunk = 0;
    std::vector<int> pending;  // member indexes yet to deliver
    std::vector<bool> lost;    // per member: its first send was lost
    bool complete = false;
    bool header_only = false;  // an exponent probe's: no elements
  };

  // ---- The job's stream: operations of a few chunks each, chunk c of the
  // stream in slot c mod P, copy (c / P) mod 2, under the window rule (c + P
  // starts only once c is complete).
  void PlanStream(size_t budget) {
    const size_t positions = std::max<size_t>(4 * pool_, budget / (agg_->fan_in + 2));
    uint32_t op = 100 + static_cast<uint32_t>(rng_.Below(1000));
    uint32_t chunk = 0, left = 0;
    bool probes = false;
    for (size_t p = 0; p < positions; ++p) {
      if (left == 0) {
        op += 1 + static_cast<uint32_t>(rng_.Below(3));
        chunk = 0;
        left = 1 + static_cast<uint32_t>(rng_.Below(2 * pool_));
        probes = rng_.Uniform() < 0.25;
      }
      Position pos;
      pos.op_seq = op;
      pos.chunk = chunk++;
      pos.header_only = probes;
      --left;
      for (size_t m = 0; m < agg_->members.size(); ++m) pos.pending.push_back(static_cast<int>(m));
      pos.lost.assign(agg_->members.size(), false);
      stream_.push_back(std::move(pos));
    }
  }

  bool Startable(size_t p) const { return p < pool_ || stream_[p - pool_].complete; }

  bool Contribute() {
    std::vector<size_t> active;
    for (size_t p = first_open_; p < stream_.size() && p < first_open_ + pool_; ++p) {
      if (!stream_[p].complete && Startable(p)) active.push_back(p);
    }
    if (active.empty()) return false;
    const size_t p = active[rng_.Below(active.size())];
    Position& pos = stream_[p];
    const size_t i = rng_.Below(pos.pending.size());
    const int m = pos.pending[i];
    if (!pos.lost[m] && rng_.Uniform() < 0.15) {
      pos.lost[m] = true;  // lost on the way: sent again later, as a retransmission
      return true;
    }
    const bool retransmit = pos.lost[m];
    Packet d = Data(p, m, retransmit ? wire::flags::kRetransmit : 0, "data");
    if (rng_.Uniform() < 0.12) late_.push_back(Data(p, m, wire::flags::kRetransmit, "duplicate"));
    Emit(std::move(d));
    pos.pending.erase(pos.pending.begin() + static_cast<long>(i));
    if (pos.pending.empty()) {
      pos.complete = true;
      completed_.push_back(p);
      while (first_open_ < stream_.size() && stream_[first_open_].complete) ++first_open_;
    }
    return true;
  }

  // A duplicate or a retransmission arriving late: into an incomplete copy,
  // a complete one, or a copy that has moved on.
  bool Late() {
    if (late_.empty()) return false;
    const size_t i = rng_.Below(late_.size());
    Emit(std::move(late_[i]));
    late_.erase(late_.begin() + static_cast<long>(i));
    return true;
  }

  // The root's result for a completed chunk: to all members, to one that
  // asked, or to a rank that is no member here.
  bool Result() {
    if (completed_.empty()) return false;
    const size_t p = completed_[rng_.Below(completed_.size())];
    uint16_t rank = wire::kAllRanks;
    const double r = rng_.Uniform();
    if (r < 0.2) {
      rank = agg_->members[rng_.Below(agg_->members.size())].rank;
    } else if (r < 0.25) {
      rank = NonMember();
    }
    Header h = ChunkHeader(MessageType::kResult, p);
    h.rank = rank;
    h.flags |= rank == wire::kAllRanks ? 0 : wire::flags::kRetransmit;
    h.agg_node = config_.node_id;
    h.path = job_.labels.from_root.at(sw_);
    h.fan_in = job_.root_fan_in;
    FrameAddress a = Address(control::NodeIp(job_.plan.job.root), config_.ip);
    uint16_t port = agg_->root.port;
    const char* kind = "result";
    const double spoof = rng_.Uniform();
    if (spoof < 0.04) {
      port = RandomPort();  // from the wrong side (unless it happens to be the root's)
      a.src_ip = SourceFor(port);
      kind = "result from another port";
    } else if (spoof < 0.08) {
      a.src_ip = control::NodeIp(static_cast<NodeId>(rng_.Below(40)));
      kind = "result from another address";
    }
    Emit({port, Build(a, h, Values(p, 99)), kind});
    return true;
  }

  // A member breaking the window rule: chunk c + 2P (the same slot and copy)
  // while c is still incomplete.
  bool Collide() {
    for (size_t p = first_open_; p < stream_.size() && p < first_open_ + pool_; ++p) {
      // Mid-aggregation: some members in, some not.
      const Position& pos = stream_[p];
      if (!pos.complete && pos.pending.size() < agg_->members.size() &&
          p + 2 * pool_ < stream_.size()) {
        const int m = static_cast<int>(rng_.Below(agg_->members.size()));
        Emit(Data(p + 2 * pool_, m, 0, "collision"));
        return true;
      }
    }
    return false;
  }

  // ---- Everything else a switch sees.
  void Other() {
    const double r = rng_.Uniform();
    if (r < 0.22) {
      PassThrough();
    } else if (r < 0.40) {
      Refused();
    } else if (r < 0.62) {
      Malformed();
    } else if (r < 0.80) {
      PlainIpv4();
    } else if (r < 0.88) {
      NotIpv4();
    } else {
      Packet p = AnyValid();
      const int flips = 1 + static_cast<int>(rng_.Below(3));
      for (int i = 0; i < flips; ++i) {
        p.frame[rng_.Below(std::min<size_t>(p.frame.size(), wire::kPayloadOffset + 8))] ^=
            static_cast<uint8_t>(1u << rng_.Below(8));
      }
      p.kind = "bit flips of " + p.kind;
      Emit(std::move(p));
    }
  }

  // A valid GRID packet for another node, along one of this switch's labels.
  Packet Through(const char* kind) {
    MessageType type = MessageType::kData;
    switch (rng_.Below(4)) {
      case 0:
        type = MessageType::kPartial;
        break;
      case 1:
        type = MessageType::kResult;
        break;
      case 2:
        type = MessageType::kSignal;
        break;
      default:
        break;
    }
    Header h = ChunkHeader(type, 0);
    h.op_seq = static_cast<uint32_t>(rng_.Next());
    h.chunk = static_cast<uint32_t>(rng_.Below(1000));
    h.agg_node = static_cast<uint16_t>(config_.node_id + 1 + rng_.Below(50));
    h.rank = static_cast<uint16_t>(rng_.Below(16));
    if (!config_.label_routes.empty() && rng_.Uniform() < 0.9) {
      auto it = config_.label_routes.begin();
      std::advance(it, static_cast<long>(rng_.Below(config_.label_routes.size())));
      h.path = it->first;
    } else {
      h.path = static_cast<uint16_t>(60000 + rng_.Below(1000));  // no route
    }
    if (type == MessageType::kSignal) h.num_elements = 0;
    const uint16_t port = RandomPort();
    FrameAddress a = Address(SourceFor(port), control::NodeIp(static_cast<NodeId>(rng_.Below(40))));
    return {port, Build(a, h, RandomValues(h.num_elements)), kind};
  }

  void PassThrough() {
    Packet p = Through("through");
    if (rng_.Uniform() < 0.15) {
      EditIpv4(p.frame, [](wire::Ipv4Header& ip) { ip.ttl = 1; });
      p.kind = "through, ttl 1";
    }
    Emit(Finish(std::move(p)));
  }

  // Valid packets a switch must refuse, each for one reason.
  void Refused() {
    const size_t p = agg_ != nullptr ? rng_.Below(stream_.size()) : 0;
    const int m = agg_ != nullptr ? static_cast<int>(rng_.Below(agg_->members.size())) : 0;
    Packet d = agg_ != nullptr ? Data(p, m, 0, "data") : Through("data");
    Header h = *Decode(d.frame);
    if (agg_ == nullptr) {
      h.agg_node = config_.node_id;  // for a switch that aggregates nothing
      d.kind = "not for us";
    }
    FrameAddress a = *Address(d.frame);
    switch (rng_.Below(13)) {
      case 10:
        d.port = RandomPort();
        d.kind = "a member's chunk on another port";
        break;
      case 11:
        a.src_ip = control::NodeIp(static_cast<NodeId>(rng_.Below(40)));
        d.kind = "a member's chunk from another address";
        break;
      case 12:
        // A probe's length for a chunk with elements, or the other way round.
        h.num_elements = h.num_elements == 0 ? elements_ : 0;
        d.kind = "the other length";
        break;
      case 0:
        h.job_id = kOtherJob;
        d.kind = "unknown job";
        break;
      case 1:
        h.job_token ^= 1u << rng_.Below(32);
        d.kind = "bad token";
        break;
      case 2:
        h.rank = NonMember();
        d.kind = "non-member";
        break;
      case 3:
        h.slot = static_cast<uint16_t>(pool_ + rng_.Below(100));
        d.kind = "bad slot";
        break;
      case 4:
        h.fan_in = static_cast<uint16_t>(h.fan_in + 1 + rng_.Below(3));
        d.kind = "bad fan_in";
        break;
      case 5:
        h.num_elements = static_cast<uint16_t>(1 + rng_.Below(elements_ - 1));
        d.kind = "bad length";
        break;
      case 6:
        h.type = MessageType::kPartial;
        d.kind = "partial to a switch";
        break;
      case 7:
        h.type = MessageType::kSignal;
        h.num_elements = 0;
        d.kind = "signal to a switch";
        break;
      case 8:
        h.type = MessageType::kSignal;
        h.num_elements = static_cast<uint16_t>(rng_.Below(3));
        d.kind = "signal with elements";
        break;
      default:
        h.flags |= wire::flags::kCongestion | wire::flags::kOverflow;
        d.kind = "data with congestion and overflow flags";
        break;
    }
    std::vector<int32_t> values(h.num_elements);
    const size_t had = (d.frame.size() - wire::kPayloadOffset) / wire::kElementBytes;
    for (size_t i = 0; i < values.size() && i < had; ++i) {
      values[i] = wire::LoadElement(d.frame.data() + wire::kPayloadOffset, i);
    }
    d.frame = Build(a, h, values);
    Emit(Finish(std::move(d)));
  }

  // A valid packet with one field broken, for every check of the codec.
  void Malformed() {
    Packet p = AnyValidGrid();
    std::vector<uint8_t>& f = p.frame;
    uint8_t* grid = f.data() + wire::kGridOffset;
    switch (rng_.Below(16)) {
      case 0:
        f.resize(wire::kGridOffset + rng_.Below(wire::kHeaderBytes));
        p.kind = "cut inside the GRID header";
        break;
      case 1:
        if (f.size() > wire::kPayloadOffset) {
          f.resize(wire::kPayloadOffset + rng_.Below(f.size() - wire::kPayloadOffset));
          p.kind = "cut inside the payload";
        } else {
          f.resize(wire::kUdpOffset + rng_.Below(8));
          p.kind = "cut inside the UDP header";
        }
        break;
      case 2:
        EditIpv4(f, [](wire::Ipv4Header& ip) { ip.version_ihl = 0x65; });
        p.kind = "ipv4 version 6";
        break;
      case 3:
        EditIpv4(f, [&](wire::Ipv4Header& ip) {
          ip.version_ihl = static_cast<uint8_t>(0x46 + rng_.Below(3));
        });
        p.kind = "ipv4 options";
        break;
      case 4:
        EditIpv4(f, [&](wire::Ipv4Header& ip) {
          ip.total_length = wire::HostToNet16(static_cast<uint16_t>(20 + rng_.Below(42)));
        });
        p.kind = "ipv4 total_length too short";
        break;
      case 5:
        EditIpv4(f, [&](wire::Ipv4Header& ip) {
          ip.flags_fragment = wire::HostToNet16(rng_.Below(2) ? 0x2000 : 0x4000 | 0x10);
        });
        p.kind = "ipv4 fragment";
        break;
      case 6:
        EditIpv4(
            f, [](wire::Ipv4Header& ip) { ip.checksum ^= wire::HostToNet16(0x0101); }, false);
        p.kind = "ipv4 checksum";
        break;
      case 7:
        Store16(f.data() + wire::kUdpOffset + 4,
                static_cast<uint16_t>(Load16(f.data() + wire::kUdpOffset + 4) + 4));
        p.kind = "udp length";
        break;
      case 8:
        grid[0] = 2;
        p.kind = "grid version";
        break;
      case 9:
        grid[3] = 1;
        p.kind = "grid reserved";
        break;
      case 10:
        grid[1] = rng_.Below(2) ? 0 : static_cast<uint8_t>(6 + rng_.Below(250));
        p.kind = "grid type";
        break;
      case 11:
        grid[2] |= 0x40;  // beyond flags::kAll
        p.kind = "grid flags";
        break;
      case 12:
        Store16(grid + offsetof(wire::WireHeader, num_elements),
                static_cast<uint16_t>(wire::kMaxElements + 1 + rng_.Below(2000)));
        p.kind = "grid num_elements";
        break;
      case 13:
        Store16(grid + offsetof(wire::WireHeader, fan_in), 0);
        p.kind = "grid fan_in";
        break;
      case 14:
        Store16(grid + offsetof(wire::WireHeader, num_elements),
                static_cast<uint16_t>(Load16(grid + offsetof(wire::WireHeader, num_elements)) + 1));
        p.kind = "grid payload length";
        break;
      default:
        f.insert(f.end(), 1 + rng_.Below(24), 0xee);
        p.kind = "ethernet padding after a valid packet";
        break;
    }
    Emit(std::move(p));
  }

  // Not GRID: routed by address, or dropped by a router's checks.
  void PlainIpv4() {
    Packet p = AnyValidGrid();
    std::vector<uint8_t>& f = p.frame;
    Store16(f.data() + wire::kUdpOffset + 2, 53);  // another UDP port
    const std::vector<NodeId> hosts = job_.topo.Hosts();
    const uint32_t to = rng_.Uniform() < 0.85 ? control::NodeIp(hosts[rng_.Below(hosts.size())])
                                              : 0x08080808u;  // no route
    EditIpv4(f, [&](wire::Ipv4Header& ip) { ip.dst = wire::HostToNet32(to); });
    p.kind = "plain ipv4";
    switch (rng_.Below(8)) {
      case 0:
        EditIpv4(f, [](wire::Ipv4Header& ip) { ip.ttl = static_cast<uint8_t>(ip.ttl % 2); });
        p.kind = "plain ipv4, ttl 0 or 1";
        break;
      case 1:
        EditIpv4(
            f, [](wire::Ipv4Header& ip) { ip.checksum ^= wire::HostToNet16(0x8000); }, false);
        p.kind = "plain ipv4, bad checksum";
        break;
      case 2:
        EditIpv4(f, [](wire::Ipv4Header& ip) { ip.version_ihl = 0x47; });
        p.kind = "plain ipv4 with options";
        break;
      case 3:
        EditIpv4(f, [](wire::Ipv4Header& ip) { ip.protocol = 6; });
        f.resize(std::max<size_t>(54, rng_.Below(f.size())));
        p.kind = "tcp";
        break;
      case 4:
        EditIpv4(f, [](wire::Ipv4Header& ip) { ip.protocol = 17; });
        f.resize(wire::kUdpOffset + rng_.Below(8));  // too short for a UDP header
        p.kind = "udp cut short";
        break;
      case 5:
        EditIpv4(f, [](wire::Ipv4Header& ip) { ip.version_ihl = 0x55; });
        p.kind = "plain ipv4, version 5";
        break;
      default:
        break;
    }
    Emit(std::move(p));
  }

  void NotIpv4() {
    std::vector<uint8_t> f(rng_.Below(2) ? 60 + rng_.Below(200) : rng_.Below(34));
    for (uint8_t& b : f) b = static_cast<uint8_t>(rng_.Next());
    const char* kind = "runt";
    if (f.size() >= 14) {
      const uint16_t types[] = {0x0806, 0x86dd, 0x8100, 0x0800};
      Store16(f.data() + 12, types[rng_.Below(4)]);
      kind = Load16(f.data() + 12) == 0x0800 ? "ipv4 runt" : "not ipv4";
    }
    Emit({RandomPort(), std::move(f), kind});
  }

  // ---- Frames.
  Header ChunkHeader(MessageType type, size_t p) {
    Header h;
    h.type = type;
    h.job_id = job_.params.job_id;
    h.job_token = job_.params.token;
    h.agg_node = config_.node_id;
    h.fan_in = agg_ != nullptr ? agg_->fan_in : 1;
    const size_t at = stream_.empty() ? 0 : p;
    h.slot = static_cast<uint16_t>(at % pool_);
    h.flags = (at / pool_) % 2 ? wire::flags::kCopy : 0;
    h.op_seq = stream_.empty() ? 1 : stream_[p].op_seq;
    h.chunk = stream_.empty() ? 0 : stream_[p].chunk;
    h.exponent = static_cast<uint8_t>(100 + util::Mix(p, 1) % 50);
    h.next_exponent = static_cast<uint8_t>(100 + util::Mix(p, 2) % 50);
    h.num_elements = !stream_.empty() && stream_[p].header_only ? 0 : elements_;
    return h;
  }

  Packet Data(size_t p, int m, uint8_t flags, const char* kind) {
    const sw::Member& member = agg_->members[m];
    Header h = ChunkHeader(MessageType::kData, p);
    h.flags |= flags;
    h.rank = member.rank;
    h.path = job_.labels.up[member.rank];
    h.next_path = agg_->to_root_label;
    // Ranks propose exponents of their own; the copy keeps the largest.
    h.exponent = static_cast<uint8_t>(h.exponent + util::Mix(p, member.rank) % 3);
    h.next_exponent = static_cast<uint8_t>(h.next_exponent + util::Mix(member.rank, p) % 3);
    FrameAddress a = Address(control::NodeIp(job_.plan.job.workers[member.rank]), config_.ip);
    return Finish({member.to.port, Build(a, h, Values(p, member.rank)), kind});
  }

  // A member's values for a chunk: the same on every send. Some are large,
  // so that sums wrap and OVERFLOW is exercised.
  std::vector<int32_t> Values(size_t p, int who) {
    util::Random r(util::Mix(p * 1000003 + static_cast<uint64_t>(who), 7));
    std::vector<int32_t> v(elements_);
    const bool large = r.Uniform() < 0.1;
    for (int32_t& x : v) {
      x = large ? static_cast<int32_t>(r.Next()) : static_cast<int32_t>(r.Below(2001)) - 1000;
    }
    return v;
  }

  std::vector<int32_t> RandomValues(uint16_t n) {
    std::vector<int32_t> v(n);
    for (int32_t& x : v) x = static_cast<int32_t>(rng_.Next());
    return v;
  }

  FrameAddress Address(uint32_t src_ip, uint32_t dst_ip) {
    FrameAddress a;
    a.src_ip = src_ip;
    a.dst_ip = dst_ip;
    a.src_mac = {0x02, 0, 0, 0, 0xaa, static_cast<uint8_t>(rng_.Below(256))};
    a.dst_mac = config_.mac;
    a.src_port = static_cast<uint16_t>(1024 + rng_.Below(60000));
    a.dst_port = static_cast<uint16_t>(wire::kUdpPortBase + rng_.Below(wire::kUdpPortCount));
    a.ttl = static_cast<uint8_t>(2 + rng_.Below(62));
    return a;
  }

  static std::optional<Header> Decode(const std::vector<uint8_t>& f) {
    auto v = wire::DecodeFrame(f);
    if (!v.ok()) return std::nullopt;
    return v->header;
  }
  static std::optional<FrameAddress> Address(const std::vector<uint8_t>& f) {
    auto v = wire::DecodeFrame(f);
    if (!v.ok()) return std::nullopt;
    return v->address;
  }

  std::vector<uint8_t> Build(const FrameAddress& a, const Header& h,
                             const std::vector<int32_t>& values) {
    std::vector<uint8_t> payload(size_t{h.num_elements} * wire::kElementBytes, 0);
    for (size_t i = 0; i < values.size() && i < h.num_elements; ++i) {
      wire::StoreElement(payload.data(), i, values[i]);
    }
    std::vector<uint8_t> f(wire::FrameBytes(h.num_elements));
    if (!wire::EncodeFrame(a, h, payload, absl::MakeSpan(f)).ok()) std::abort();
    return f;
  }

  // What a sender's stack may add to a valid packet: an IP id, ECN bits, a
  // UDP checksum (a kernel socket sets one).
  Packet Finish(Packet p) {
    if (p.frame.size() < wire::kPayloadOffset) return p;
    if (rng_.Uniform() < 0.2) {
      EditIpv4(p.frame, [&](wire::Ipv4Header& ip) {
        ip.identification = static_cast<uint16_t>(rng_.Next());
        ip.tos = static_cast<uint8_t>(rng_.Below(4));
      });
    }
    if (rng_.Uniform() < 0.2) {
      Store16(p.frame.data() + wire::kUdpOffset + 6, static_cast<uint16_t>(1 + rng_.Below(65535)));
    }
    return p;
  }

  Packet AnyValidGrid() {
    if (agg_ != nullptr && rng_.Uniform() < 0.6) {
      return Data(rng_.Below(stream_.size()), static_cast<int>(rng_.Below(agg_->members.size())), 0,
                  "data");
    }
    return Finish(Through("through"));
  }
  Packet AnyValid() {
    if (rng_.Uniform() < 0.2) {
      Packet p = AnyValidGrid();
      Store16(p.frame.data() + wire::kUdpOffset + 2, 53);
      p.kind = "plain ipv4";
      return p;
    }
    return AnyValidGrid();
  }

  uint16_t NonMember() {
    while (true) {
      const auto r = static_cast<uint16_t>(rng_.Below(70));
      bool member = false;
      for (const sw::Member& m : agg_ != nullptr ? agg_->members : std::vector<sw::Member>{}) {
        member |= m.rank == r;
      }
      if (!member) return r;
    }
  }
  uint16_t RandomPort() { return static_cast<uint16_t>(rng_.Below(config_.num_ports)); }

  // A source address for a packet arriving on `port`: on a port that faces a
  // host, mostly that host's (a switch drops any other); from the fabric,
  // anyone's.
  uint32_t SourceFor(uint16_t port) {
    auto host = config_.hosts.find(port);
    if (host != config_.hosts.end() && rng_.Uniform() < 0.9) return host->second;
    return control::NodeIp(static_cast<NodeId>(rng_.Below(40)));
  }

  void Emit(Packet p) { out_.push_back(std::move(p)); }

  const Job& job_;
  NodeId sw_;
  const sw::SwitchConfig& config_;
  const sw::JobEntry::Aggregate* agg_ = nullptr;
  util::Random rng_;
  uint16_t elements_ = 0;
  uint32_t pool_ = 0;
  std::vector<Position> stream_;
  size_t first_open_ = 0;
  std::vector<size_t> completed_;
  std::vector<Packet> late_;
  std::vector<Packet> out_;
};

}  // namespace

std::vector<Packet> MakeTraffic(const Job& job, NodeId sw, size_t budget, uint64_t seed) {
  return Generator(job, sw, seed).Run(budget);
}

}  // namespace grid::testing
