// Internal: fault injection for emulated links, the one implementation that
// every emulated link uses: the transports' loss=/dup=/reorder= options
// (ImpairedTransport), the in-process LoopbackFabric, grid-switch's --impair
// ports and the tests' networks. A link direction owns a FaultInjector; it
// decides each frame's fate, and the link applies it to its own kind of
// frame (bytes, mbufs, queued events).
#ifndef GRID_LIB_TRANSPORT_FAULTS_H_
#define GRID_LIB_TRANSPORT_FAULTS_H_

#include <cstdint>
#include <string>
#include <string_view>

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
  // link has room to hold one (most hold at most one at a time).
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

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_FAULTS_H_
