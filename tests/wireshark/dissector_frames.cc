// The frames the Wireshark dissector's test reads (tests/wireshark/
// dissector_test.sh): the P4 differential test's traffic (tests/p4/
// traffic.h: a running job's chunks, results, retransmissions, and every
// malformed field) and what the C++ switch pipeline emits for it (the same
// bytes as the P4 programs, which that test holds), over the differential
// test's plans, until every message type has at least --min-per-type valid
// frames. Writes DIR/frames.pcap and DIR/expected.tsv: for every frame, by
// its number in the capture (from 1), the C++ codec's view (wire::
// DecodeFrame) of its GRID header and payload, or "invalid" and the field
// wire::ParseFrame names, for the dissector's view to be compared with.
//
//   dissector_frames DIR [--min-per-type=1000]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grid/switch.h"
#include "grid/wire.h"
#include "p4/bmv2.h"
#include "p4/traffic.h"
#include "switch/fabric.h"

namespace grid::testing {
namespace {

struct Case {
  const char* topology;
  const char* planner;
  int workers;
};

// The differential test's plans (tests/p4/p4_diff_test.cc).
constexpr Case kCases[] = {
    {"testbed", "switchml", 8},
    {"testbed", "grid", 8},
    {"testbed:cap=fixed:200", "atp", 8},
    {"fattree:k=4,prog=random:0.4,cap=uniform:100:800,seed=5", "grid-paths", 10},
    {"leafspine:spines=2,leaves=4,hosts=3,prog=tor,seed=6", "grid", 9},
    {"fattree:k=4,prog=none", "geryon", 6},
};

// The header and payload as the codec reads them, tab-separated.
std::string CodecView(const Frame& frame) {
  uint64_t bad = 0;
  wire::FrameView v;
  const wire::WireError error = wire::ParseFrame(frame, &v, &bad);
  if (error != wire::WireError::kOk) {
    return absl::StrCat("invalid\t", wire::WireErrorName(error));
  }
  const wire::Header& h = v.header;
  std::string line =
      absl::StrFormat("valid\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t",
                      static_cast<int>(h.type), h.flags, h.job_id, h.job_token, h.rank, h.agg_node,
                      h.path, h.next_path, h.fan_in, h.slot, h.op_seq, h.chunk, h.exponent,
                      h.next_exponent, h.num_elements);
  for (int i = 0; i < h.num_elements; ++i) {
    uint32_t be;
    std::memcpy(&be, v.payload + 4 * i, 4);
    absl::StrAppend(&line, i ? "," : "", static_cast<int32_t>(wire::NetToHost32(be)));
  }
  return line;
}

int Run(const std::string& dir, int min_per_type) {
  std::vector<Frame> frames;
  std::map<int, int> valid_by_type;
  auto enough = [&] {
    for (int t = wire::kMinMessageType; t <= wire::kMaxMessageType; ++t) {
      if (valid_by_type[t] < min_per_type) return false;
    }
    return true;
  };
  auto keep = [&](const Frame& f) {
    wire::FrameView v;
    if (wire::ParseFrame(f, &v) == wire::WireError::kOk) {
      ++valid_by_type[static_cast<int>(v.header.type)];
    }
    frames.push_back(f);
  };
  // Seeds until every type has enough; SIGNALs (collisions) are the rarest.
  for (uint64_t seed = 1; seed <= 400 && !enough(); ++seed) {
    const Case& c = kCases[seed % std::size(kCases)];
    const Job job = MakeJob(c.topology, c.planner, c.workers, seed, 4, wire::kDefaultElements);
    for (const auto& [node, config] : job.configs) {
      if (!config.jobs.at(job.params.job_id).aggregate) continue;
      auto pipeline = sw::Pipeline::Create(config);
      if (!pipeline.ok()) {
        std::fprintf(stderr, "dissector_frames: %s\n", pipeline.status().ToString().c_str());
        return 1;
      }
      sw::Output out;
      for (const Packet& p : MakeTraffic(job, node, 950, seed * 1000 + node)) {
        keep(p.frame);
        Frame frame = p.frame;
        out.Clear();
        pipeline->Process(absl::MakeSpan(frame), p.port, &out);
        for (const sw::OutFrame& o : out.frames) {
          const absl::Span<const uint8_t> bytes = out.Bytes(o, frame);
          keep(Frame(bytes.begin(), bytes.end()));
        }
      }
    }
  }
  if (!enough()) {
    std::fprintf(stderr, "dissector_frames: fewer than %d valid frames of some type\n",
                 min_per_type);
    return 1;
  }
  std::filesystem::create_directories(dir);
  std::vector<std::pair<uint64_t, const Frame*>> records;
  std::ofstream expected(dir + "/expected.tsv");
  for (size_t i = 0; i < frames.size(); ++i) {
    records.emplace_back(i, &frames[i]);
    expected << i + 1 << '\t' << CodecView(frames[i]) << '\n';
  }
  if (absl::Status s = WritePcap(dir + "/frames.pcap", records); !s.ok() || !expected) {
    std::fprintf(stderr, "dissector_frames: cannot write into %s\n", dir.c_str());
    return 1;
  }
  std::printf("%zu frames; valid DATA %d, PARTIAL %d, RESULT %d, SIGNAL %d\n", frames.size(),
              valid_by_type[1], valid_by_type[2], valid_by_type[3], valid_by_type[4]);
  return 0;
}

}  // namespace
}  // namespace grid::testing

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: dissector_frames DIR [--min-per-type=1000]\n");
    return 2;
  }
  int min_per_type = 1000;
  if (argc == 3 && std::sscanf(argv[2], "--min-per-type=%d", &min_per_type) != 1) {
    std::fprintf(stderr, "dissector_frames: not --min-per-type=N: %s\n", argv[2]);
    return 2;
  }
  return grid::testing::Run(argv[1], min_per_type);
}
