// The switch semantics end to end under a hostile network: random plans on
// random fabrics, every link losing, duplicating and reordering packets.
// Workers retransmit (a periodic scan of their in-flight chunks) until they
// hold every result; the root is a minimal model of the parameter server.
// Every worker must end with the exact int32 sum of every chunk.
#include <map>
#include <queue>
#include <vector>

#include "fabric.h"
#include "gtest/gtest.h"
#include "transport/faults.h"
#include "util/random.h"

namespace grid::sw {
namespace {

using topology::NodeId;

// Loss, duplication and reordering per hop (the fault applier every emulated link uses,
// one per link direction), and a delivery delay of 1 + U[0, max_jitter]
// ticks that reorders.
struct Impairment {
  transport::LinkFaults faults{.loss = 0.02, .duplicate = 0.02, .reorder = 0.02};
  uint64_t max_jitter = 8;
};

class Network {
 public:
  Network(const testing::Job& job, Impairment imp, uint64_t seed)
      : job_(job), imp_(imp), rng_(seed) {
    for (const auto& [node, config] : job.configs)
      switches_.emplace(node, *Pipeline::Create(config));
    for (topology::ArcId arc = 0; arc < job.topo.num_arcs(); ++arc) {
      transport::LinkFaults f = imp.faults;
      f.seed = util::Mix(seed, static_cast<uint64_t>(arc));
      faults_.emplace_back(f);
    }
  }

  // Sends `bytes` out of `from`'s port `port` (hosts have port 0).
  void Send(NodeId from, uint16_t port, absl::Span<const uint8_t> bytes) {
    ++sent_;
    const topology::Adjacent& link = job_.topo.neighbors(from)[port];
    const uint16_t in_port = job_.PortTo(link.node, from);
    auto deliver = [&](std::vector<uint8_t>&& frame) {
      const uint64_t at = now_ + 1 + rng_.Below(imp_.max_jitter + 1);
      queue_.push({at, seq_++, link.node, in_port, std::move(frame)});
    };
    faults_[link.arc].Apply(
        std::vector<uint8_t>(bytes.begin(), bytes.end()),
        [](const std::vector<uint8_t>& b) { return std::optional<std::vector<uint8_t>>(b); },
        [&](std::vector<uint8_t>&&) { ++lost_; }, deliver);
    // Reordering beyond the jitter's: a held frame goes with the next one
    // on its link, and (Run) when nothing else is due.
  }

  // Delivers every packet due by `until`; hosts' frames go to `host`.
  template <typename HostFn>
  void Run(uint64_t until, HostFn host) {
    if (queue_.empty()) ReleaseHeld();
    while (!queue_.empty() && queue_.top().at <= until) {
      Event e = queue_.top();
      queue_.pop();
      now_ = e.at;
      auto sw = switches_.find(e.to);
      if (sw == switches_.end()) {
        host(e.to, absl::MakeSpan(e.bytes));
        continue;
      }
      out_.Clear();
      sw->second.Process(absl::MakeSpan(e.bytes), e.in_port, &out_);
      for (const OutFrame& f : out_.frames) Send(e.to, f.port, out_.Bytes(f, e.bytes));
    }
    now_ = until;
  }

  uint64_t now() const { return now_; }
  uint64_t lost() const { return lost_; }
  const std::map<NodeId, Pipeline>& switches() const { return switches_; }

 private:
  void ReleaseHeld() {
    for (topology::ArcId arc = 0; arc < static_cast<topology::ArcId>(faults_.size()); ++arc) {
      faults_[arc].Release([&](std::vector<uint8_t>&& frame) {
        const NodeId to = job_.topo.ArcTo(arc);
        queue_.push({now_ + 1, seq_++, to, job_.PortTo(to, job_.topo.ArcFrom(arc)),
                     std::move(frame)});
      });
    }
  }

  struct Event {
    uint64_t at, seq;
    NodeId to;
    uint16_t in_port;
    std::vector<uint8_t> bytes;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  const testing::Job& job_;
  Impairment imp_;
  std::vector<transport::FaultApplier<std::vector<uint8_t>>> faults_;  // by arc
  util::Random rng_;
  std::map<NodeId, Pipeline> switches_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  Output out_;
  uint64_t now_ = 0, seq_ = 0, sent_ = 0, lost_ = 0;
};

constexpr uint32_t kOp = 3;

// The parameter server, reduced to what the switch semantics rely on.
class Root {
 public:
  explicit Root(const testing::Job& job) : job_(job) {
    for (const auto& [sw, path] : job.plan.to_root) index_[sw] = contributors_++;
    for (size_t r = 0; r < job.plan.workers.size(); ++r) {
      if (job.plan.workers[r].aggregator == job.plan.job.root)
        direct_[static_cast<int>(r)] = contributors_++;
    }
  }

  void Receive(absl::Span<const uint8_t> bytes, Network& net) {
    auto v = wire::DecodeFrame(bytes);
    ASSERT_TRUE(v.ok()) << v.status();
    const wire::Header& h = v->header;
    if (h.type != wire::MessageType::kPartial && h.type != wire::MessageType::kData) return;
    int who;
    NodeId via = job_.plan.job.root;  // where results go: a switch, or the worker itself
    uint16_t rank = h.rank;
    if (h.type == wire::MessageType::kPartial) {
      via = static_cast<NodeId>(v->address.src_ip - 0x0a000001u);
      who = index_.at(via);
    } else {
      who = direct_.at(h.rank);
    }
    Chunk& c = chunks_[h.chunk];
    if (c.seen.empty()) {
      c.seen.assign(contributors_, false);
      c.sum.assign(h.num_elements, 0);
    }
    if (c.complete) {
      ++resends_;
      SendResult(h, c, via, rank, net);  // a retransmission: answer whoever asked
      return;
    }
    if (c.seen[who]) return;
    c.seen[who] = true;
    for (size_t i = 0; i < h.num_elements; ++i) {
      c.sum[i] = static_cast<int32_t>(static_cast<uint32_t>(c.sum[i]) +
                                      static_cast<uint32_t>(wire::LoadElement(v->payload, i)));
    }
    if (++c.count < contributors_) return;
    c.complete = true;
    for (const auto& [sw, idx] : index_) SendResult(h, c, sw, wire::kAllRanks, net);
    for (const auto& [r, idx] : direct_)
      SendResult(h, c, job_.plan.job.root, static_cast<uint16_t>(r), net);
  }

  uint64_t resends() const { return resends_; }

 private:
  struct Chunk {
    std::vector<bool> seen;
    std::vector<int32_t> sum;
    int count = 0;
    bool complete = false;
  };

  void SendResult(const wire::Header& in, const Chunk& c, NodeId via, uint16_t rank, Network& net) {
    wire::Header h;
    h.type = wire::MessageType::kResult;
    h.job_id = in.job_id;
    h.job_token = in.job_token;
    h.rank = rank;
    h.fan_in = static_cast<uint16_t>(contributors_);
    h.slot = in.slot;
    h.flags = in.flags & wire::flags::kCopy;
    h.op_seq = in.op_seq;
    h.chunk = in.chunk;
    h.num_elements = static_cast<uint16_t>(c.sum.size());
    wire::FrameAddress a;
    a.src_ip = control::NodeIp(job_.plan.job.root);
    if (via == job_.plan.job.root) {  // a direct worker
      h.agg_node = static_cast<uint16_t>(job_.plan.job.root);
      h.path = job_.labels.result[rank];
      a.dst_ip = control::NodeIp(job_.plan.job.workers[rank]);
    } else {
      h.agg_node = static_cast<uint16_t>(via);
      h.path = job_.labels.from_root.at(via);
      a.dst_ip = control::NodeIp(via);
    }
    std::vector<uint8_t> payload(c.sum.size() * 4);
    numerics_ToWire(c.sum, payload);
    std::vector<uint8_t> frame(wire::FrameBytes(h.num_elements));
    ASSERT_TRUE(wire::EncodeFrame(a, h, payload, absl::MakeSpan(frame)).ok());
    net.Send(job_.plan.job.root, 0, frame);
  }

  static void numerics_ToWire(const std::vector<int32_t>& v, std::vector<uint8_t>& out) {
    for (size_t i = 0; i < v.size(); ++i) wire::StoreElement(out.data(), i, v[i]);
  }

  const testing::Job& job_;
  std::map<NodeId, int> index_;
  std::map<int, int> direct_;
  int contributors_ = 0;
  std::map<uint32_t, Chunk> chunks_;
  uint64_t resends_ = 0;
};

class Worker {
 public:
  Worker(const testing::Job& job, int rank, uint32_t chunks, uint16_t elements, util::Random& rng)
      : job_(job),
        rank_(rank),
        values_(chunks, std::vector<int32_t>(elements)),
        results_(chunks),
        sent_at_(chunks, 0) {
    for (auto& chunk : values_) {
      for (int32_t& x : chunk) x = static_cast<int32_t>(rng.Below(1u << 21)) - (1 << 20);
    }
  }

  // Sends what the window allows; resends what has waited longer than `rto`.
  void Tick(Network& net, uint64_t rto) {
    const uint32_t pool = job_.params.slots;
    while (next_ < values_.size() && (next_ < pool || !results_[next_ - pool].empty())) {
      Send(net, next_, 0);
      ++next_;
    }
    for (uint32_t c = done_; c < next_; ++c) {
      if (results_[c].empty() && net.now() - sent_at_[c] >= rto) {
        ++retransmissions_;
        Send(net, c, wire::flags::kRetransmit);
      }
    }
    while (done_ < next_ && !results_[done_].empty()) ++done_;
  }

  void Receive(absl::Span<const uint8_t> bytes) {
    auto v = wire::DecodeFrame(bytes);
    ASSERT_TRUE(v.ok()) << v.status();
    if (v->header.type != wire::MessageType::kResult) return;
    ASSERT_EQ(v->header.op_seq, kOp);
    std::vector<int32_t>& r = results_[v->header.chunk];
    if (!r.empty()) return;  // a duplicate result
    r.resize(v->header.num_elements);
    for (size_t i = 0; i < r.size(); ++i) r[i] = wire::LoadElement(v->payload, i);
  }

  bool Done() const { return done_ == values_.size(); }
  const std::vector<std::vector<int32_t>>& values() const { return values_; }
  const std::vector<std::vector<int32_t>>& results() const { return results_; }
  uint64_t retransmissions() const { return retransmissions_; }

 private:
  void Send(Network& net, uint32_t chunk, uint8_t flags) {
    sent_at_[chunk] = net.now();
    const std::vector<uint8_t> frame =
        testing::DataFrame(job_, rank_, kOp, chunk, values_[chunk], flags);
    net.Send(job_.plan.job.workers[rank_], 0, frame);
  }

  const testing::Job& job_;
  int rank_;
  std::vector<std::vector<int32_t>> values_;
  std::vector<std::vector<int32_t>> results_;
  std::vector<uint64_t> sent_at_;
  uint32_t next_ = 0, done_ = 0;
  uint64_t retransmissions_ = 0;
};

struct Case {
  const char* topology;
  const char* planner;
  int workers;
  uint64_t seed;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.planner << " on " << c.topology << ", " << c.workers << " workers, seed " << c.seed;
}

class Hostile : public ::testing::TestWithParam<Case> {};

TEST_P(Hostile, EveryWorkerEndsWithTheExactSum) {
  constexpr uint32_t kChunks = 10000;
  constexpr uint16_t kElements = 4;
  const Case& c = GetParam();
  const testing::Job job =
      testing::MakeJob(c.topology, c.planner, c.workers, c.seed, 16, kElements);
  Network net(job, Impairment{}, c.seed * 7919);
  Root root(job);
  util::Random rng(c.seed);
  std::vector<Worker> workers;
  std::map<NodeId, int> rank_of;
  for (int r = 0; r < c.workers; ++r) {
    workers.emplace_back(job, r, kChunks, kElements, rng);
    rank_of[job.plan.job.workers[r]] = r;
  }
  const uint64_t kTick = 8, kRto = 64;
  uint64_t t = 0;
  bool all_done = false;
  for (; t < 50'000'000 && !all_done; t += kTick) {
    for (Worker& w : workers) w.Tick(net, kRto);
    net.Run(t + kTick, [&](NodeId host, absl::Span<uint8_t> bytes) {
      if (host == job.plan.job.root) {
        root.Receive(bytes, net);
      } else {
        workers[rank_of.at(host)].Receive(bytes);
      }
    });
    all_done = true;
    for (const Worker& w : workers) all_done = all_done && w.Done();
  }
  ASSERT_TRUE(all_done) << "not finished by t=" << t;
  uint64_t wrong = 0, retransmissions = 0;
  for (uint32_t ch = 0; ch < kChunks; ++ch) {
    for (uint16_t i = 0; i < kElements; ++i) {
      int64_t sum = 0;
      for (const Worker& w : workers) sum += w.values()[ch][i];
      for (const Worker& w : workers) wrong += w.results()[ch][i] != sum;
    }
  }
  for (const Worker& w : workers) retransmissions += w.retransmissions();
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(net.lost(), 0u);
  EXPECT_GT(retransmissions, 0u);
  uint64_t resent_partials = 0, duplicates = 0;
  for (const auto& [node, p] : net.switches()) {
    for (const auto& [id, jc] : p.counters().jobs) {
      resent_partials += jc.partials_resent;
      duplicates += jc.duplicates;
    }
  }
  if (!job.plan.to_root.empty()) {
    EXPECT_GT(resent_partials + duplicates, 0u);
  }
  RecordProperty("retransmissions", static_cast<int>(retransmissions));
}

INSTANTIATE_TEST_SUITE_P(
    Plans, Hostile,
    ::testing::Values(Case{"testbed", "switchml", 8, 1}, Case{"testbed", "grid", 8, 2},
                      Case{"testbed:cap=fixed:200", "atp", 8, 3},
                      Case{"fattree:k=4,prog=random:0.4,cap=uniform:100:800,seed=5", "grid-paths",
                           10, 4},
                      Case{"leafspine:spines=2,leaves=4,hosts=3,prog=tor,seed=6", "grid", 9, 5},
                      Case{"fattree:k=4,prog=none", "geryon", 6, 6}),
    [](const ::testing::TestParamInfo<Case>& p) {
      std::string n = std::string(p.param.planner) + "_" + std::to_string(p.index);
      std::erase(n, '-');
      return n;
    });

}  // namespace
}  // namespace grid::sw
