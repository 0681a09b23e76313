#include "root/lanes.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/str_format.h"
#include "grid/wire.h"
#include "trace/chrome.h"
#include "transport/lanes.h"

namespace grid::root {

RootStats operator+(const RootStats& a, const RootStats& b) {
  RootStats s;
  s.packets_received = a.packets_received + b.packets_received;
  s.packets_sent = a.packets_sent + b.packets_sent;
  s.bytes_received = a.bytes_received + b.bytes_received;
  s.bytes_sent = a.bytes_sent + b.bytes_sent;
  s.contributions = a.contributions + b.contributions;
  s.completed = a.completed + b.completed;
  s.results_resent = a.results_resent + b.results_resent;
  s.duplicates = a.duplicates + b.duplicates;
  s.stale = a.stale + b.stale;
  s.collisions = a.collisions + b.collisions;
  s.overflows = a.overflows + b.overflows;
  s.malformed = a.malformed + b.malformed;
  s.foreign = a.foreign + b.foreign;
  s.rejected = a.rejected + b.rejected;
  s.passed = a.passed + b.passed;
  s.proxied = a.proxied + b.proxied;
  return s;
}

namespace {

absl::Status CheckThreads(const host_config::RootConfig& config, size_t threads) {
  if (threads == 0 || threads > transport::kMaxLanes || threads > config.slots) {
    return absl::InvalidArgumentError(
        absl::StrFormat("root of job %d: %d threads; 1 to %d and at most the pool's %d slots",
                        config.job_id, threads, transport::kMaxLanes, config.slots));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RootLanes>> RootLanes::Start(
    const host_config::RootConfig& config, std::vector<std::unique_ptr<Transport>> lanes,
    absl::Duration idle_wait, size_t trace_events) {
  if (absl::Status s = CheckThreads(config, lanes.size()); !s.ok()) return s;
  std::unique_ptr<RootLanes> r(new RootLanes);
  for (auto& t : lanes) {
    if (t == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("root of job %d: no transport for a lane", config.job_id));
    }
    auto lane = std::make_unique<Lane>();
    lane->transport = std::move(t);
    lane->engine =
        std::make_unique<RootEngine>(config, lane->transport.get(), 32, &lane->job_drops);
    if (trace_events > 0) lane->trace = std::make_unique<trace::Recorder>(trace_events);
    r->lanes_.push_back(std::move(lane));
  }
  for (auto& lane : r->lanes_) {
    Lane* l = lane.get();
    RootLanes* self = r.get();
    l->thread = std::thread([self, l, idle_wait] { self->Run(*l, idle_wait); });
  }
  return r;
}

absl::StatusOr<std::unique_ptr<RootLanes>> RootLanes::Start(const host_config::RootConfig& config,
                                                            std::unique_ptr<Transport> transport,
                                                            uint32_t threads,
                                                            absl::Duration idle_wait,
                                                            size_t trace_events) {
  // Checked before the transport is split (LanesOf consumes it).
  if (absl::Status s = CheckThreads(config, threads); !s.ok()) return s;
  auto lanes = transport::LanesOf(std::move(transport), threads);
  if (!lanes.ok()) {
    return absl::Status(lanes.status().code(),
                        absl::StrFormat("root of job %d: %d threads: %s", config.job_id, threads,
                                        lanes.status().message()));
  }
  return Start(config, *std::move(lanes), idle_wait, trace_events);
}

RootLanes::~RootLanes() { Stop(); }

void RootLanes::Stop() {
  stop_.store(true);
  for (auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
}

absl::Status RootLanes::Reload(const host_config::RootConfig& config, absl::Duration timeout) {
  if (absl::Status s = CheckThreads(config, lanes_.size()); !s.ok()) return s;
  std::unique_lock<std::mutex> lock(reload_mu_);
  reload_ = std::make_shared<const host_config::RootConfig>(config);
  lanes_reloaded_ = 0;
  generation_.fetch_add(1);
  if (!reloaded_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                          [&] { return lanes_reloaded_ == lanes_.size(); })) {
    return absl::DeadlineExceededError(
        absl::StrFormat("root of job %d: %d of %d threads took the reload within %s", config.job_id,
                        lanes_reloaded_, lanes_.size(), absl::FormatDuration(timeout)));
  }
  return absl::OkStatus();
}

void RootLanes::TakeReload(Lane& lane) {
  std::shared_ptr<const host_config::RootConfig> config;
  {
    std::lock_guard<std::mutex> lock(reload_mu_);
    config = reload_;
    lane.generation = generation_.load();
  }
  lane.retired = lane.retired + lane.engine->stats();
  lane.engine = std::make_unique<RootEngine>(*config, lane.transport.get(), 32, &lane.job_drops);
  std::lock_guard<std::mutex> lock(reload_mu_);
  ++lanes_reloaded_;
  reloaded_.notify_all();
}

void RootLanes::Run(Lane& lane, absl::Duration idle_wait) {
  while (!stop_.load(std::memory_order_relaxed)) {
    if (generation_.load(std::memory_order_relaxed) != lane.generation) TakeReload(lane);
    if (lane.engine->Poll()) {
      std::lock_guard<std::mutex> lock(stats_mu_);
      lane.published = lane.retired + lane.engine->stats();
    } else {
      lane.transport->WaitReadable(idle_wait);
    }
    if (lane.trace != nullptr) Sample(lane);
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  lane.published = lane.retired + lane.engine->stats();
}

// The lanes' threads are the root's owner, as the progress loop is a rank's:
// the clock is read here, for the trace only, and never in the engine.
void RootLanes::Sample(Lane& lane) {
  const absl::Time now = absl::Now();
  if (!lane.trace->SampleDue(now)) return;
  const RootStats s = lane.retired + lane.engine->stats();
  auto n = [](uint64_t v) { return static_cast<int64_t>(v); };
  lane.trace->Counter(now, "chunks",
                      {{"completed", n(s.completed)},
                       {"contributions", n(s.contributions)},
                       {"results_resent", n(s.results_resent)},
                       {"passed", n(s.passed)}});
  lane.trace->Counter(now, "copies busy", {{"busy", n(lane.engine->BusyCopies())}});
  lane.trace->Counter(now, "drops",
                      {{"duplicates", n(s.duplicates)},
                       {"stale", n(s.stale)},
                       {"collisions", n(s.collisions)},
                       {"foreign", n(s.foreign + s.rejected + s.malformed)}});
  lane.trace->Counter(now, "bytes", {{"received", n(s.bytes_received)}, {"sent", n(s.bytes_sent)}});
}

absl::Status RootLanes::WriteTrace(const std::string& dir, const std::string& name,
                                   const host_config::RootConfig& config) const {
  trace::TraceProcess p;
  p.name = "root " + name;
  p.role = "root";
  p.pid = static_cast<int>(::getpid());
  p.other_json =
      absl::StrFormat(R"("job":%d,"ip":"%s","slots":%d,"contributors":%d)", config.job_id,
                      wire::IpToString(config.ip), config.slots, config.contributors.size());
  for (size_t k = 0; k < lanes_.size(); ++k) {
    if (lanes_[k]->trace == nullptr) return absl::OkStatus();
    p.tracks.push_back({absl::StrFormat("lane %d", k), lanes_[k]->trace.get()});
  }
  return trace::WriteChromeTrace(dir, trace::TraceFileName("root", name), p);
}

std::vector<node::JobDrops> RootLanes::DropsByJob() const {
  std::vector<std::vector<node::JobDrops>> parts;
  for (const auto& lane : lanes_) parts.push_back(lane->job_drops.Snapshot());
  return node::MergeDrops(parts);
}

RootStats RootLanes::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  RootStats sum;
  for (const auto& lane : lanes_) sum = sum + lane->published;
  return sum;
}

std::string RootLanes::Describe() const {
  if (lanes_.size() == 1) return lanes_.front()->transport->Describe();
  return absl::StrFormat("%d threads on %s", lanes_.size(), lanes_.front()->transport->Describe());
}

}  // namespace grid::root
