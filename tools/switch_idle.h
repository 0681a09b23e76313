// grid-switch's idle policy on DPDK ports (tools/switch_dpdk.cc).
#ifndef GRID_TOOLS_SWITCH_IDLE_H_
#define GRID_TOOLS_SWITCH_IDLE_H_

#include <sched.h>

#include <chrono>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "transport/doorbell.h"

namespace grid::tools {

// Poll loops yield the CPU (sched_yield) on each of kIdleRounds empty
// rounds, then sleep, so several switches and hosts can share two cores
// (two busy pollers on one core collapse). With a doorbell (memif ports,
// one lcore) the loop blocks until a peer sends; with none, or while frames
// wait for a rate limit, it naps for --idle-us. --idle-us=0 polls without
// pause. Every DPDK loop uses it.
class IdleBackoff {
 public:
  static constexpr int kIdleRounds = 64;
  // The longest block on the doorbell: how late a signal's request (dump,
  // reload, stop) may be served.
  static constexpr absl::Duration kBellWait = absl::Milliseconds(20);

  IdleBackoff(int idle_us, transport::Doorbell* bell) : idle_us_(idle_us), bell_(bell) {}

  // `must_nap` (asked only once the loop is idle): frames wait for a timer,
  // or a peer could never ring.
  void After(size_t work, absl::FunctionRef<bool()> must_nap) {
    if (work != 0 || idle_us_ == 0) {
      idle_rounds_ = 0;
      Disarm();
      return;
    }
    if (++idle_rounds_ <= kIdleRounds) {
      // Not a busy poll: with more pollers than cores, the process that
      // will send next needs this CPU.
      sched_yield();
      return;
    }
    if (bell_ == nullptr || must_nap()) {
      Disarm();
      std::this_thread::sleep_for(std::chrono::microseconds(idle_us_));
    } else if (!armed_) {
      bell_->Arm();  // the next round looks at the rings once more
      armed_ = true;
    } else {
      bell_->Wait(kBellWait);
      armed_ = false;
    }
  }

 private:
  void Disarm() {
    if (armed_) bell_->Disarm();
    armed_ = false;
  }
  const int idle_us_;
  transport::Doorbell* const bell_;
  int idle_rounds_ = 0;
  bool armed_ = false;
};

}  // namespace grid::tools

#endif  // GRID_TOOLS_SWITCH_IDLE_H_
