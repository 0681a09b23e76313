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
#include "p4runtime/holding.h"
#include "p4runtime/p4info.h"
#include "p4runtime/publish.h"

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

// The testbed's switch configs for an 8-worker grid plan of job `job_id`.
std::map<topology::NodeId, sw::SwitchConfig> Testbed(uint16_t job_id = 7, uint32_t token = 0x5eed,
                                                     uint32_t slot_base = 0) {
  auto topo = topology::GenerateTopology("testbed");
  auto job = planner::MakeJob(*topo, 8, std::nullopt, 1);
  auto planner = planner::PlannerRegistry::WithBuiltins().Create("grid", {});
  auto plan = (*planner)->Plan(*topo, *job);
  host_config::JobParams params;
  params.job_id = job_id;
  params.token = token;
  params.slot_base = slot_base;
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

// S1's share of job `job` in the testbed, as entities.
SwitchEntities S1Job(const P4InfoIndex& info, uint16_t job, uint32_t token = 0x5eed) {
  const sw::SwitchConfig config = Testbed(job, token, job == 7 ? 0 : 64).begin()->second;
  return *EntriesToEntities(*sw::ConfigToP4Entries(config), info, config.name);
}

TEST_F(P4RuntimeTest, PublishingAgainChangesOnlyWhatDiffersAndDeletesWhatIsGone) {
  const SwitchEntities first = S1Job(info_, 7);
  const Holding held = Apply({}, PublishUpdates({}, first, 7, info_));
  EXPECT_TRUE(PublishUpdates(held, first, 7, info_).empty());
  // A new token changes the job's entry; a member gone is deleted.
  SwitchEntities second = S1Job(info_, 7, 0xbeef);
  const p4::v1::TableEntry gone = second.entries.back();
  second.entries.pop_back();
  const std::vector<p4::v1::Update> updates = PublishUpdates(held, second, 7, info_);
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].type(), p4::v1::Update::DELETE);  // deletions go first
  EXPECT_EQ(EntryKey(updates[0].entity().table_entry()), EntryKey(gone));
  EXPECT_EQ(updates[1].type(), p4::v1::Update::MODIFY);
  EXPECT_EQ(DescribeEntry(updates[1].entity().table_entry(), info_),
            "GridIngress.job{hdr.grid.job_id=0x07}");
  EXPECT_TRUE(Compare(HoldingOf(second), Apply(held, updates), info_, "S1").ok());
}

TEST_F(P4RuntimeTest, AnotherJobsEntitiesAndTheSharedOnesItUsesStay) {
  const Holding with7 = Apply({}, PublishUpdates({}, S1Job(info_, 7), 7, info_));
  const Holding both = Apply(with7, PublishUpdates(with7, S1Job(info_, 8), 8, info_));
  EXPECT_EQ(JobsIn(both, info_), (std::set<uint32_t>{7, 8}));
  // Deleting job 8 takes its entries and group, and no route job 7 uses.
  const Holding after = Apply(both, DeleteUpdates(both, {8}, info_));
  EXPECT_TRUE(Compare(with7, after, info_, "S1").ok()) << Compare(with7, after, info_, "S1");
  // With no other job left, the shared entries go too: defaults alone stay.
  const Holding empty = Apply(after, DeleteUpdates(after, {7}, info_));
  EXPECT_TRUE(Compare({}, empty, info_, "S1").ok());
  EXPECT_FALSE(empty.empty());
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
  ASSERT_TRUE((*s1)->SetPipeline(info_, ReadFile(kJson), 1).ok());
  const sw::SwitchConfig config = Testbed().begin()->second;
  auto entities = EntriesToEntities(*sw::ConfigToP4Entries(config), info_, config.name);
  ASSERT_TRUE(entities.ok()) << entities.status();
  absl::Status written = (*s1)->Write(PublishUpdates({}, *entities, 7, info_), info_);
  ASSERT_TRUE(written.ok()) << written;
  auto read = (*s1)->ReadAll(info_);
  ASSERT_TRUE(read.ok()) << read.status();
  absl::Status same = Compare(HoldingOf(*entities), HoldingOf(*read), info_, "S1");
  EXPECT_TRUE(same.ok()) << same;
  EXPECT_GT(HoldingOf(*entities).size(), 10u);
  // What was written, changed by one value, no longer reads back the same.
  SwitchEntities changed = *entities;
  changed.entries[3].mutable_action()->mutable_action()->mutable_params(0)->set_value("\x09");
  absl::Status differs = Compare(HoldingOf(changed), HoldingOf(*read), info_, "S1");
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

class Bmv2Publish : public Bmv2Grpc {
 protected:
  void SetUp() override {
    Bmv2Grpc::SetUp();
    if (IsSkipped()) return;
    program_ = {&info_, ReadFile(kJson), ProgramCookie(ReadFile(kP4Info), ReadFile(kJson))};
  }
  std::vector<SwitchJob> Jobs(const SwitchEntities& want) const {
    return {SwitchJob{Target(10), want}};
  }
  // What S1 holds; nothing, with a failure, where it cannot be read.
  Holding Held() const {
    auto s1 = P4RuntimeSwitch::Connect(Target(10));
    if (!s1.ok()) {
      ADD_FAILURE() << s1.status();
      return {};
    }
    auto read = (*s1)->ReadAll(info_);
    if (!read.ok()) {
      ADD_FAILURE() << read.status();
      return {};
    }
    return HoldingOf(*read);
  }
  Program program_;
};

TEST_F(Bmv2Publish, ASecondPublicationWritesOnlyTheDifference) {
  auto first = PublishJob(Jobs(S1Job(info_, 7)), program_, 7);
  ASSERT_TRUE(first.ok()) << first.status() << "\n" << ReadFile(log_);
  EXPECT_THAT(first->at(0), HasSubstr("program committed; inserted "));
  auto second = PublishJob(Jobs(S1Job(info_, 7, 0xbeef)), program_, 7);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(second->at(0), HasSubstr("program already there; inserted 0, modified 1, deleted 0"));
  EXPECT_TRUE(Compare(HoldingOf(S1Job(info_, 7, 0xbeef)), Held(), info_, "S1").ok());
}

TEST_F(Bmv2Publish, APublicationTheSwitchRefusesMidwayIsPutBack) {
  ASSERT_TRUE(PublishJob(Jobs(S1Job(info_, 7)), program_, 7).ok()) << ReadFile(log_);
  const Holding before = Held();
  // Job 8, its last entry naming a match field the table does not have.
  SwitchEntities bad = S1Job(info_, 8);
  bad.entries.back().mutable_match(0)->set_field_id(999);
  auto refused = PublishJob(Jobs(bad), program_, 8);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("switch S1 at " + address_ + ": Write of "));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("S1 put back as it was"));
  absl::Status same = Compare(before, Held(), info_, "S1");
  EXPECT_TRUE(same.ok()) << same;
}

TEST_F(Bmv2Publish, DeletingJobsClearsTheSwitchAndIsRefusedWhileAJobNotNamedIsThere) {
  ASSERT_TRUE(PublishJob(Jobs(S1Job(info_, 7)), program_, 7).ok()) << ReadFile(log_);
  ASSERT_TRUE(PublishJob(Jobs(S1Job(info_, 8)), program_, 8).ok());
  const Holding both = Held();
  auto refused = DeleteJobs({Target(10)}, program_, {8});
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status()));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("also holds job 7: clearing job 8's registers means committing"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("(--delete-job=7,8)"));
  // Jobs named that the switch does not hold change nothing of that.
  auto refused_too = DeleteJobs({Target(10)}, program_, {7, 9});
  ASSERT_FALSE(refused_too.ok());
  EXPECT_THAT(std::string(refused_too.status().message()),
              HasSubstr("also holds job 8: clearing job 7, 9's registers"));
  EXPECT_THAT(std::string(refused_too.status().message()), HasSubstr("(--delete-job=7,8,9)"));
  EXPECT_TRUE(Compare(both, Held(), info_, "S1").ok());  // nothing deleted
  auto deleted = DeleteJobs({Target(10)}, program_, {7, 8});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_THAT(deleted->at(0), HasSubstr("registers cleared by committing the program again"));
  EXPECT_TRUE(Compare({}, Held(), info_, "S1").ok());
  // The program is still there: the next publication writes without a commit.
  auto again = PublishJob(Jobs(S1Job(info_, 7)), program_, 7);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(again->at(0), HasSubstr("program already there"));
}

TEST_F(Bmv2Publish, ASwitchRunningAnotherProgramIsNotTouched) {
  {
    auto s1 = P4RuntimeSwitch::Connect(Target(10));
    ASSERT_TRUE(s1.ok()) << s1.status() << "\n" << ReadFile(log_);
    ASSERT_TRUE((*s1)->SetPipeline(info_, ReadFile(kJson), 12345).ok());
  }
  auto refused = PublishJob(Jobs(S1Job(info_, 7)), program_, 7);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("runs another program (cookie 0x3039;"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("nothing written to any switch"));
  EXPECT_TRUE(Compare({}, Held(), info_, "S1").ok());
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
