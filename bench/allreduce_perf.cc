// allreduce_perf: nccl-tests-style allreduce bandwidth for one rank of a job,
// against peers measured in the same run: a ring allreduce over the same
// transport and fabric, Gloo's ring over its own TCP transport, and
// MPI_Allreduce. Launch it as every rank of a job (scripts/allreduce_perf.sh
// does, on the emulated testbed; scripts/netns_perf.sh through mpirun on the
// netns fabric); rank 0 prints the table.
//
//   allreduce_perf [--min-bytes=4096] [--max-bytes=1048576] [--factor=4]
//                  [--iters=3] [--warmup=5] [--ring=true] [--gloo=ADDRESS|worker]
//                  [--mpi=false] [--tx-interface=IF] [--buckets=1] [--plot=FILE.png]
//
// Rows: size and count (float32), redop, root (-1: none), the time per
// operation, algbw = bytes / time, busbw = algbw * 2(n-1)/n (nccl-tests'
// convention, the ring's traffic factor), #wrong elements (GRID's and every
// peer's), the bytes this host sent per operation, cpu(us): the CPU a rank's
// process (all its threads, user and system) used per operation, the mean
// over the ranks (each publishes its own through the job's store), where
// time(us) is wall time, and net(us): the CPU the job's switches and root
// (every node in the ranks' configs) used per operation, all of them
// together, over the same timed runs; "-" where a node runs on another host
// or did not say which process it is (node/process.h). Then each peer's
// time, algbw, bytes sent and both CPUs (on the netns fabric the switches
// forward the peers' TCP too), GRID's goodput as a multiple of each peer's,
// and GRID's ranks' CPU as a fraction of each peer's.
// Gloo and MPI do not count what they send. With --tx-interface every
// column, GRID's included, is what that interface's transmit counter grew by
// (the netns fabric's hosts have one interface each); without it, Gloo's is a
// ring's 2(n-1)/n of the data, which is what its algorithm sends, and MPI's
// is not shown.
//
// --plot=FILE.png draws busbw against size, a line per column (gnuplot),
// with the numbers in FILE.png.dat.
//
// --buckets=N issues GRID's allreduce of each size as N operations of about
// equal size in one group, as a data-parallel trainer hands over its
// gradient buckets; operations above the fusion size are then chained
// (docs/worker.md, "Chained operations"). The peers run one operation.
//
// Five warm-up runs per size by default, as nccl-tests: on memif the first
// passes through each ring's shared buffers fault their pages in (several
// hundred ms for a 1 MiB allreduce on this testbed), a cost of the process's
// start, not of the allreduce.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gloo_peer.h"
#include "grid/communicator.h"
#include "grid/control.h"
#include "grid/store.h"
#include "grid/transport.h"
#include "grid/wire.h"
#include "mpi_peer.h"
#include "node/process.h"
#include "node/status.h"
#include "plot.h"
#include "ring_allreduce.h"
#include "tools/flags.h"

namespace {

// Rank r's element i is (r + 1) * (i % 7 + 1); sums of these are exact in
// float32 and in GRID's fixed point. Filling and checking run between timed
// operations on cores the other ranks share, so they copy and compare against
// precomputed vectors instead of dividing per element: at 16 MiB the
// per-element form took a fifth of the machine while the others ran.
class Pattern {
 public:
  Pattern(size_t n, int rank, int world) : input_(n), expected_(n) {
    const float ranks = world * (world + 1) / 2.0f;
    for (size_t i = 0; i < n; ++i) {
      input_[i] = static_cast<float>((rank + 1) * (i % 7 + 1));
      expected_[i] = ranks * static_cast<float>(i % 7 + 1);
    }
  }
  void Fill(std::vector<float>& v) const { v = input_; }
  uint64_t Wrong(const std::vector<float>& v) const {
    uint64_t wrong = 0;
    for (size_t i = 0; i < v.size(); ++i) wrong += v[i] != expected_[i];
    return wrong;
  }

 private:
  std::vector<float> input_, expected_;
};

struct Row {
  double us = 0;
  double cpu_us = 0;        // this process's CPU per operation, then the ranks' mean
  double net_cpu_us = NAN;  // the switches' and root's CPU per operation; NaN: not known
  uint64_t wrong = 0;
  double sent = NAN;  // bytes per operation; NaN: not known
};

// The bytes interface `name` of this process's network namespace has sent.
absl::StatusOr<uint64_t> InterfaceTxBytes(const std::string& name) {
  std::ifstream in("/proc/self/net/dev");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(' ');
    if (line.substr(start, colon - start) != name) continue;
    // receive: bytes packets errs drop fifo frame compressed multicast; then transmit bytes.
    unsigned long long v[9] = {};
    if (std::sscanf(line.c_str() + colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                    &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) != 9) {
      return absl::DataLossError(absl::StrCat("/proc/self/net/dev: unreadable line for ", name));
    }
    return static_cast<uint64_t>(v[8]);
  }
  return absl::NotFoundError(
      absl::StrCat("--tx-interface: no interface \"", name, "\" in this network namespace"));
}

absl::Duration ProcessCpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return absl::DurationFromTimeval(u.ru_utime) + absl::DurationFromTimeval(u.ru_stime);
}

std::string Bytes(double sent) {
  return std::isnan(sent) ? std::string("-") : absl::StrFormat("%.0f", sent);
}

using AllReduceFn = std::function<absl::Status(std::vector<float>&)>;

// GRID's allreduce of `v` in place: one operation, or `buckets` of about
// equal size in one group.
absl::Status GridAllReduce(grid::Communicator& c, std::vector<float>& v, int buckets,
                           absl::Duration timeout) {
  using grid::DataType;
  if (buckets <= 1) return c.AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32);
  if (absl::Status s = c.GroupStart(); !s.ok()) return s;
  const size_t per = (v.size() + buckets - 1) / buckets;
  std::vector<grid::Work> work;
  absl::Status status;
  for (size_t at = 0; at < v.size() && status.ok(); at += per) {
    auto w = c.AllReduceAsync(v.data() + at, v.data() + at, std::min(per, v.size() - at),
                              DataType::kFloat32);
    if (w.ok()) work.push_back(*std::move(w));
    status.Update(w.status());
  }
  status.Update(c.GroupEnd());
  for (grid::Work& w : work) status.Update(w.Wait(timeout));
  return status;
}

// The processes of a job's switches and root on this host, whose CPU is
// counted apart from the ranks'.
class NetworkCpu {
 public:
  // From the status each of `nodes` writes in the store (node/status.h);
  // `why` says what kept the count from being known, if anything did.
  NetworkCpu(grid::Store& store, const std::set<std::string>& nodes) {
    for (const std::string& name : nodes) {
      // Nodes write their status when they start and every 250 ms: one that
      // has not within 2 s runs without a store, and is not waited for.
      auto text = store.Get(grid::node::NodeStatusKey(name), absl::Seconds(2));
      grid::node::NodeStatus status;
      if (!text.ok() || !grid::node::ParseNodeStatus(*text, &status)) {
        why_ = absl::StrCat(name, " wrote no status in the store");
        return;
      }
      auto pid = grid::node::LocalPid(name, status);
      if (!pid.ok()) {
        why_ = std::string(pid.status().message());
        return;
      }
      pids_.push_back(*pid);
    }
    if (pids_.empty()) why_ = "the ranks' configs name no node";
  }
  bool known() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  // Their CPU so far, all together; nullopt once one can no longer be read.
  std::optional<absl::Duration> Now() const {
    absl::Duration sum;
    for (int64_t pid : pids_) {
      auto t = grid::node::ProcessCpuTime(pid);
      if (!t.ok()) return std::nullopt;
      sum += *t;
    }
    return sum;
  }

 private:
  std::vector<int64_t> pids_;
  std::string why_;
};

// Each size: `warmup` runs, then `iters` timed ones, each on freshly filled
// data, counting wrong elements. `bytes_sent` (a running count; may be
// empty) gives the bytes sent per operation. `network` (may be null) counts
// the nodes' CPU from the first timed run's start to the last's end: their
// work for one rank's operation starts when the first rank's does.
absl::StatusOr<std::vector<Row>> Measure(const std::vector<int64_t>& sizes, int warmup, int iters,
                                         int rank, int world, const AllReduceFn& allreduce,
                                         const std::function<uint64_t()>& bytes_sent,
                                         const NetworkCpu* network) {
  std::vector<Row> rows(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    const Pattern pattern(static_cast<size_t>(sizes[k] / 4), rank, world);
    std::vector<float> v;
    absl::Duration total, cpu;
    const uint64_t sent0 = bytes_sent ? bytes_sent() : 0;
    std::optional<absl::Duration> net0;
    for (int i = 0; i < warmup + iters; ++i) {
      pattern.Fill(v);
      if (i == warmup && network != nullptr) net0 = network->Now();
      const absl::Time t0 = absl::Now();
      const absl::Duration cpu0 = ProcessCpu();
      if (absl::Status s = allreduce(v); !s.ok()) return s;
      if (i < warmup) continue;
      total += absl::Now() - t0;
      cpu += ProcessCpu() - cpu0;
      rows[k].wrong += pattern.Wrong(v);
    }
    rows[k].us = absl::ToDoubleMicroseconds(total) / iters;
    rows[k].cpu_us = absl::ToDoubleMicroseconds(cpu) / iters;
    if (net0) {
      if (std::optional<absl::Duration> net1 = network->Now())
        rows[k].net_cpu_us = absl::ToDoubleMicroseconds(*net1 - *net0) / iters;
    }
    if (bytes_sent) rows[k].sent = static_cast<double>(bytes_sent() - sent0) / (warmup + iters);
  }
  return rows;
}

// Makes each column's cpu_us the mean over the job's ranks: every rank
// publishes its own under `prefix`/RANK and rank 0 reads them all.
absl::Status AverageRanksCpu(grid::Store& store, const std::string& prefix, int rank, int world,
                             const std::vector<std::vector<Row>*>& columns,
                             absl::Duration timeout) {
  std::string mine;
  for (const std::vector<Row>* rows : columns) {
    for (const Row& r : *rows) absl::StrAppendFormat(&mine, "%.3f ", r.cpu_us);
  }
  if (absl::Status s = store.Set(absl::StrCat(prefix, rank), mine); !s.ok()) return s;
  if (rank != 0) return absl::OkStatus();
  std::vector<double> sum;
  for (int r = 0; r < world; ++r) {
    auto text = store.Get(absl::StrCat(prefix, r), timeout);
    if (!text.ok()) return text.status();
    std::vector<double> values;
    for (absl::string_view f : absl::StrSplit(*text, ' ', absl::SkipEmpty())) {
      double v = 0;
      if (!absl::SimpleAtod(f, &v)) {
        return absl::DataLossError(absl::StrCat(prefix, r, ": not a CPU time: \"", f, "\""));
      }
      values.push_back(v);
    }
    if (sum.empty()) sum.assign(values.size(), 0.0);
    if (values.size() != sum.size()) {
      return absl::DataLossError(
          absl::StrCat(prefix, r, ": ", values.size(), " CPU times, rank 0 has ", sum.size()));
    }
    for (size_t i = 0; i < values.size(); ++i) sum[i] += values[i];
  }
  size_t i = 0;
  for (std::vector<Row>* rows : columns) {
    for (Row& r : *rows) r.cpu_us = sum[i++] / world;
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  const tools::Flags flags(
      "allreduce_perf", argc, argv,
      {"min-bytes", "max-bytes", "factor", "iters", "warmup", "ring", "gloo", "mpi", "tx-interface",
       "buckets", "plot"},
      "usage: allreduce_perf [--min-bytes=N] [--max-bytes=N] [--factor=F] [--iters=N]\n"
      "                      [--warmup=N] [--ring=true|false] [--gloo=ADDRESS|worker]\n"
      "                      [--mpi=true|false] [--tx-interface=IF] [--buckets=1]\n"
      "                      [--plot=FILE.png]\n"
      "--gloo runs Gloo's ring allreduce too, over TCP bound to ADDRESS (127.0.0.1: loopback;\n"
      "  worker: this rank's address in its worker config)\n"
      "--mpi runs MPI_Allreduce too (start every rank with mpirun, "
      "GRID_RANK=$OMPI_COMM_WORLD_RANK)\n"
      "--tx-interface counts every column's bytes sent on interface IF's transmit counter\n"
      "--buckets=N runs GRID's allreduce of each size as N operations in one group\n"
      "--plot=FILE.png draws busbw against size, a line per column (gnuplot)\n");
  const int64_t min_bytes = flags.Int("min-bytes", 4096, 4, 1ll << 32);
  const int64_t max_bytes = flags.Int("max-bytes", 1 << 20, 4, 1ll << 32);
  if (min_bytes > max_bytes) {
    flags.Fail(absl::StrFormat("--min-bytes=%d is above --max-bytes=%d: no size to run", min_bytes,
                               max_bytes));
  }
  const int64_t factor = flags.Int("factor", 4, 2, 1024);
  const int iters = static_cast<int>(flags.Int("iters", 3, 1, 100000));
  const int warmup = static_cast<int>(flags.Int("warmup", 5, 0, 100000));
  const bool ring = !flags.Get("ring") || flags.Bool("ring");
  std::string gloo_address = flags.Get("gloo").value_or("");
  const bool mpi = flags.Get("mpi") && flags.Bool("mpi");
  const std::string tx_interface = flags.Get("tx-interface").value_or("");
  const int buckets = static_cast<int>(flags.Int("buckets", 1, 1, 1024));
  const std::string plot = flags.Get("plot").value_or("");

  auto options = Communicator::OptionsFromEnvironment();
  if (!options.ok()) flags.Exit(options.status());
  auto store = OpenStore(options->bootstrap.store);
  if (!store.ok()) flags.Exit(store.status());
  auto get = [&](const std::string& key) {
    auto v = (*store)->Get(key, options->bootstrap.timeout);
    if (!v.ok()) flags.Exit(v.status());
    return *v;
  };
  auto config = host_config::ParseWorkerConfigJson(
      get(absl::StrFormat("grid/worker/%d", options->bootstrap.rank)));
  if (!config.ok()) flags.Exit(config.status());
  const int world = config->world, rank = config->rank;
  if (gloo_address == "worker") gloo_address = wire::IpToString(config->ip);
  std::unique_ptr<bench::MpiPeer> mpi_peer;
  if (mpi) {
    auto m = bench::MpiPeer::Init(rank, world);
    if (!m.ok()) flags.Exit(m.status());
    mpi_peer = *std::move(m);
  }
  std::function<uint64_t()> interface_sent;
  if (!tx_interface.empty()) {
    if (auto b = InterfaceTxBytes(tx_interface); !b.ok()) flags.Exit(b.status());
    interface_sent = [&] { return InterfaceTxBytes(tx_interface).value_or(0); };
  }
  std::vector<bench::RingPeer> peers(world);
  std::set<std::string> nodes;  // every rank's switches and root
  for (int r = 0; r < world; ++r) {
    auto c = host_config::ParseWorkerConfigJson(get(absl::StrFormat("grid/worker/%d", r)));
    if (!c.ok()) flags.Exit(c.status());
    peers[r].ip = c->ip;
    nodes.insert(c->nodes.begin(), c->nodes.end());
  }
  // Rank 0 prints the table, and counts the nodes' CPU.
  std::optional<NetworkCpu> network;
  if (rank == 0) network.emplace(**store, nodes);
  std::string spec = options->bootstrap.transport.empty()
                         ? get(absl::StrFormat("grid/transport/%d", rank))
                         : options->bootstrap.transport;
  while (!spec.empty() && (spec.back() == '\n' || spec.back() == ' ')) spec.pop_back();
  auto transport = OpenTransport(spec);
  if (!transport.ok()) flags.Exit(transport.status());
  const std::string describe = (*transport)->Describe();

  std::vector<int64_t> sizes;
  for (int64_t b = min_bytes; b <= max_bytes; b *= factor) sizes.push_back(b / 4 * 4);
  std::vector<Row> ring_rows(sizes.size()), gloo_rows(sizes.size()), mpi_rows(sizes.size()),
      grid_rows(sizes.size());

  // Each peer's own count of bytes sent, or the interface's for all.
  auto measure = [&](const AllReduceFn& allreduce, const std::function<uint64_t()>& own_count) {
    auto rows = Measure(sizes, warmup, iters, rank, world, allreduce,
                        interface_sent ? interface_sent : own_count,
                        network && network->known() ? &*network : nullptr);
    if (!rows.ok()) flags.Exit(rows.status());
    return *std::move(rows);
  };
  // The ring first, then Gloo, then MPI, then GRID over the ring's transport object.
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
    if (!gloo.ok()) flags.Exit(gloo.status());
    gloo_rows = measure(
        [&](std::vector<float>& v) { return (*gloo)->AllReduce(v.data(), v.size()); }, nullptr);
    // Gloo counts nothing: a ring sends 2(n-1)/n of the data.
    if (!interface_sent) {
      for (size_t k = 0; k < sizes.size(); ++k)
        gloo_rows[k].sent = static_cast<double>(sizes[k]) * 2.0 * (world - 1) / world;
    }
  }
  if (mpi_peer) {
    mpi_rows = measure(
        [&](std::vector<float>& v) { return mpi_peer->AllReduce(v.data(), v.size()); }, nullptr);
  }
  auto comm = Communicator::Create(*config, *std::move(transport), *options);
  if (!comm.ok()) flags.Exit(comm.status());
  grid_rows = measure(
      [&](std::vector<float>& v) {
        return GridAllReduce(**comm, v, buckets, options->engine.timeout);
      },
      [&] { return (*comm)->stats().bytes_sent; });
  struct Peer {
    const char* name;
    std::vector<Row>* rows;
  };
  std::vector<Peer> peers_run;
  if (ring) peers_run.push_back({"ring", &ring_rows});
  if (!gloo_address.empty()) peers_run.push_back({"gloo", &gloo_rows});
  if (mpi_peer) peers_run.push_back({"mpi", &mpi_rows});
  std::vector<std::vector<Row>*> columns = {&grid_rows};
  for (const Peer& p : peers_run) columns.push_back(p.rows);
  if (absl::Status s = AverageRanksCpu(
          **store, absl::StrFormat("grid/perf/%d/%d/cpu/", config->job_id, config->token), rank,
          world, columns, options->bootstrap.timeout);
      !s.ok()) {
    flags.Exit(s);
  }
  uint64_t wrong = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    wrong += grid_rows[k].wrong;
    for (const Peer& p : peers_run) wrong += (*p.rows)[k].wrong;
  }
  if (rank != 0) return wrong == 0 ? 0 : 1;
  std::printf("# allreduce_perf: %d ranks, float32 sum, in place, %d iterations (+%d warmup)\n",
              world, iters, warmup);
  std::printf("# rank 0's transport: %s; %d elements per frame, a pool of %d slots\n",
              describe.c_str(), config->elements, config->slots);
  if (buckets > 1)
    std::printf("# GRID: each size as %d operations in one group (--buckets)\n", buckets);
  std::printf("# GRID: shortest round trip of a chunk %.1f us (for grid-controller --rtt-us)\n",
              absl::ToDoubleMicroseconds((*comm)->stats().min_rtt));
  if (!gloo_address.empty())
    std::printf("# gloo: gloo::allreduce (ring) over TCP on %s%s\n", gloo_address.c_str(),
                interface_sent ? "" : "; its sent(B) is 2(n-1)/n of the data");
  if (mpi_peer) std::printf("# mpi: MPI_Allreduce, %s\n", mpi_peer->Describe().c_str());
  if (interface_sent)
    std::printf("# sent(B) of every column: what %s's transmit counter grew by\n",
                tx_interface.c_str());
  if (network && !network->known())
    std::printf("# net(us) not known: %s\n", network->why().c_str());
  std::printf(
      "# busbw = algbw * 2(n-1)/n (nccl-tests' convention); sent = bytes this host sent "
      "per operation; cpu = a rank's process's CPU per operation (mean of the ranks); net = "
      "the switches' and root's CPU per operation (all of them); #wrong counts GRID's and "
      "every peer's; vs = GRID's goodput as a multiple of the peer's; cpu/ = GRID's cpu as "
      "a fraction of the peer's\n#\n");
  std::string header = absl::StrFormat("# %10s %10s %6s %6s %5s %11s %9s %9s %7s %11s %10s %10s",
                                       "size", "count", "type", "redop", "root", "time(us)",
                                       "algbw", "busbw", "#wrong", "sent(B)", "cpu(us)", "net(us)");
  for (const Peer& p : peers_run) {
    absl::StrAppendFormat(&header, " | %11s %9s %11s %10s %10s", absl::StrCat(p.name, "(us)"),
                          "algbw", "sent(B)", "cpu(us)", "net(us)");
  }
  for (const Peer& p : peers_run)
    absl::StrAppendFormat(&header, " | %8s %8s", absl::StrCat("vs ", p.name),
                          absl::StrCat("cpu/", p.name));
  std::printf("%s\n", header.c_str());
  const double bus = 2.0 * (world - 1) / world;
  double bus_sum = 0;
  auto cpu = [](double us) {
    return std::isnan(us) ? std::string("-") : absl::StrFormat("%.1f", us);
  };
  for (size_t k = 0; k < sizes.size(); ++k) {
    const double bytes = static_cast<double>(sizes[k]);
    const Row& g = grid_rows[k];
    const double algbw = bytes / g.us / 1e3;  // GB/s
    bus_sum += algbw * bus;
    uint64_t row_wrong = g.wrong;
    for (const Peer& p : peers_run) row_wrong += (*p.rows)[k].wrong;
    std::string line =
        absl::StrFormat("  %10d %10d %6s %6s %5d %11.1f %9.4f %9.4f %7d %11s %10s %10s", sizes[k],
                        sizes[k] / 4, "float", "sum", -1, g.us, algbw, algbw * bus, row_wrong,
                        Bytes(g.sent), cpu(g.cpu_us), cpu(g.net_cpu_us));
    for (const Peer& p : peers_run) {
      const Row& r = (*p.rows)[k];
      absl::StrAppendFormat(&line, " | %11.1f %9.4f %11s %10s %10s", r.us, bytes / r.us / 1e3,
                            Bytes(r.sent), cpu(r.cpu_us), cpu(r.net_cpu_us));
    }
    for (const Peer& p : peers_run) {
      const Row& r = (*p.rows)[k];
      absl::StrAppendFormat(&line, " | %7.2fx %7.2fx", r.us / g.us, g.cpu_us / r.cpu_us);
    }
    std::printf("%s\n", line.c_str());
  }
  std::printf("# Avg bus bandwidth    : %g\n", bus_sum / sizes.size());
  if (!plot.empty()) {
    std::vector<bench::PlotSeries> series(1 + peers_run.size());
    series[0].name = "grid";
    for (size_t i = 0; i < peers_run.size(); ++i) series[i + 1].name = peers_run[i].name;
    for (size_t k = 0; k < sizes.size(); ++k) {
      const double bytes = static_cast<double>(sizes[k]);
      series[0].busbw.push_back(bytes / grid_rows[k].us / 1e3 * bus);
      for (size_t i = 0; i < peers_run.size(); ++i)
        series[i + 1].busbw.push_back(bytes / (*peers_run[i].rows)[k].us / 1e3 * bus);
    }
    const std::string title = absl::StrFormat("allreduce_perf: %d ranks, float32 sum, %s", world,
                                              describe.substr(0, describe.find(' ')));
    if (absl::Status s = bench::PlotBusbw(plot, title, sizes, series); !s.ok()) flags.Exit(s);
    std::printf("# plot: %s (numbers in %s.dat)\n", plot.c_str(), plot.c_str());
  }
  return wrong == 0 ? 0 : 1;
}
