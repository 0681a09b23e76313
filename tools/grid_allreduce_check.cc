// grid-allreduce-check: one rank of a job, for integration tests and the
// testbed demo. It joins through the environment (GRID_RANK, GRID_STORE,
// ...), runs a training-like loop of allreduces whose exact answers it can
// compute (every rank's inputs come from seeds), and checks every element:
// int32 exactly, float32 against the numerics bound of its block.
//
//   grid-allreduce-check [--iterations=3] [--count=20000] [--types=int32,float32]
//                        [--seconds=S] [--compute-ms=C] [--call-times]
//
// --compute-ms emulates training's compute phase: each iteration first
// sleeps C ms (forward and backward pass), then allreduces its gradient.
// --call-times adds each AllReduce's entry and exit (µs on the machine's
// clock, which every process of a one-machine testbed shares): how far apart
// the ranks enter an operation, which the slowest rank's time includes.
//
// Prints one JSON line: correctness, the communication time per iteration
// (the allreduce calls only), the iteration time (compute plus
// communication; the checking is not counted), the sending rate and the
// engine's counters.
// Exits 0 when every result is right, 1 when one is wrong, 3 when an
// operation failed (its status is printed).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grid/communicator.h"
#include "grid/numerics.h"
#include "grid/wire.h"
#include "tools/flags.h"
#include "util/random.h"

namespace {

using grid::DataType;

std::vector<int32_t> Ints(int rank, int iteration, size_t n) {
  // Distinct streams per (rank, iteration): the primes keep them apart.
  grid::util::Random rng(static_cast<uint64_t>(rank) * 7919 + iteration);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = static_cast<int32_t>(rng.Below(1u << 24)) - (1 << 23);
  return v;
}

std::vector<float> Floats(int rank, int iteration, size_t n) {
  grid::util::Random rng(static_cast<uint64_t>(rank) * 104729 + iteration);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(rng.Uniform(-1, 1) * std::ldexp(1.0, static_cast<int>(i % 13) - 6));
  }
  return v;
}

// What the loop found so far.
struct Tally {
  uint64_t wrong = 0;
  double worst = 0;  // largest |error| / bound
  absl::Status failure;
  absl::Duration in_allreduce;  // time in AllReduce calls only
  absl::Duration in_compute;    // time in the emulated compute phase
  int done = 0;                 // iterations
  // Each checked AllReduce's entry and exit, when asked (--call-times).
  bool record_calls = false;
  std::vector<std::pair<absl::Time, absl::Time>> calls;
};

// Times one checked AllReduce into the tally.
template <typename Call>
void Timed(Tally& t, Call call) {
  const absl::Time t0 = absl::Now();
  t.failure = call();
  const absl::Time t1 = absl::Now();
  t.in_allreduce += t1 - t0;
  if (t.record_calls) t.calls.emplace_back(t0, t1);
}

void CheckInt32(grid::Communicator& c, int it, size_t count, Tally& t) {
  std::vector<int32_t> v = Ints(c.rank(), it, count);
  Timed(t, [&] { return c.AllReduce(v.data(), v.data(), count, DataType::kInt32); });
  if (!t.failure.ok()) return;
  std::vector<int32_t> expected(count, 0);
  for (int r = 0; r < c.world_size(); ++r) {
    const std::vector<int32_t> in = Ints(r, it, count);
    for (size_t i = 0; i < count; ++i) expected[i] += in[i];
  }
  for (size_t i = 0; i < count; ++i) t.wrong += v[i] != expected[i];
}

// Each element against the numerics bound of its block (docs/numerics.md).
void CheckFloat32(grid::Communicator& c, int it, size_t count, Tally& t) {
  const int world = c.world_size();
  const std::vector<float> mine = Floats(c.rank(), it, count);
  std::vector<float> out(count);
  Timed(t, [&] { return c.AllReduce(mine.data(), out.data(), count, DataType::kFloat32); });
  if (!t.failure.ok()) return;
  std::vector<std::vector<float>> all;
  for (int r = 0; r < world; ++r) all.push_back(Floats(r, it, count));
  constexpr size_t kBlock = grid::wire::kDefaultElements;
  for (size_t b = 0; b < count; b += kBlock) {
    const size_t e = std::min(count, b + kBlock);
    uint8_t exponent = 0;
    for (const auto& in : all) {
      exponent = std::max(exponent, *grid::numerics::BlockExponent({in.data() + b, e - b}));
    }
    for (size_t i = b; i < e; ++i) {
      double exact = 0, magnitude = 0;
      for (const auto& in : all) {
        exact += in[i];
        magnitude += std::fabs(in[i]);
      }
      const double bound = grid::numerics::SumErrorBound(exponent, world, world, magnitude);
      const double ratio = std::fabs(out[i] - exact) / bound;
      t.worst = std::max(t.worst, ratio);
      t.wrong += ratio > 1;
    }
  }
}

void PrintResult(grid::Communicator& c, const Tally& t, double seconds) {
  const grid::CommunicatorStats s = c.stats();
  const double comm_s = absl::ToDoubleSeconds(t.in_allreduce);
  std::string calls;
  if (t.record_calls) {
    calls = ",\"calls\":[";
    for (const auto& [enter, leave] : t.calls) {
      absl::StrAppendFormat(&calls, "%s[%d,%d]", calls.back() == '[' ? "" : ",",
                            absl::ToUnixMicros(enter), absl::ToUnixMicros(leave));
    }
    calls += "]";
  }
  std::printf(
      "{\"rank\":%d,\"ok\":%s,\"wrong\":%llu,\"worst_error_over_bound\":%.3f,\"seconds\":%.3f,"
      "\"comm_ms_per_iteration\":%.3f,\"iteration_ms\":%.3f,\"send_mbps\":%.3f,"
      "\"bytes_sent\":%llu,"
      "\"operations\":%llu,\"packets_sent\":%llu,\"packets_received\":%llu,"
      "\"retransmissions\":%llu,\"early_retransmissions\":%llu,\"duplicate_results\":%llu,"
      "\"timeouts\":%llu,\"foreign\":%llu,"
      "\"error\":\"%s\"%s}\n",
      c.rank(), t.failure.ok() && t.wrong == 0 ? "true" : "false",
      static_cast<unsigned long long>(t.wrong), t.worst, seconds,
      1e3 * comm_s / std::max(t.done, 1),
      1e3 * (comm_s + absl::ToDoubleSeconds(t.in_compute)) / std::max(t.done, 1),
      comm_s > 0 ? 8e-6 * static_cast<double>(s.bytes_sent) / comm_s : 0.0,
      static_cast<unsigned long long>(s.bytes_sent), static_cast<unsigned long long>(s.operations),
      static_cast<unsigned long long>(s.packets_sent),
      static_cast<unsigned long long>(s.packets_received),
      static_cast<unsigned long long>(s.retransmissions),
      static_cast<unsigned long long>(s.early_retransmissions),
      static_cast<unsigned long long>(s.duplicate_results),
      static_cast<unsigned long long>(s.timeouts), static_cast<unsigned long long>(s.foreign),
      std::string(t.failure.message()).c_str(), calls.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const grid::tools::Flags flags(
      "grid-allreduce-check", argc, argv,
      {"iterations", "count", "types", "seconds", "compute-ms", "call-times"},
      "usage: grid-allreduce-check [--iterations=N] [--count=N] [--types=int32,float32]\n"
      "                            [--seconds=S] [--compute-ms=C] [--call-times]\n"
      "--compute-ms: an emulated compute phase of C ms before each iteration's allreduces\n"
      "--call-times: print each checked AllReduce's entry and exit (us since the epoch)\n"
      "--seconds: stop after the iteration that passes S seconds (every rank the same way:\n"
      "rank 0 decides and the others learn it through an allreduce)\n");
  const int iterations = static_cast<int>(flags.Int("iterations", 3, 1, 100000));
  const size_t count = static_cast<size_t>(flags.Int("count", 20000, 0, 1 << 28));
  const int64_t seconds_limit = flags.Int("seconds", 0, 0, 86400);
  const absl::Duration compute = absl::Milliseconds(flags.Int("compute-ms", 0, 0, 3600000));
  const std::vector<std::string> types =
      absl::StrSplit(flags.String("types", "int32,float32"), ',');
  for (const std::string& type : types) {
    if (type != "int32" && type != "float32") flags.Fail("--types: unknown type \"" + type + "\"");
  }
  auto comm = grid::Communicator::FromEnvironment();
  if (!comm.ok()) {
    std::printf("{\"ok\":false,\"error\":\"%s\"}\n", std::string(comm.status().message()).c_str());
    return 3;
  }
  grid::Communicator& c = **comm;
  Tally t;
  t.record_calls = flags.Get("call-times").has_value();
  const absl::Time start = absl::Now();
  for (int it = 0; it < iterations && t.failure.ok(); ++it, ++t.done) {
    if (seconds_limit > 0) {
      // Every rank must stop at the same iteration: rank 0's clock decides.
      int32_t stop = c.rank() == 0 && absl::Now() - start > absl::Seconds(seconds_limit);
      t.failure = c.AllReduce(&stop, &stop, 1, DataType::kInt32);
      if (!t.failure.ok() || stop != 0) break;
    }
    if (compute > absl::ZeroDuration()) {
      const absl::Time c0 = absl::Now();
      absl::SleepFor(compute);
      t.in_compute += absl::Now() - c0;
    }
    for (const std::string& type : types) {
      if (!t.failure.ok()) break;
      if (type == "int32") {
        CheckInt32(c, it, count, t);
      } else {
        CheckFloat32(c, it, count, t);
      }
    }
  }
  PrintResult(c, t, absl::ToDoubleSeconds(absl::Now() - start));
  if (!t.failure.ok()) return 3;
  return t.wrong == 0 ? 0 : 1;
}
