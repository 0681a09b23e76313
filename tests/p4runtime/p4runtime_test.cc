// grid-controller's P4Runtime client (p4runtime/): the testbed's tables as
// P4Runtime entities, by the names in the compiled program's P4Info, and a
// BMv2 simple_switch_grpc that takes them, reads them back entry by entry,
// refuses a second controller with a lower election id, and refuses an
// entry it already holds. Skipped where the P4 toolchain is missing.
#include <google/protobuf/text_format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/switch.h"
#include "grid/topology.h"
#include "gtest/gtest.h"
#include "p4runtime/client.h"
#include "p4runtime/entries.h"
#include "p4runtime/p4info.h"

namespace grid::p4rt {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kP4Info = std::string(GRID_P4_BUILD_DIR) + "/grid.p4info.txtpb";
const std::string kJson = std::string(GRID_P4_BUILD_DIR) + "/grid.json";

// The testbed's switch configs for an 8-worker grid plan, job 7.
std::map<topology::NodeId, sw::SwitchConfig> Testbed() {
  auto topo = topology::GenerateTopology("testbed");
  auto job = planner::MakeJob(*topo, 8, std::nullopt, 1);
  auto planner = planner::PlannerRegistry::WithBuiltins().Create("grid", {});
  auto plan = (*planner)->Plan(*topo, *job);
  host_config::JobParams params;
  params.job_id = 7;
  params.token = 0x5eed;
  params.slots = 64;
  params.elements = 64;
  return *control::BuildSwitchConfigs(*topo, *plan, params);
}

class P4RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kP4Info)) {
      GTEST_SKIP() << "no " << kP4Info << " (the p4_compile_v1model test writes it; needs p4c)";
    }
    auto index = P4InfoIndex::FromText(ReadFile(kP4Info), "grid.p4info.txtpb");
    ASSERT_TRUE(index.ok()) << index.status();
    info_ = *std::move(index);
  }
  P4InfoIndex info_;
};

TEST_F(P4RuntimeTest, EveryTestbedSwitchsEntriesResolveByName) {
  for (const auto& [node, config] : Testbed()) {
    auto entries = sw::ConfigToP4Entries(config);
    ASSERT_TRUE(entries.ok()) << entries.status();
    auto entities = EntriesToEntities(*entries, info_, config.name);
    ASSERT_TRUE(entities.ok()) << entities.status();
    EXPECT_FALSE(entities->entries.empty()) << config.name;
    EXPECT_FALSE(entities->defaults.empty()) << config.name;
  }
}

TEST_F(P4RuntimeTest, AProgramWithoutATableTheEntriesNeedIsRefusedByName) {
  p4::config::v1::P4Info changed = info_.p4info();
  auto* tables = changed.mutable_tables();
  for (int i = 0; i < tables->size(); ++i) {
    if (tables->Get(i).preamble().name() == "GridIngress.member") tables->DeleteSubrange(i, 1);
  }
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(changed, &text));
  auto index = P4InfoIndex::FromText(text, "renamed.p4info.txtpb");
  ASSERT_TRUE(index.ok()) << index.status();
  const sw::SwitchConfig config = Testbed().begin()->second;
  auto entities = EntriesToEntities(*sw::ConfigToP4Entries(config), *index, config.name);
  ASSERT_FALSE(entities.ok());
  EXPECT_THAT(
      std::string(entities.status().message()),
      HasSubstr("renamed.p4info.txtpb has no table GridIngress.member (the program changed?)"));
}

TEST_F(P4RuntimeTest, AValueWiderThanItsFieldIsRefusedNamingTheField) {
  const std::string doc = R"({"format":"grid-p4-entries/1","table_entries":[
      {"table":"GridIngress.job","match":{"hdr.grid.job_id":70000},"action":"job_only",
       "params":{"token":1}}]})";
  auto entities = EntriesToEntities(doc, info_, "entries");
  ASSERT_FALSE(entities.ok());
  EXPECT_THAT(
      std::string(entities.status().message()),
      HasSubstr("table_entries[0].match.hdr.grid.job_id: 70000 does not fit the field's 16 bits"));
}

TEST(P4RuntimeValues, CanonicalBytesDropLeadingZerosAndKeepOneForZero) {
  EXPECT_EQ(Canonical(std::string("\0\0\x01\x02", 4)), "\x01\x02");
  EXPECT_EQ(Canonical(std::string("\0\0", 2)), std::string(1, '\0'));
  EXPECT_EQ(Canonical(""), std::string(1, '\0'));
}

// A simple_switch_grpc of its own on a free port, with no program yet.
class Bmv2Grpc : public P4RuntimeTest {
 protected:
  void SetUp() override {
    P4RuntimeTest::SetUp();
    if (IsSkipped()) return;
    const std::string bin = GRID_SIMPLE_SWITCH_GRPC;
    if (bin.empty() || !std::filesystem::exists(kJson)) GTEST_SKIP() << "no simple_switch_grpc";
    port_ = 30000 + (::getpid() % 20000);
    address_ = "127.0.0.1:" + std::to_string(port_);
    log_ = std::filesystem::temp_directory_path() / ("p4rt_" + std::to_string(::getpid()) + ".log");
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string grpc = "--grpc-server-addr=" + address_;
      const std::string thrift = std::to_string(port_ + 1);
      FILE* out = std::fopen(log_.c_str(), "w");
      ::dup2(fileno(out), 1);
      ::dup2(fileno(out), 2);
      ::execl(bin.c_str(), bin.c_str(), "--no-p4", "--thrift-port", thrift.c_str(), "--",
              grpc.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove(log_);
  }
  SwitchTarget Target(absl::uint128 election) const {
    SwitchTarget t;
    t.name = "S1";
    t.address = address_;
    t.election_id = election;
    t.timeout = absl::Seconds(10);
    return t;
  }
  int port_ = 0;
  pid_t pid_ = -1;
  std::string address_;
  std::filesystem::path log_;
};

TEST_F(Bmv2Grpc, TakesAPlanAndReadsItBackEntryByEntry) {
  auto s1 = P4RuntimeSwitch::Connect(Target(10));
  ASSERT_TRUE(s1.ok()) << s1.status() << "\n" << ReadFile(log_);
  ASSERT_TRUE((*s1)->SetPipeline(info_, ReadFile(kJson)).ok());
  const sw::SwitchConfig config = Testbed().begin()->second;
  auto entities = EntriesToEntities(*sw::ConfigToP4Entries(config), info_, config.name);
  ASSERT_TRUE(entities.ok()) << entities.status();
  absl::Status written = (*s1)->Write(InstallUpdates(*entities), info_);
  ASSERT_TRUE(written.ok()) << written;
  auto read = (*s1)->ReadAll(info_);
  ASSERT_TRUE(read.ok()) << read.status();
  absl::Status same = VerifyReadBack(*entities, *read, info_, "S1");
  EXPECT_TRUE(same.ok()) << same;
  EXPECT_GT(Normalized(*entities).size(), 10u);
  // What was written, changed by one value, no longer reads back the same.
  SwitchEntities changed = *entities;
  changed.entries[3].mutable_action()->mutable_action()->mutable_params(0)->set_value("\x09");
  absl::Status differs = VerifyReadBack(changed, *read, info_, "S1");
  EXPECT_THAT(std::string(differs.message()),
              HasSubstr("S1: " + DescribeEntry(changed.entries[3], info_) + " reads back as"));

  // An entry the switch already holds is refused, named by table and key.
  std::vector<p4::v1::Update> again(1);
  again[0].set_type(p4::v1::Update::INSERT);
  *again[0].mutable_entity()->mutable_table_entry() = entities->entries.front();
  absl::Status refused = (*s1)->Write(again, info_);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.message()), HasSubstr("switch S1 at " + address_));
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr(DescribeEntry(entities->entries.front(), info_)));
}

TEST_F(Bmv2Grpc, ASecondControllerWithALowerElectionIdIsRefused) {
  auto first = P4RuntimeSwitch::Connect(Target(10));
  ASSERT_TRUE(first.ok()) << first.status() << "\n" << ReadFile(log_);
  auto second = P4RuntimeSwitch::Connect(Target(5));
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("another controller is primary (election id 10; ours is 5, lower)"));
  EXPECT_TRUE((*first)->primary());
}

TEST(P4RuntimeSwitchDown, ASwitchThatIsNotThereIsUnavailableWithinTheTimeout) {
  SwitchTarget t;
  t.name = "S9";
  t.address = "127.0.0.1:1";  // nothing listens on port 1
  t.timeout = absl::Seconds(1);
  const absl::Time start = absl::Now();
  auto s = P4RuntimeSwitch::Connect(t);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsUnavailable(s.status())) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("switch S9 at 127.0.0.1:1"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace grid::p4rt
