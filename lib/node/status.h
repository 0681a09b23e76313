// What a switch or the root publishes in the job's store for the job's ranks
// (docs/worker.md, "What nodes tell the ranks"): a heartbeat, so a rank can
// name a node that died instead of waiting out its timeout, and the drops it
// counted against each (job, token) (node/drop_ledger.h). grid-switch and
// grid-root write it under grid/node/NAME every kNodeBeatPeriod while they
// run from a store, and "end" when they stop; api::Health reads it.
#ifndef GRID_LIB_NODE_STATUS_H_
#define GRID_LIB_NODE_STATUS_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "grid/store.h"
#include "node/drop_ledger.h"

namespace grid::node {

// How often a node writes its status. A rank takes a node whose status has
// not changed for kNodeSilentAfter for dead: six periods, so a node on a
// loaded machine (two cores shared by every process of a job) that misses a
// few writes is not.
inline constexpr absl::Duration kNodeBeatPeriod = absl::Milliseconds(250);
inline constexpr absl::Duration kNodeSilentAfter = absl::Milliseconds(1500);

enum class NodeKind : uint8_t { kSwitch, kRoot };
// "grid-switch", "grid-root": the process a person would look for.
const char* NodeKindName(NodeKind kind);

struct NodeStatus {
  NodeKind kind = NodeKind::kSwitch;
  int64_t unix_ms = 0;     // when written
  int64_t started_ms = 0;  // when the process started: a restart changes it
  bool ended = false;      // stopped on a signal, not died
  // Its process on its host, for a tool on the same host that reads what the
  // node costs (node/process.h): the pid and the kernel's boot id ("-": not
  // known).
  int64_t pid = 0;
  std::string boot_id = "-";
  std::vector<JobDrops> drops;
  bool operator==(const NodeStatus&) const = default;
};

std::string NodeStatusKey(std::string_view name);  // "grid/node/NAME"
// Text: "switch|root UNIX_MS STARTED_MS run|end PID BOOT_ID", then a line
// per (job, token): "JOB TOKEN" and the counts in JobDrop order.
std::string FormatNodeStatus(const NodeStatus& status);
// False when `text` is not a status.
bool ParseNodeStatus(std::string_view text, NodeStatus* status);

// Writes a node's status from a thread of its own, so a slow store never
// delays the packet loop. `drops` runs on that thread and must only read
// (DropLedger::Snapshot is safe from any thread).
class NodeReporter {
 public:
  NodeReporter(std::unique_ptr<Store> store, std::string name, NodeKind kind,
               std::function<std::vector<JobDrops>()> drops,
               absl::Duration period = kNodeBeatPeriod);
  ~NodeReporter();  // Stop()
  NodeReporter(const NodeReporter&) = delete;
  NodeReporter& operator=(const NodeReporter&) = delete;
  // Joins the thread and writes "end"; idempotent. `ended` false: no last
  // word, as from a process that was killed (tests play that).
  void Stop(bool ended = true);

 private:
  void Loop();
  absl::Status Write(bool ended);

  std::unique_ptr<Store> store_;
  const std::string name_;
  const NodeKind kind_;
  const std::function<std::vector<JobDrops>()> drops_;
  const absl::Duration period_;
  const int64_t started_ms_;
  const int64_t pid_;
  const std::string boot_id_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace grid::node

#endif  // GRID_LIB_NODE_STATUS_H_
