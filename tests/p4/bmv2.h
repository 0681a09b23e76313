// BMv2 for tests: simple_switch running the compiled v1model program on
// pcap files (`--use-files`), with its tables loaded through
// simple_switch_CLI while it waits, so a test can put a packet sequence
// through the P4 program and read back what came out of every port and the
// drop counters.
#ifndef GRID_TESTS_P4_BMV2_H_
#define GRID_TESTS_P4_BMV2_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grid/switch.h"
#include "p4/traffic.h"

namespace grid::testing {

using Frame = std::vector<uint8_t>;

// libpcap files, Ethernet link type. Records are written with the given
// timestamps (microseconds), which is the order simple_switch reads them in
// across files.
absl::Status WritePcap(const std::string& path,
                       const std::vector<std::pair<uint64_t, const Frame*>>& records);
absl::StatusOr<std::vector<Frame>> ReadPcap(const std::string& path,
                                            std::vector<uint64_t>* times_us = nullptr);

struct Bmv2Tools {
  std::string simple_switch;
  std::string cli;   // simple_switch_CLI
  std::string json;  // p4c-bm2-ss's output for p4/v1model/grid.p4
  // Empty when all three are there; otherwise why the test cannot run.
  std::string Missing() const;
};

struct Bmv2Run {
  std::vector<std::vector<Frame>> out;         // by port
  uint64_t first_out_us = 0, last_out_us = 0;  // when simple_switch wrote the first and last
  std::array<uint64_t, sw::kNumDrops> drops{};
};

// Runs `inputs` (in order) through simple_switch with `ports` ports, its
// tables loaded from `commands` (sw::P4EntriesToBmv2Commands), in scratch
// directory `dir`. Waits until `expected` frames came out and no more come.
// At most 1000 inputs: simple_switch drops what overflows its input buffer.
absl::StatusOr<Bmv2Run> RunBmv2(const Bmv2Tools& tools, const std::string& dir, int ports,
                                const std::string& commands, const std::vector<Packet>& inputs,
                                size_t expected);

}  // namespace grid::testing

#endif  // GRID_TESTS_P4_BMV2_H_
