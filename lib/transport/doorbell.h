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
  std::atomic<uint32_t> want;      // frames the sleeper waits for (>= 1)
  std::atomic<uint32_t> arms;      // Arm() calls so far: a sender's count restarts
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

  // `want`: how many frames a sender should have sent since this Arm()
  // before it rings (it also rings when it goes idle; PeerBell::Flush). A
  // process with one sender asks for a few, so it wakes once per batch of
  // results instead of once per frame; one with many senders asks for 1.
  void Arm(uint32_t want = 1);
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

  // After sending `frames` to the peer: wakes it if it sleeps and has been
  // sent what it wants, else owes it a ring. An atomic load when it is
  // awake.
  void Ring(uint32_t frames = 1) {
    // Orders the frames' publication before the look at `sleepers`; the
    // sleeper orders its Arm() before its last poll the same way.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // Now and then: has the peer gone (a restarted switch makes a new bell),
    // or come?
    if (++rings_ % kRecheckEvery == 0 || page_ == nullptr) Recheck();
    if (page_ == nullptr || page_->sleepers.load(std::memory_order_acquire) == 0) return;
    const uint32_t arms = page_->arms.load(std::memory_order_relaxed);
    if (arms != arms_) {  // a new sleep: count afresh
      arms_ = arms;
      sent_ = 0;
    }
    sent_ += frames;
    if (sent_ >= page_->want.load(std::memory_order_relaxed)) {
      owed_ = false;
      Wake();
    } else {
      owed_ = true;
    }
  }

  // The sender has nothing more to send for now (it found no input, or is
  // about to sleep): pays a ring it owes. Every sender that rings must call
  // this before it sleeps, or its peer waits for its own timeout.
  void Flush() {
    if (!owed_) return;
    owed_ = false;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (page_->sleepers.load(std::memory_order_acquire) != 0) Wake();
  }

  bool mapped() const { return page_ != nullptr; }

  // Whether the peer has a bell, looking for it now and then: a process
  // blocks on its own bell only if every peer that sends to it rings (a
  // multi-lcore switch has none), and naps otherwise.
  bool Present() {
    if (page_ == nullptr) {
      ++rings_;
      Recheck();
    }
    return page_ != nullptr;
  }

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
  uint32_t arms_ = 0;  // the peer's Arm() count when sent_ started
  uint32_t sent_ = 0;  // frames since then
  bool owed_ = false;
};

// The bell-file path of one end of a memif socket.
std::string BellPath(const MemifVdev& vdev, bool own);

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_DOORBELL_H_
