// allreduce_perf: nccl-tests-style allreduce bandwidth for one rank of a job,
// against peers measured in the same run: a ring allreduce over the same
// transport and fabric, and Gloo's ring over its own TCP transport. Launch it
// as every rank of a job (scripts/allreduce_perf.sh does, on the emulated
// testbed); rank 0 prints the table.
//
//   allreduce_perf [--min-bytes=4096] [--max-bytes=1048576] [--factor=4]
//                  [--iters=3] [--warmup=1] [--ring=true] [--gloo=ADDRESS]
//
// Rows: size and count (float32), redop, root (-1: none), the time per
// operation, algbw = bytes / time, busbw = algbw * 2(n-1)/n (nccl-tests'
// convention, the ring's traffic factor), #wrong elements (GRID's and every
// peer's), and the bytes this host sent per operation. Then each peer's time,
// algbw and bytes sent, and GRID's goodput as a multiple of each peer's.
// Gloo does not count what it sends; its column is a ring's 2(n-1)/n of the
// data, which is what its algorithm sends.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gloo_peer.h"
#include "grid/communicator.h"
#include "grid/control.h"
#include "grid/store.h"
#include "grid/transport.h"
#include "ring_allreduce.h"
#include "tools/flags.h"

namespace {

// Sums of these are exact in float32 and in GRID's fixed point.
void Fill(std::vector<float>& v, int rank) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((rank + 1) * (i % 7 + 1));
}

uint64_t Wrong(const std::vector<float>& v, int world) {
  uint64_t wrong = 0;
  const float ranks = world * (world + 1) / 2.0f;
  for (size_t i = 0; i < v.size(); ++i) wrong += v[i] != ranks * (i % 7 + 1);
  return wrong;
}

struct Row {
  double us = 0;
  uint64_t wrong = 0;
  double sent = 0;  // bytes per operation
};

using AllReduceFn = std::function<absl::Status(std::vector<float>&)>;

// Each size: `warmup` runs, then `iters` timed ones, each on freshly filled
// data, counting wrong elements. `bytes_sent` (a running count; may be
// empty) gives the bytes sent per operation.
absl::StatusOr<std::vector<Row>> Measure(const std::vector<int64_t>& sizes, int warmup, int iters,
                                         int rank, int world, const AllReduceFn& allreduce,
                                         const std::function<uint64_t()>& bytes_sent) {
  std::vector<Row> rows(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<float> v(static_cast<size_t>(sizes[k] / 4));
    absl::Duration total;
    const uint64_t sent0 = bytes_sent ? bytes_sent() : 0;
    for (int i = 0; i < warmup + iters; ++i) {
      Fill(v, rank);
      const absl::Time t0 = absl::Now();
      if (absl::Status s = allreduce(v); !s.ok()) return s;
      if (i < warmup) continue;
      total += absl::Now() - t0;
      rows[k].wrong += Wrong(v, world);
    }
    rows[k].us = absl::ToDoubleMicroseconds(total) / iters;
    if (bytes_sent) rows[k].sent = static_cast<double>(bytes_sent() - sent0) / (warmup + iters);
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  const tools::Flags flags(
      "allreduce_perf", argc, argv,
      {"min-bytes", "max-bytes", "factor", "iters", "warmup", "ring", "gloo"},
      "usage: allreduce_perf [--min-bytes=N] [--max-bytes=N] [--factor=F] [--iters=N]\n"
      "                      [--warmup=N] [--ring=true|false] [--gloo=ADDRESS]\n"
      "--gloo runs Gloo's ring allreduce too, over TCP bound to ADDRESS (127.0.0.1: loopback)\n");
  const int64_t min_bytes = flags.Int("min-bytes", 4096, 4, 1ll << 32);
  const int64_t max_bytes = flags.Int("max-bytes", 1 << 20, 4, 1ll << 32);
  const int64_t factor = flags.Int("factor", 4, 2, 1024);
  const int iters = static_cast<int>(flags.Int("iters", 3, 1, 100000));
  const int warmup = static_cast<int>(flags.Int("warmup", 1, 0, 100000));
  const bool ring = !flags.Get("ring") || flags.Bool("ring");
  const std::string gloo_address = flags.Get("gloo").value_or("");

  auto options = Communicator::OptionsFromEnvironment();
  if (!options.ok()) flags.Fail(std::string(options.status().message()));
  auto store = OpenStore(options->bootstrap.store);
  if (!store.ok()) flags.Fail(std::string(store.status().message()));
  auto get = [&](const std::string& key) {
    auto v = (*store)->Get(key, options->bootstrap.timeout);
    if (!v.ok()) flags.Fail(std::string(v.status().message()));
    return *v;
  };
  auto config = control::ParseWorkerConfigJson(
      get(absl::StrFormat("grid/worker/%d", options->bootstrap.rank)));
  if (!config.ok()) flags.Fail(std::string(config.status().message()));
  const int world = config->world, rank = config->rank;
  std::vector<bench::RingPeer> peers(world);
  for (int r = 0; r < world; ++r) {
    auto c = control::ParseWorkerConfigJson(get(absl::StrFormat("grid/worker/%d", r)));
    if (!c.ok()) flags.Fail(std::string(c.status().message()));
    peers[r].ip = c->ip;
  }
  std::string spec = options->bootstrap.transport.empty()
                         ? get(absl::StrFormat("grid/transport/%d", rank))
                         : options->bootstrap.transport;
  while (!spec.empty() && (spec.back() == '\n' || spec.back() == ' ')) spec.pop_back();
  auto transport = OpenTransport(spec);
  if (!transport.ok()) flags.Fail(std::string(transport.status().message()));
  const std::string describe = (*transport)->Describe();

  std::vector<int64_t> sizes;
  for (int64_t b = min_bytes; b <= max_bytes; b *= factor) sizes.push_back(b / 4 * 4);
  std::vector<Row> ring_rows(sizes.size()), gloo_rows(sizes.size()), grid_rows(sizes.size());

  auto measure = [&](const AllReduceFn& allreduce, const std::function<uint64_t()>& bytes_sent) {
    auto rows = Measure(sizes, warmup, iters, rank, world, allreduce, bytes_sent);
    if (!rows.ok()) flags.Fail(std::string(rows.status().message()));
    return *std::move(rows);
  };
  // The ring first, then Gloo, then GRID over the ring's transport object.
  if (ring) {
    bench::Ring r(*config, peers, transport->get());
    ring_rows = measure(
        [&](std::vector<float>& v) {
          return r.AllReduce(v.data(), v.size(), options->engine.timeout);
        },
        [&] { return r.bytes_sent(); });
    r.Linger(absl::Milliseconds(300));
  }
  // Gloo's ring over its own TCP connections, meeting through the job's store.
  if (!gloo_address.empty()) {
    auto gloo =
        bench::GlooPeer::Connect(**store, rank, world, gloo_address, options->bootstrap.timeout);
    if (!gloo.ok()) flags.Fail(std::string(gloo.status().message()));
    gloo_rows = measure(
        [&](std::vector<float>& v) { return (*gloo)->AllReduce(v.data(), v.size()); }, nullptr);
    // Gloo counts nothing: a ring sends 2(n-1)/n of the data.
    for (size_t k = 0; k < sizes.size(); ++k)
      gloo_rows[k].sent = static_cast<double>(sizes[k]) * 2.0 * (world - 1) / world;
  }
  auto comm = Communicator::Create(*config, *std::move(transport), *options);
  if (!comm.ok()) flags.Fail(std::string(comm.status().message()));
  grid_rows = measure(
      [&](std::vector<float>& v) {
        return (*comm)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32);
      },
      [&] { return (*comm)->stats().bytes_sent; });
  struct Peer {
    const char* name;
    const std::vector<Row>* rows;
  };
  std::vector<Peer> peers_run;
  if (ring) peers_run.push_back({"ring", &ring_rows});
  if (!gloo_address.empty()) peers_run.push_back({"gloo", &gloo_rows});
  uint64_t wrong = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    wrong += grid_rows[k].wrong;
    for (const Peer& p : peers_run) wrong += (*p.rows)[k].wrong;
  }
  if (rank != 0) return wrong == 0 ? 0 : 1;
  std::printf("# allreduce_perf: %d ranks, float32 sum, in place, %d iterations (+%d warmup)\n",
              world, iters, warmup);
  std::printf("# rank 0's transport: %s\n", describe.c_str());
  if (!gloo_address.empty())
    std::printf("# gloo: AllreduceRing over TCP on %s; its sent(B) is 2(n-1)/n of the data\n",
                gloo_address.c_str());
  std::printf(
      "# busbw = algbw * 2(n-1)/n (nccl-tests' convention); sent = bytes this host sent "
      "per operation; #wrong counts GRID's and every peer's\n#\n");
  std::string header =
      absl::StrFormat("# %10s %10s %6s %6s %5s %11s %9s %9s %7s %11s", "size", "count", "type",
                      "redop", "root", "time(us)", "algbw", "busbw", "#wrong", "sent(B)");
  for (const Peer& p : peers_run) {
    absl::StrAppendFormat(&header, " | %11s %9s %11s", absl::StrCat(p.name, "(us)"), "algbw",
                          "sent(B)");
  }
  for (const Peer& p : peers_run)
    absl::StrAppendFormat(&header, " | %8s", absl::StrCat("vs ", p.name));
  std::printf("%s\n", header.c_str());
  const double bus = 2.0 * (world - 1) / world;
  double bus_sum = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const double bytes = static_cast<double>(sizes[k]);
    const Row& g = grid_rows[k];
    const double algbw = bytes / g.us / 1e3;  // GB/s
    bus_sum += algbw * bus;
    uint64_t row_wrong = g.wrong;
    for (const Peer& p : peers_run) row_wrong += (*p.rows)[k].wrong;
    std::string line = absl::StrFormat("  %10d %10d %6s %6s %5d %11.1f %9.4f %9.4f %7d %11.0f",
                                       sizes[k], sizes[k] / 4, "float", "sum", -1, g.us, algbw,
                                       algbw * bus, row_wrong, g.sent);
    for (const Peer& p : peers_run) {
      const Row& r = (*p.rows)[k];
      absl::StrAppendFormat(&line, " | %11.1f %9.4f %11.0f", r.us, bytes / r.us / 1e3, r.sent);
    }
    for (const Peer& p : peers_run) {
      absl::StrAppendFormat(&line, " | %7.2fx", (*p.rows)[k].us / g.us);
    }
    std::printf("%s\n", line.c_str());
  }
  std::printf("# Avg bus bandwidth    : %g\n", bus_sum / sizes.size());
  return wrong == 0 ? 0 : 1;
}
