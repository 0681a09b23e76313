// Internal: wake-ups for poll-mode processes that share a machine.
//
// DPDK's memif PMD has no receive interrupts (its rx_queue_intr_enable says
// "Interrupt mode not supported"), so a process polling memif rings could
// only nap on a timer when idle. With a dozen such processes on two cores
// (the emulated fabric) those timer wake-ups cost more CPU than the frames.
// A Doorbell replaces them: each process owns one shared page (a futex word
// and a count of sleepers) and blocks on it; whoever sends to it rings it,
// with a system call only when the owner is asleep.
//
// The page lives in a file next to each memif socket the process uses,
// `SOCKET.server.bell` or `SOCKET.client.bell` (hard links of one file, so
// a process with many ports has one page), and the sender maps its peer's
// as it appears. Abstract sockets have no directory and get no bells.
#ifndef GRID_LIB_TRANSPORT_DOORBELL_H_
#define GRID_LIB_TRANSPORT_DOORBELL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace grid::transport {

// One `--vdev=net_memif...` EAL argument.
struct MemifVdev {
  std::string name;    // "net_memif0": the DPDK port's name
  std::string socket;  // the socket file's path; empty when abstract
  bool server = true;  // memif's default role
};

// The memif vdevs among EAL arguments, in order.
std::vector<MemifVdev> ParseMemifVdevs(int argc, char** argv);

// The shared page.
struct alignas(64) BellPage {
  std::atomic<uint32_t> seq;       // the futex word: bumped by every ring
  std::atomic<uint32_t> sleepers;  // threads between Arm() and the wake-up
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the page is shared between processes");

// This process's bell. Waiting is two-phase so no ring is lost: Arm(), then
// look for work once more, then Wait() (or Disarm() if there was work).
class Doorbell {
 public:
  // Creates the page at paths[0] (replacing a stale one) and links the other
  // paths to it.
  static absl::StatusOr<std::unique_ptr<Doorbell>> Create(const std::vector<std::string>& paths);
  ~Doorbell();
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  void Arm();
  void Disarm();
  // Blocks until rung after Arm() or `timeout` passes (a signal also ends
  // it); then disarms.
  void Wait(absl::Duration timeout);

 private:
  Doorbell(BellPage* page, std::vector<std::string> paths)
      : page_(page), paths_(std::move(paths)) {}
  BellPage* page_;
  std::vector<std::string> paths_;
  uint32_t armed_seq_ = 0;
};

// A peer's bell, mapped once its file exists.
class PeerBell {
 public:
  explicit PeerBell(std::string path) : path_(std::move(path)) {}
  ~PeerBell();
  PeerBell(const PeerBell&) = delete;
  PeerBell& operator=(const PeerBell&) = delete;

  // After sending to the peer: wakes it if it sleeps. An atomic load when it
  // is awake.
  void Ring() {
    // Orders the frames' publication before the look at `sleepers`; the
    // sleeper orders its Arm() before its last poll the same way.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // Now and then: has the peer gone (a restarted switch makes a new bell),
    // or come?
    if (++rings_ % kRecheckEvery == 0 || page_ == nullptr) Recheck();
    if (page_ == nullptr) return;
    if (page_->sleepers.load(std::memory_order_relaxed) != 0) Wake();
  }

  bool mapped() const { return page_ != nullptr; }

  // A sender looks for a bell that is missing, or was replaced, once per
  // this many rings: a failed open() or an fstat() per 4096 bursts.
  static constexpr uint32_t kRecheckEvery = 4096;

 private:
  void Recheck();
  void Wake();
  std::string path_;
  int fd_ = -1;
  BellPage* page_ = nullptr;
  uint32_t rings_ = 0;
};

// The bell-file path of one end of a memif socket.
std::string BellPath(const MemifVdev& vdev, bool own);

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_DOORBELL_H_
