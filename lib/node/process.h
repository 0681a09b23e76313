// Where a switch's or the root's process runs, so that a tool on the same
// host can read what it costs: allreduce_perf counts the CPU of a job's
// switches and root apart from its ranks' (docs/results.md, "CPU per operation"). A node
// publishes its pid and the host's boot id in its status (node/status.h);
// both mean something only on that host, which the boot id tells.
#ifndef GRID_LIB_NODE_PROCESS_H_
#define GRID_LIB_NODE_PROCESS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "node/status.h"

namespace grid::node {

// This kernel's boot id (/proc/sys/kernel/random/boot_id): every process on
// one host, whatever its network namespace, reads the same. "-" where it
// cannot be read.
std::string ThisBootId();

// The pid of node `name`'s process from its `status`, when that process runs
// on this host: the same boot id, a live process of that pid, and named as a
// node of its kind ("grid-switch", "grid-root") so that a recycled pid is not
// taken for it. Otherwise FailedPrecondition saying which of these failed.
absl::StatusOr<int64_t> LocalPid(const std::string& name, const NodeStatus& status);

// The CPU time, user and system, that process `pid`'s live threads have
// used: the sum of the first field of /proc/PID/task/*/schedstat, which the
// scheduler keeps in nanoseconds (/proc/PID/stat's ticks are 10 ms, coarser
// than one allreduce; they stand in on a kernel without schedstat). Threads
// that have exited are not counted.
absl::StatusOr<absl::Duration> ProcessCpuTime(int64_t pid);

}  // namespace grid::node

#endif  // GRID_LIB_NODE_PROCESS_H_
