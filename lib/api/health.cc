#include "api/health.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace grid::api {
namespace {

std::string HeartbeatKey(int rank) { return absl::StrFormat("grid/heartbeat/%d", rank); }

// A read of another rank's heartbeat gives up after this, so one slow store
// round trip never stalls the loop for long.
constexpr absl::Duration kReadTimeout = absl::Milliseconds(50);
// Reads at least this far apart: a heartbeat moves once per period.
constexpr absl::Duration kMinReadPeriod = absl::Milliseconds(50);

}  // namespace

std::string FormatHeartbeat(const Heartbeat& beat) {
  return absl::StrFormat("%d %d %s", beat.submitted, beat.unix_ms, beat.ended ? "end" : "run");
}

bool ParseHeartbeat(std::string_view text, Heartbeat* beat) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(text.data(), text.size()), ' ', absl::SkipEmpty());
  if (parts.size() != 3 || (parts[2] != "run" && parts[2] != "end")) return false;
  Heartbeat b;
  if (!absl::SimpleAtoi(parts[0], &b.submitted) || !absl::SimpleAtoi(parts[1], &b.unix_ms)) {
    return false;
  }
  b.ended = parts[2] == "end";
  *beat = b;
  return true;
}

Health::Health(int rank, int world, std::unique_ptr<Store> reader, std::unique_ptr<Store> writer,
               absl::Duration timeout, WatchedNodes nodes)
    : rank_(rank),
      world_(world),
      silent_after_(std::min(4 * kHeartbeatPeriod, timeout * 0.4)),
      read_period_(std::max(kMinReadPeriod, silent_after_ / 4)),
      reader_(std::move(reader)),
      writer_(std::move(writer)),
      seen_(world),
      nodes_(std::move(nodes)),
      node_seen_(nodes_.names.size()) {
  // The drop counts so far, before this rank sends anything.
  ReadNodes(absl::Now());
  thread_ = std::thread([this] { Loop(); });
}

Health::~Health() { Stop(); }

void Health::Update(uint64_t submitted, bool ended) {
  submitted_.store(submitted, std::memory_order_relaxed);
  if (ended) ended_.store(true, std::memory_order_relaxed);
}

void Health::Watch(absl::Time now) {
  // Keep reading for a few periods after the last operation in flight, so a
  // timeout right after a quiet spell still finds fresh reads.
  watch_until_ns_.store(absl::ToUnixNanos(now + 2 * silent_after_), std::memory_order_relaxed);
}

void Health::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // The last word: this rank has ended, not died.
  (void)writer_->Set(HeartbeatKey(rank_),
                     FormatHeartbeat({submitted_.load(), absl::ToUnixMillis(absl::Now()), true}));
}

void Health::Loop() {
  absl::Time next_beat = absl::InfinitePast(), next_read = absl::InfinitePast();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    absl::Time now = absl::Now();
    if (now >= next_beat) {
      (void)writer_->Set(
          HeartbeatKey(rank_),
          FormatHeartbeat({submitted_.load(std::memory_order_relaxed), absl::ToUnixMillis(now),
                           ended_.load(std::memory_order_relaxed)}));
      next_beat = now + kHeartbeatPeriod;
    }
    const bool watching = absl::ToUnixNanos(now) < watch_until_ns_.load(std::memory_order_relaxed);
    if (watching && now >= next_read) {
      ReadOthers(now);
      ReadNodes(now);
      next_read = absl::Now() + read_period_;
    }
    const absl::Time wake = watching ? std::min(next_beat, next_read) : next_beat;
    lock.lock();
    cv_.wait_for(lock,
                 absl::ToChronoNanoseconds(std::max(wake - absl::Now(), absl::ZeroDuration())),
                 [&] { return stop_; });
  }
}

void Health::ReadOthers(absl::Time now) {
  for (int r = 0; r < world_; ++r) {
    if (r == rank_) continue;
    Heartbeat beat;
    auto v = reader_->Get(HeartbeatKey(r), kReadTimeout);
    const bool ok = v.ok() && ParseHeartbeat(*v, &beat);
    std::lock_guard<std::mutex> lock(mu_);
    Seen& s = seen_[r];
    const bool changed = !s.read || ok != s.ok || (ok && beat.unix_ms != s.beat.unix_ms);
    if (changed) s.since = now;
    if (s.read && s.ok && ok && beat.unix_ms != s.beat.unix_ms) s.live = true;
    s.read = true;
    s.ok = ok;
    if (ok) s.beat = beat;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!AllIssuedLocked(submitted_.load(std::memory_order_relaxed))) {
    all_issued_since_ = absl::InfiniteFuture();
  } else if (all_issued_since_ == absl::InfiniteFuture()) {
    all_issued_since_ = now;
  }
}

void Health::ReadNodes(absl::Time now) {
  for (size_t i = 0; i < nodes_.names.size(); ++i) {
    node::NodeStatus status;
    // No wait: a node that writes no status (from files, a P4 switch) is
    // read every period, and must not hold up this rank's own heartbeat.
    auto v = reader_->Get(node::NodeStatusKey(nodes_.names[i]), absl::ZeroDuration());
    const bool ok = v.ok() && node::ParseNodeStatus(*v, &status);
    std::lock_guard<std::mutex> lock(mu_);
    NodeSeen& n = node_seen_[i];
    n.ok = ok;
    if (!ok) continue;  // never written (not judged), or the store failed: no news
    if (!n.judged || status.unix_ms != n.status.unix_ms) n.since = now;
    if (n.judged && status.unix_ms != n.status.unix_ms) n.moved = true;
    // A node that restarted counts from zero again.
    if (n.judged && status.started_ms != n.status.started_ms) n.baseline = {};
    n.judged = true;
    n.status = std::move(status);
    if (!n.baselined) {
      n.baselined = true;
      for (const node::JobDrops& d : n.status.drops) {
        if (d.job == nodes_.job && d.token == nodes_.token) n.baseline = d.counts;
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  const bool watching = absl::ToUnixNanos(now) < watch_until_ns_.load(std::memory_order_relaxed);
  if (!watching || !fault_.ok()) return;
  for (size_t i = 0; i < node_seen_.size() && fault_.ok(); ++i) fault_ = Judge(i, now);
  if (!fault_.ok()) faulted_.store(true, std::memory_order_release);
}

std::string Health::NodeName(size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  const NodeSeen& n = node_seen_[i];
  const char* kind = !n.judged ? "node" : node::NodeKindName(n.status.kind);
  return absl::StrFormat("%s %s", kind, nodes_.names[i]);
}

absl::Status Health::Judge(size_t i, absl::Time now) const {
  const NodeSeen& n = node_seen_[i];
  if (!n.judged) return absl::OkStatus();
  const std::string& name = nodes_.names[i];
  const std::string who = absl::StrFormat("%s %s", node::NodeKindName(n.status.kind), name);
  if (n.status.ended) {
    return absl::UnavailableError(absl::StrFormat(
        "%s shut down while job %d ran (its status in the store, %s, says it ended): start it "
        "again, then the job",
        who, nodes_.job, node::NodeStatusKey(name)));
  }
  if (n.ok && now - n.since >= node::kNodeSilentAfter) {
    return absl::UnavailableError(absl::StrFormat(
        "%s stopped answering: its status in the store (%s) has not changed for %s, so it died "
        "or hangs; start it again, then the job",
        who, node::NodeStatusKey(name), absl::FormatDuration(now - n.since)));
  }
  for (const node::JobDrops& d : n.status.drops) {
    if (d.job != nodes_.job || d.token != nodes_.token) continue;
    for (int r = 0; r < node::kNumJobDrops; ++r) {
      const auto reason = static_cast<node::JobDrop>(r);
      if (reason == node::JobDrop::kStale || d.counts[r] <= n.baseline[r]) continue;
      // A holder of the token can forge these; the job's tables cannot
      // produce the first two under its own token (Stalled says why).
      if (reason != node::JobDrop::kUnknownJob && reason != node::JobDrop::kBadToken &&
          !Stalled(now)) {
        continue;
      }
      const char* why = "";
      switch (reason) {
        case node::JobDrop::kUnknownJob:
          why =
              "it holds no tables for this job: it has not loaded the job published last. Send "
              "it SIGHUP (or restart it)";
          break;
        case node::JobDrop::kBadToken:
          why =
              "it holds this job under another token, from an earlier publication: it has not "
              "loaded the job published last. Send it SIGHUP (or restart it)";
          break;
        case node::JobDrop::kNotMember:
          why =
              "its tables do not make the sending rank a member there: the ranks run another "
              "plan than its tables (a job published again without SIGHUP to the switches?)";
          break;
        case node::JobDrop::kBadSource:
          why =
              "a rank's frames come from another address than the plan gives its host: run "
              "each rank on its host of the topology";
          break;
        case node::JobDrop::kBadIngress:
          why =
              "a rank's frames arrive on another port than its path's: the links differ from "
              "the topology's";
          break;
        default:
          break;
      }
      return absl::FailedPreconditionError(
          absl::StrFormat("%s drops job %d's frames as %s (%d so far): %s", who, nodes_.job,
                          node::JobDropName(reason), d.counts[r] - n.baseline[r], why));
    }
  }
  return absl::OkStatus();
}

absl::Status Health::fault() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fault_;
}

std::vector<uint64_t> Health::StaleDrops() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> out(node_seen_.size(), 0);
  for (size_t i = 0; i < node_seen_.size(); ++i) {
    for (const node::JobDrops& d : node_seen_[i].status.drops) {
      if (d.job == nodes_.job && d.token == nodes_.token) {
        out[i] = d.counts[static_cast<int>(node::JobDrop::kStale)];
      }
    }
  }
  return out;
}

bool Health::NodesLive() const {
  const absl::Time now = absl::Now();
  std::lock_guard<std::mutex> lock(mu_);
  if (node_seen_.empty()) return false;
  for (const NodeSeen& n : node_seen_) {
    if (!n.ok || !n.moved || n.status.ended || now - n.since >= node::kNodeSilentAfter) {
      return false;
    }
  }
  return true;
}

bool Health::AllIssued(uint64_t op_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return AllIssuedLocked(op_id);
}

bool Health::Stalled(absl::Time now) const {
  if (busy_lanes_.load(std::memory_order_relaxed) <= 0) return false;
  const absl::Time answered = absl::FromUnixNanos(answered_ns_.load(std::memory_order_relaxed));
  const absl::Time busy = absl::FromUnixNanos(busy_ns_.load(std::memory_order_relaxed));
  return now - std::max({all_issued_since_, answered, busy}) >= kDropStall;
}

bool Health::AllIssuedLocked(uint64_t op_id) const {
  for (int r = 0; r < world_; ++r) {
    if (r == rank_) continue;
    const Seen& s = seen_[r];
    // A rank that ended (failed, or aborted) will never send: it holds
    // nothing up either.
    if (!s.live || !s.ok || (!s.beat.ended && s.beat.submitted < op_id)) return false;
  }
  return true;
}

std::string Health::Explain(uint64_t op_id) const {
  const absl::Time now = absl::Now();
  std::vector<std::string> silent, ended, behind, unknown;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      const Seen& s = seen_[r];
      if (!s.read) {
        unknown.push_back(std::to_string(r));
      } else if ((!s.ok || !s.beat.ended) && now - s.since >= silent_after_) {
        silent.push_back(std::to_string(r));
      } else if (s.ok && s.beat.ended) {
        // Its communicator was aborted or shut down: say so, rather than
        // "not yet issued" or "every rank is alive".
        ended.push_back(absl::StrFormat("%d (at allreduce %d)", r, s.beat.submitted));
      } else if (s.ok && s.beat.submitted < op_id) {
        behind.push_back(absl::StrFormat("%d (at allreduce %d)", r, s.beat.submitted));
      }
    }
  }
  if (silent.empty() && ended.empty() && behind.empty()) {
    if (!unknown.empty()) {
      return "no heartbeat read yet from ranks " + absl::StrJoin(unknown, ", ");
    }
    return "every rank is alive and has issued it, so its chunks were lost on the way, or an "
           "aggregation switch or the root lost its state (restarted) meanwhile";
  }
  std::vector<std::string> parts;
  if (!silent.empty()) parts.push_back("not responding " + absl::StrJoin(silent, ", "));
  if (!ended.empty()) {
    parts.push_back("ended (aborted or shut down) " + absl::StrJoin(ended, ", "));
  }
  if (!behind.empty()) parts.push_back("not yet issued it " + absl::StrJoin(behind, ", "));
  return "ranks that did not contribute: " + absl::StrJoin(parts, "; ");
}

}  // namespace grid::api
