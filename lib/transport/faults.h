// Internal: fault injection for emulated links. This is the one place where
// a link's faults are decided and applied: the transports' loss=/dup=/
// reorder= options (ImpairedTransport), grid-switch's --impair ports
// (sw::EgressPort), the in-process LoopbackFabric and the tests' networks
// all push their frames through a FaultApplier. A frame is whatever the
// link carries (bytes, an mbuf, a queued event); the applier only decides
// and orders, and the link's own copy and drop functions handle the frame.
#ifndef GRID_LIB_TRANSPORT_FAULTS_H_
#define GRID_LIB_TRANSPORT_FAULTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "util/random.h"

namespace grid::transport {

// Probabilities per frame sent, and the seed of the draws.
struct LinkFaults {
  double loss = 0;       // the frame is dropped
  double duplicate = 0;  // it goes out twice
  double reorder = 0;    // a copy is held back to go out behind the next frame
  uint64_t seed = 1;
  bool any() const { return loss > 0 || duplicate > 0 || reorder > 0; }
  std::string Describe() const;  // "loss 0.01, dup 0, reorder 0.05"
};

// One "key=value" of a spec: loss=P, dup=P, reorder=P (P in [0, 1]) or
// seed=N (a whole number below 2^64). Returns false when `key` is none of
// these; an error naming the key when its value is bad.
absl::StatusOr<bool> ParseFault(std::string_view key, std::string_view value, LinkFaults& faults);
// A whole comma-separated spec of those keys ("loss=0.01,reorder=0.1").
// `allow_seed` false refuses seed= (where the seed is drawn per link).
absl::StatusOr<LinkFaults> ParseLinkFaults(std::string_view spec, bool allow_seed = true);

// The draws: what happens to each frame, in the order frames are sent.
class FaultInjector {
 public:
  explicit FaultInjector(const LinkFaults& faults) : faults_(faults), rng_(faults.seed) {}

  // How many copies of the next frame go out: 0 (lost), 1, or 2 (duplicated).
  int Copies() {
    if (faults_.loss > 0 && rng_.Uniform() < faults_.loss) {
      ++lost_;
      return 0;
    }
    if (faults_.duplicate > 0 && rng_.Uniform() < faults_.duplicate) {
      ++duplicated_;
      return 2;
    }
    return 1;
  }
  // Whether this copy is held back behind the next frame. `can_hold`: the
  // link has room to hold one (a link holds at most one at a time).
  bool Hold(bool can_hold = true) {
    if (!can_hold || faults_.reorder <= 0 || rng_.Uniform() >= faults_.reorder) return false;
    ++reordered_;
    return true;
  }

  const LinkFaults& faults() const { return faults_; }
  uint64_t lost() const { return lost_; }
  uint64_t duplicated() const { return duplicated_; }
  uint64_t reordered() const { return reordered_; }

 private:
  LinkFaults faults_;
  util::Random rng_;
  uint64_t lost_ = 0, duplicated_ = 0, reordered_ = 0;
};

// The faults of one link direction, applied to its frames in send order:
// each frame is lost, goes out once, or goes out twice, and a copy may be
// held back to go out right behind the next frame that passes (a link holds
// at most one). The link releases a held frame when nothing follows it
// (Release), so a pause never strands it.
//
// Frame is moved, never copied, by the applier: `copy(const Frame&)` makes
// the duplicate (returning std::optional<Frame>; nullopt when none could be
// made, say an empty mbuf pool), `drop(Frame&&)` disposes of a lost frame,
// and `emit(Frame&&)` sends one on. Templates, so no call per frame is
// virtual.
template <typename Frame>
class FaultApplier {
 public:
  explicit FaultApplier(const LinkFaults& faults) : injector_(faults) {}

  template <typename Copy, typename Drop, typename Emit>
  void Apply(Frame frame, Copy&& copy, Drop&& drop, Emit&& emit) {
    const int copies = injector_.Copies();
    if (copies == 0) {
      drop(std::move(frame));
      return;
    }
    std::optional<Frame> second;
    if (copies == 2) second = copy(static_cast<const Frame&>(frame));
    Pass(std::move(frame), emit);
    if (second.has_value()) Pass(*std::move(second), emit);
  }

  // The held frame, if any, goes out now.
  template <typename Emit>
  void Release(Emit&& emit) {
    if (!held_.has_value()) return;
    Frame f = *std::move(held_);
    held_.reset();
    emit(std::move(f));
  }
  // Gives the held frame back to the caller instead (a link that closes).
  std::optional<Frame> TakeHeld() {
    std::optional<Frame> f = std::move(held_);
    held_.reset();
    return f;
  }
  // Holds again a frame it released that the link could not send after all
  // (back-pressure); only while it holds none.
  void Restore(Frame f) {
    if (!held_.has_value()) held_ = std::move(f);
  }

  bool holding() const { return held_.has_value(); }
  const FaultInjector& injector() const { return injector_; }
  const LinkFaults& faults() const { return injector_.faults(); }

 private:
  template <typename Emit>
  void Pass(Frame f, Emit& emit) {
    if (injector_.Hold(!held_.has_value())) {
      held_ = std::move(f);  // goes out behind the next one
      return;
    }
    emit(std::move(f));
    Release(emit);
  }

  FaultInjector injector_;
  std::optional<Frame> held_;
};

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_FAULTS_H_
