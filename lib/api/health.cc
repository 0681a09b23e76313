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
               absl::Duration timeout)
    : rank_(rank),
      world_(world),
      silent_after_(std::min(4 * kHeartbeatPeriod, timeout * 0.4)),
      read_period_(std::max(kMinReadPeriod, silent_after_ / 4)),
      reader_(std::move(reader)),
      writer_(std::move(writer)),
      seen_(world) {
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
    s.read = true;
    s.ok = ok;
    if (ok) s.beat = beat;
  }
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
