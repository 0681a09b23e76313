// The P4 programs' GRID header (p4/include/headers.p4) and wire.h's
// WireHeader must agree field by field: names, widths, order. The expected
// list is built from WireHeader itself (offsetof/sizeof), so a change on
// either side that the other does not follow fails here.
#include <cstddef>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grid/switch.h"
#include "grid/wire.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "switch/fabric.h"

namespace {

struct Field {
  std::string name;
  int bits;
  bool operator==(const Field&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Field& f) { return os << f.name << ":" << f.bits; }

// The fields of `header NAME { ... }` in a P4 source.
std::vector<Field> P4Header(const std::string& source, const std::string& name) {
  const std::regex block("header\\s+" + name + "\\s*\\{([^}]*)\\}");
  std::smatch m;
  std::vector<Field> fields;
  if (!std::regex_search(source, m, block)) return fields;
  const std::string body = m[1];
  const std::regex field("bit<(\\d+)>\\s+(\\w+)\\s*;");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), field);
       it != std::sregex_iterator(); ++it) {
    fields.push_back({(*it)[2], std::stoi((*it)[1])});
  }
  return fields;
}

#define FIELD(S, f) \
  Field { #f, static_cast < int>(8 * sizeof(S{}.f)) }

std::string ReadSource(const std::string& path) {
  std::ifstream in(std::string(GRID_SOURCE_DIR) + "/" + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Source() { return ReadSource("p4/include/headers.p4"); }

TEST(P4Headers, GridHeaderMatchesWireH) {
  using grid::wire::WireHeader;
  const std::vector<Field> expected = {
      FIELD(WireHeader, version),     FIELD(WireHeader, type),
      FIELD(WireHeader, flags),       FIELD(WireHeader, reserved),
      FIELD(WireHeader, job_id),      FIELD(WireHeader, job_token),
      FIELD(WireHeader, rank),        FIELD(WireHeader, agg_node),
      FIELD(WireHeader, path),        FIELD(WireHeader, next_path),
      FIELD(WireHeader, fan_in),      FIELD(WireHeader, slot),
      FIELD(WireHeader, op_seq),      FIELD(WireHeader, chunk),
      FIELD(WireHeader, exponent),    FIELD(WireHeader, next_exponent),
      FIELD(WireHeader, num_elements)};
  // The list is complete and in order: the offsets add up.
  int bits = 0;
  for (const Field& f : expected) bits += f.bits;
  EXPECT_EQ(bits, 8 * static_cast<int>(sizeof(WireHeader)));
  EXPECT_EQ(offsetof(WireHeader, num_elements) + 2, sizeof(WireHeader));
  EXPECT_THAT(P4Header(Source(), "grid_h"), ::testing::ElementsAreArray(expected));
}

TEST(P4Headers, FramingHeadersMatchWireH) {
  using namespace grid::wire;
  const std::string src = Source();
  EXPECT_THAT(
      P4Header(src, "ipv4_h"),
      ::testing::ElementsAre(FIELD(Ipv4Header, version_ihl), FIELD(Ipv4Header, tos),
                             FIELD(Ipv4Header, total_length), FIELD(Ipv4Header, identification),
                             FIELD(Ipv4Header, flags_fragment), FIELD(Ipv4Header, ttl),
                             FIELD(Ipv4Header, protocol), FIELD(Ipv4Header, checksum),
                             FIELD(Ipv4Header, src), FIELD(Ipv4Header, dst)));
  EXPECT_THAT(P4Header(src, "udp_h"),
              ::testing::ElementsAre(FIELD(UdpHeader, src_port), FIELD(UdpHeader, dst_port),
                                     FIELD(UdpHeader, length), FIELD(UdpHeader, checksum)));
  EXPECT_THAT(P4Header(src, "ethernet_h"),
              ::testing::ElementsAre(Field{"dst", 48}, Field{"src", 48},
                                     FIELD(EthernetHeader, ether_type)));
}

TEST(P4Headers, ConstantsMatchWireH) {
  std::ifstream in(std::string(GRID_SOURCE_DIR) + "/p4/include/constants.p4");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string c = ss.str();
  auto value = [&](const std::string& name) {
    std::smatch m;
    if (!std::regex_search(c, m, std::regex(name + "\\s*=\\s*(0x[0-9A-Fa-f]+|\\d+)"))) return -1L;
    return std::stol(m[1], nullptr, 0);
  };
  EXPECT_EQ(value("GRID_UDP_PORT_BASE"), grid::wire::kUdpPortBase);
  EXPECT_EQ(0x10000 - value("GRID_UDP_PORT_MASK"), grid::wire::kUdpPortCount);
  EXPECT_EQ(value("GRID_VERSION"), grid::wire::kVersion);
  EXPECT_EQ(value("GRID_TYPE_DATA"), static_cast<int>(grid::wire::MessageType::kData));
  EXPECT_EQ(value("GRID_TYPE_PARTIAL"), static_cast<int>(grid::wire::MessageType::kPartial));
  EXPECT_EQ(value("GRID_TYPE_RESULT"), static_cast<int>(grid::wire::MessageType::kResult));
  EXPECT_EQ(value("GRID_TYPE_SIGNAL"), static_cast<int>(grid::wire::MessageType::kSignal));
  EXPECT_EQ(value("GRID_FLAG_RETRANSMIT"), grid::wire::flags::kRetransmit);
  EXPECT_EQ(value("GRID_FLAG_CONGESTION"), grid::wire::flags::kCongestion);
  EXPECT_EQ(value("GRID_FLAG_OVERFLOW"), grid::wire::flags::kOverflow);
  EXPECT_EQ(value("GRID_FLAG_COPY"), grid::wire::flags::kCopy);
  EXPECT_EQ(value("GRID_FLAG_COLLISION"), grid::wire::flags::kCollision);
  EXPECT_EQ(value("GRID_ALL_RANKS"), grid::wire::kAllRanks);
  EXPECT_EQ(value("GRID_ELEMENTS"), grid::wire::kDefaultElements);
}

// Each program accepts exactly the flags wire.h knows (PASSED included:
// the programs forward passed-on DATA like any other, though they never pass
// on themselves).
TEST(P4Headers, KnownFlagsMatchWireH) {
  for (const char* program : {"/p4/v1model/grid.p4", "/p4/tna/grid.p4"}) {
    std::ifstream in(std::string(GRID_SOURCE_DIR) + program);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, std::regex("GRID_FLAGS_KNOWN\\s*=\\s*(0x[0-9A-Fa-f]+)")))
        << program;
    EXPECT_EQ(std::stol(m[1], nullptr, 0), grid::wire::flags::kAll) << program;
  }
}

// The payload header holds exactly kDefaultElements 32-bit elements.
TEST(P4Headers, PayloadIsSixtyFourElements) {
  const std::string src = Source();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(src, m, std::regex("header\\s+grid_payload_h\\s*\\{([^}]*)\\}")));
  const std::string body = m[1];
  std::vector<int> pairs;
  const std::regex pair("GRID_PAIR\\((\\d+)\\)");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), pair); it != std::sregex_iterator();
       ++it) {
    pairs.push_back(std::stoi((*it)[1]));
  }
  ASSERT_EQ(pairs.size() * 2, grid::wire::kDefaultElements);
  for (size_t i = 0; i < pairs.size(); ++i) EXPECT_EQ(pairs[i], static_cast<int>(i));
}

// The drop reasons both programs count by (p4/include/drops.p4) are
// sw::Drop's numbers and names, so the P4 and C++ counters compare one to one.
TEST(P4Headers, DropReasonsMatchTheSwitch) {
  const std::string src = ReadSource("p4/include/drops.p4");
  const std::regex constant("const bit<32> DROP_(\\w+)\\s*=\\s*(\\d+);");
  int found = 0;
  for (auto it = std::sregex_iterator(src.begin(), src.end(), constant);
       it != std::sregex_iterator(); ++it) {
    const int reason = std::stoi((*it)[2]);
    std::string name = grid::sw::DropName(reason);
    for (char& c : name) c = c == '.' ? '_' : static_cast<char>(std::toupper(c));
    EXPECT_EQ((*it)[1], name) << "reason " << reason;
    ++found;
  }
  // All but the three reasons that keep a packet from being classified GRID,
  // and over_capacity: the programs have no capacity meter.
  EXPECT_EQ(found, grid::sw::kNumDrops - 1 - 3 - 1);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(src, m, std::regex("#define GRID_DROP_REASONS (\\d+)")));
  EXPECT_EQ(std::stoi(m[1]), grid::sw::kNumDrops);
}

// The parameter names of `action NAME(...)` in a P4 source, in order.
std::vector<std::string> P4ActionParams(const std::string& source, const std::string& name) {
  std::smatch m;
  std::vector<std::string> params;
  if (!std::regex_search(source, m, std::regex("action\\s+" + name + "\\s*\\(([^)]*)\\)"))) {
    return {"<no action " + name + ">"};
  }
  const std::string list = m[1];
  const std::regex param("(\\w+)\\s*(,|$)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), param);
       it != std::sregex_iterator(); ++it) {
    params.push_back((*it)[1]);
  }
  return params;
}

// The match-field names of `table NAME { key = { ... } }`: the expression,
// or its @name annotation when it has one.
std::vector<std::string> P4TableKeys(const std::string& source, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(source, m,
                         std::regex("table\\s+" + name + "\\s*\\{\\s*key\\s*=\\s*\\{([^}]*)\\}"))) {
    return {"<no table " + name + ">"};
  }
  const std::string body = m[1];
  std::vector<std::string> keys;
  const std::regex key("([\\w.]+)\\s*:\\s*exact(\\s*@name\\(\"([^\"]+)\"\\))?\\s*;");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), key); it != std::sregex_iterator();
       ++it) {
    keys.push_back((*it)[3].matched ? std::string((*it)[3]) : std::string((*it)[1]));
  }
  return keys;
}

// ConfigToP4Entries refuses a threshold beyond kP4MaxThreshold: it must be
// what both programs' threshold parameter holds.
TEST(P4Programs, ThresholdWidthMatchesTheEntriesLimit) {
  for (const std::string program : {"p4/v1model/grid.p4", "p4/tna/grid.p4"}) {
    const std::string src = ReadSource(program);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        src, m, std::regex("action\\s+set_egress_identity\\([^)]*bit<(\\d+)>\\s+threshold\\)")))
        << program;
    EXPECT_EQ((uint64_t{1} << std::stoi(m[1])) - 1, grid::sw::kP4MaxThreshold) << program;
  }
}

// One entry file feeds both P4 programs: every table, match field, action
// and parameter that ConfigToP4Entries writes exists, by that name and in
// that order, in p4/v1model/grid.p4 and in p4/tna/grid.p4.
TEST(P4Programs, EntriesMatchBothPrograms) {
  grid::testing::Job job =
      grid::testing::MakeJob("testbed", "grid", 8, 1, 256, grid::wire::kDefaultElements);
  std::vector<nlohmann::ordered_json> docs;
  for (const auto& [node, config] : job.configs) {
    auto text = grid::sw::ConfigToP4Entries(config);
    ASSERT_TRUE(text.ok()) << text.status();
    docs.push_back(nlohmann::ordered_json::parse(*text));
  }
  for (const std::string program : {"p4/v1model/grid.p4", "p4/tna/grid.p4"}) {
    SCOPED_TRACE(program);
    const std::string src = ReadSource(program);
    ASSERT_FALSE(src.empty());
    int checked = 0;
    for (const nlohmann::ordered_json& doc : docs) {
      for (const char* list : {"default_actions", "table_entries"}) {
        for (const nlohmann::ordered_json& e : doc[list]) {
          const std::string table = e["table"];
          const std::string short_name = table.substr(table.find('.') + 1);
          std::vector<std::string> params;
          for (const auto& [k, v] : e["params"].items()) params.push_back(k);
          EXPECT_EQ(P4ActionParams(src, e["action"]), params) << table << " " << e["action"];
          if (!e["match"].empty()) {
            std::vector<std::string> keys;
            for (const auto& [k, v] : e["match"].items()) keys.push_back(k);
            EXPECT_EQ(P4TableKeys(src, short_name), keys) << table;
          }
          ++checked;
        }
      }
    }
    EXPECT_GT(checked, 20);
  }
}

}  // namespace
