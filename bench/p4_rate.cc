// p4_rate: how fast BMv2 runs p4/v1model/grid.p4, as a ratio to the
// software switch's pipeline on the same packets in the same run
// (docs/switch.md, "P4"). The packets are a testbed switch's members sending
// chunks to aggregate; every third completes a chunk and makes a partial.
// - BMv2: simple_switch reads them from pcap files (--use-files) as fast as
//   it takes them; its rate is the packets over the time from its first to
//   its last output, from its own output timestamps. Its input buffer holds
//   ~1000 packets, so a run is small; runs repeat and the median counts.
// - grid-switch: sw::Pipeline, what each grid-switch lcore runs per packet,
//   on the same packets in this process, timed over many repetitions. It
//   leaves out grid-switch's DPDK I/O (tens of ns a packet); BMv2's I/O is a
//   small part of its time.
//
//   p4_rate --simple-switch=PATH --cli=PATH --json=grid.json [--runs=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_format.h"
#include "p4/bmv2.h"
#include "switch/fabric.h"
#include "tools/flags.h"

namespace {

using namespace grid;

constexpr int kChunks = 330;  // under the P4 targets' largest pool: no copy is reused

// Packets per second through a fresh pipeline, best of `rounds` rounds.
double PipelineRate(const sw::SwitchConfig& config, const std::vector<testing::Packet>& inputs,
                    int rounds) {
  double best = 0;
  sw::Output out;
  std::vector<std::vector<uint8_t>> frames;
  for (int round = 0; round < rounds; ++round) {
    auto pipeline = sw::Pipeline::Create(config);
    if (!pipeline.ok()) return 0;
    frames.clear();
    for (const auto& p : inputs) frames.push_back(p.frame);
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < inputs.size(); ++i) {
      out.Clear();
      pipeline->Process(absl::MakeSpan(frames[i]), inputs[i].port, &out);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(inputs.size()) / seconds);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const tools::Flags flags("p4_rate", argc, argv, {"simple-switch", "cli", "json", "runs", "dir"},
                           "usage: p4_rate --simple-switch=PATH --cli=PATH --json=grid.json "
                           "[--runs=5] [--dir=/tmp/p4_rate]\n");
  const testing::Bmv2Tools tools{flags.String("simple-switch", ""), flags.String("cli", ""),
                                 flags.String("json", "")};
  if (const std::string missing = tools.Missing(); !missing.empty()) {
    std::printf("p4_rate: skipped: %s\n", missing.c_str());
    return 77;
  }
  const int runs = static_cast<int>(flags.Int("runs", 5, 1, 100));
  const std::string dir = flags.String("dir", "/tmp/p4_rate");
  testing::Job job =
      testing::MakeJob("testbed", "switchml", 8, 1, sw::kP4MaxPool, wire::kDefaultElements);
  const topology::NodeId s2 = job.node("S2");
  sw::SwitchConfig config = job.configs.at(s2);
  config.congestion_threshold = (1u << 19) - 1;
  std::vector<testing::Packet> inputs;
  for (int c = 0; c < kChunks; ++c) {
    for (int rank : {2, 3, 6}) {  // S2's members
      std::vector<int32_t> values(wire::kDefaultElements, c + rank);
      inputs.push_back({job.PortTo(s2, job.plan.job.workers[rank]),
                        testing::DataFrame(job, rank, 1, static_cast<uint32_t>(c), values),
                        "data"});
    }
  }
  auto entries = sw::ConfigToP4Entries(config);
  auto commands = entries.ok() ? sw::P4EntriesToBmv2Commands(*entries) : entries.status();
  if (!commands.ok()) flags.Exit(commands.status());
  std::vector<double> ratios;
  double bmv2_sum = 0, pipeline_sum = 0;
  for (int run = 0; run < runs; ++run) {
    const std::string d = absl::StrFormat("%s/run%d", dir, run);
    auto b = testing::RunBmv2(tools, d, config.num_ports, *commands, inputs, kChunks);
    if (!b.ok()) flags.Exit(b.status());
    size_t outputs = 0;
    for (const auto& port : b->out) outputs += port.size();
    if (outputs != kChunks || b->last_out_us <= b->first_out_us) {
      flags.Fail(absl::StrFormat("BMv2 made %d partials of %d (%s)", outputs, kChunks, d));
    }
    const double bmv2 = 1e6 * static_cast<double>(inputs.size()) /
                        static_cast<double>(b->last_out_us - b->first_out_us);
    const double pipeline = PipelineRate(config, inputs, 200);
    ratios.push_back(bmv2 / pipeline);
    bmv2_sum += bmv2;
    pipeline_sum += pipeline;
    std::printf("run %d: BMv2 %.0f packets/s, grid-switch pipeline %.0f packets/s, ratio %.6f\n",
                run, bmv2, pipeline, ratios.back());
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf(
      "%d runs of %zu aggregation packets: BMv2 %.0f packets/s, grid-switch pipeline %.0f "
      "packets/s (means); BMv2 / grid-switch = %.6f (median)\n",
      runs, inputs.size(), bmv2_sum / runs, pipeline_sum / runs, ratios[ratios.size() / 2]);
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  return 0;
}
