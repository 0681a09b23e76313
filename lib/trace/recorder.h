// Timelines (GRID_TRACE, docs/observability.md): what a rank's lane, a root
// lane or a switch lane did and when, kept in memory as Chrome trace events
// and written out when the process ends (chrome.h). A Recorder belongs to one
// thread: recording takes no lock and allocates nothing. It is a ring of
// fixed size: when full, the oldest event goes, and the count of those gone
// is written with the trace.
//
// The code that records holds a Recorder pointer that is null when tracing
// is off, so tracing off costs one predictable branch where an event could
// be. Nothing here reads a clock: the caller gives the time.
#ifndef GRID_LIB_TRACE_RECORDER_H_
#define GRID_LIB_TRACE_RECORDER_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "absl/time/time.h"

namespace grid::trace {

// Chrome's trace-event phases that GRID records.
enum class Phase : char {
  kBegin = 'B',       // a slice on the recorder's track starts...
  kEnd = 'E',         // ...and ends (slices on one track nest)
  kInstant = 'i',     // something happened (a resend, a window cut)
  kCounter = 'C',     // values over time (in flight, window, queue depth)
  kAsyncBegin = 'b',  // a slice that may overlap others (an operation), by id
  kAsyncEnd = 'e',
};

// A numeric argument. Names (and event names and categories) are string
// literals, or strings that outlive the recorder: recording copies no text.
struct Arg {
  const char* name = nullptr;
  int64_t value = 0;
};

struct Event {
  static constexpr int kMaxArgs = 4;
  int64_t ts_ns = 0;  // Unix time (or the simulator's clock) in ns
  const char* name = nullptr;
  const char* category = nullptr;
  uint64_t id = 0;  // async slices
  Arg args[kMaxArgs];
  Phase phase = Phase::kInstant;
};

// Tunables of tracing, each with its reason.
struct TraceTunables {
  // Events a recorder keeps (GRID_TRACE_EVENTS overrides): 2^17 events of
  // 104 bytes, 13 MiB per lane, about a second of a lane resending or
  // changing state at every chunk, or minutes of an unimpaired job.
  static constexpr size_t kDefaultEvents = size_t{1} << 17;
  // How often counters (in flight, window, queue depths, slot occupancy)
  // are sampled: often enough to see a window's round trips at 20 Mbps,
  // seldom enough that counters take a small share of the ring.
  static constexpr absl::Duration kCounterInterval = absl::Microseconds(500);
};

class Recorder {
 public:
  explicit Recorder(size_t capacity = TraceTunables::kDefaultEvents);

  void Record(const Event& e) {
    ring_[next_] = e;
    next_ = next_ + 1 == ring_.size() ? 0 : next_ + 1;
    if (size_ < ring_.size()) {
      ++size_;
    } else {
      ++dropped_;
    }
  }
  void Begin(absl::Time t, const char* name, const char* category) {
    Record(Make(t, Phase::kBegin, name, category, 0, {}));
  }
  void End(absl::Time t, const char* name, const char* category) {
    Record(Make(t, Phase::kEnd, name, category, 0, {}));
  }
  void Instant(absl::Time t, const char* name, const char* category,
               std::initializer_list<Arg> args = {}) {
    Record(Make(t, Phase::kInstant, name, category, 0, args));
  }
  void Counter(absl::Time t, const char* name, std::initializer_list<Arg> args) {
    Record(Make(t, Phase::kCounter, name, "counter", 0, args));
  }
  void AsyncBegin(absl::Time t, const char* name, const char* category, uint64_t id,
                  std::initializer_list<Arg> args = {}) {
    Record(Make(t, Phase::kAsyncBegin, name, category, id, args));
  }
  void AsyncEnd(absl::Time t, const char* name, const char* category, uint64_t id,
                std::initializer_list<Arg> args = {}) {
    Record(Make(t, Phase::kAsyncEnd, name, category, id, args));
  }

  // The events kept, oldest first.
  std::vector<Event> Events() const;
  size_t capacity() const { return ring_.size(); }
  uint64_t dropped() const { return dropped_; }  // the oldest, overwritten

  // Whether a sample is due at `t` (every TraceTunables::kCounterInterval).
  bool SampleDue(absl::Time t) {
    if (t < next_sample_) return false;
    next_sample_ = t + TraceTunables::kCounterInterval;
    return true;
  }

 private:
  static Event Make(absl::Time t, Phase phase, const char* name, const char* category, uint64_t id,
                    std::initializer_list<Arg> args);

  std::vector<Event> ring_;
  size_t next_ = 0, size_ = 0;
  uint64_t dropped_ = 0;
  absl::Time next_sample_ = absl::InfinitePast();
};

}  // namespace grid::trace

#endif  // GRID_LIB_TRACE_RECORDER_H_
