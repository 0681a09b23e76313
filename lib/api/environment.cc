// Communicator::OptionsFromEnvironment: the variables of docs/worker.md, and
// the rank, size and store of the usual launchers (torchrun, mpirun, SLURM).
#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "grid/communicator.h"
#include "grid/wire.h"

namespace grid {
namespace {

// torchrun's store listens on MASTER_PORT; GRID's goes on the next port.
constexpr int64_t kDefaultMasterPort = 29500;

const char* FirstEnv(std::initializer_list<const char*> names, const char** which) {
  for (const char* n : names) {
    if (const char* v = std::getenv(n); v != nullptr && *v != '\0') {
      *which = n;
      return v;
    }
  }
  return nullptr;
}

// Reads the first of `names` that is set into `out`, if it is an integer in
// [lo, hi]; leaves `out` alone when none is set.
absl::Status Integer(std::initializer_list<const char*> names, int64_t lo, int64_t hi,
                     int64_t* out) {
  const char* which = nullptr;
  const char* v = FirstEnv(names, &which);
  if (v == nullptr) return absl::OkStatus();
  int64_t x = 0;
  if (!absl::SimpleAtoi(v, &x) || x < lo || x > hi) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "environment %s=\"%s\": expected an integer in [%d, %d]", which, v, lo, hi));
  }
  *out = x;
  return absl::OkStatus();
}

// Like Integer, where "auto" reads as 0.
absl::Status IntegerOrAuto(const char* name, int64_t lo, int64_t hi, int64_t* out) {
  const char* which = nullptr;
  const char* v = FirstEnv({name}, &which);
  if (v != nullptr && std::string_view(v) == "auto") {
    *out = 0;
    return absl::OkStatus();
  }
  absl::Status s = Integer({name}, lo, hi, out);
  if (!s.ok()) return absl::InvalidArgumentError(std::string(s.message()) + " or \"auto\"");
  return s;
}

void String(std::initializer_list<const char*> names, std::string* out) {
  const char* which = nullptr;
  if (const char* v = FirstEnv(names, &which)) *out = v;
}

}  // namespace

absl::StatusOr<CommunicatorOptions> Communicator::OptionsFromEnvironment(CommunicatorOptions o) {
  BootstrapOptions& b = o.bootstrap;
  EngineOptions& e = o.engine;
  int64_t rank = b.rank, world = b.world_size, timeout_ms = -1, window = -1, rto_us = -1;
  int64_t root_rank = -1, threads = e.threads, root_threads = o.root.threads, busy_us = -1;
  int64_t fence = b.fence ? 1 : 0;
  int64_t trace_events = static_cast<int64_t>(e.trace_events);
  constexpr int64_t kMaxRank = 65534;
  constexpr int64_t kMaxMicros = int64_t{1} << 40;
  for (const absl::Status& s :
       {Integer({"GRID_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}, 0, kMaxRank, &rank),
        Integer({"GRID_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, 1,
                kMaxRank + 1, &world),
        Integer({"GRID_TIMEOUT_MS"}, 1, kMaxMicros, &timeout_ms),
        Integer({"GRID_WINDOW"}, 0, wire::kMaxSlots, &window),
        Integer({"GRID_RTO_US"}, 1, kMaxMicros, &rto_us),
        Integer({"GRID_THREADS"}, 1, 64, &threads),
        Integer({"GRID_BUSY_POLL_US"}, 0, 1000000, &busy_us),
        Integer({"GRID_ROOT_RANK"}, 0, kMaxRank, &root_rank),
        Integer({"GRID_ROOT_THREADS"}, 1, 64, &root_threads), Integer({"GRID_FENCE"}, 0, 1, &fence),
        Integer({"GRID_TRACE_EVENTS"}, 1, int64_t{1} << 26, &trace_events)}) {
    if (!s.ok()) return s;
  }
  b.rank = static_cast<int>(rank);
  b.world_size = static_cast<int>(world);
  b.fence = fence != 0;
  if (timeout_ms > 0) e.timeout = absl::Milliseconds(timeout_ms);
  if (window >= 0) e.window = static_cast<uint32_t>(window);
  e.threads = static_cast<uint32_t>(threads);
  e.trace_events = static_cast<size_t>(trace_events);
  if (busy_us >= 0) e.busy_poll = absl::Microseconds(busy_us);
  o.root.threads = static_cast<uint32_t>(root_threads);
  if (rto_us > 0) {
    e.rto = absl::Microseconds(rto_us);
    e.min_rto = std::min(e.min_rto, e.rto);
    e.max_rto = std::max(e.max_rto, e.rto);
  }
  const char* which = nullptr;
  if (const char* v = FirstEnv({"GRID_STORE"}, &which)) {
    b.store = v;
  } else if (const char* addr = FirstEnv({"MASTER_ADDR"}, &which)) {
    int64_t port = kDefaultMasterPort;
    if (absl::Status s = Integer({"MASTER_PORT"}, 1, 65534, &port); !s.ok()) return s;
    b.store = absl::StrFormat("tcp:%s:%d", addr, port + 1);
  }
  String({"GRID_TRANSPORT"}, &b.transport);
  String({"GRID_TRACE"}, &e.trace_dir);
  String({"GRID_TOPOLOGY"}, &o.control.topology);
  String({"GRID_PLANNER"}, &o.control.planner);
  String({"GRID_ROOT"}, &o.control.root);
  int64_t elements = o.control.job.elements, slots = o.control.job.slots;
  int64_t mtu = static_cast<int64_t>(o.control.path_mtu);
  for (const absl::Status& s : {IntegerOrAuto("GRID_ELEMENTS", 1, wire::kMaxElements, &elements),
                                IntegerOrAuto("GRID_SLOTS", 1, wire::kMaxSlots, &slots),
                                Integer({"GRID_MTU"}, 68, 65535, &mtu)}) {
    if (!s.ok()) return s;
  }
  o.control.job.elements = static_cast<uint16_t>(elements);
  o.control.job.slots = static_cast<uint32_t>(slots);
  o.control.path_mtu = static_cast<size_t>(mtu);
  if (root_rank >= 0 && root_rank == b.rank) o.root.serve = true;
  return o;
}

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::FromEnvironment(
    CommunicatorOptions base) {
  auto options = OptionsFromEnvironment(std::move(base));
  if (!options.ok()) return options.status();
  return Create(*std::move(options));
}

}  // namespace grid
