// How a rank finds its job (docs/worker.md, "Bootstrap"): rank 0 planning
// and serving the store, options from the environment, a program's own
// store and planner.
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grid/communicator.h"
#include "grid/control.h"
#include "grid/planner.h"
#include "grid/store.h"
#include "gtest/gtest.h"

namespace grid {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(Bootstrap, RankZeroPlansAndServesTheStore) {
  const int port = 31000 + static_cast<int>(::getpid() % 2000) * 8;
  CommunicatorOptions o;
  o.bootstrap.rank = 0;
  o.bootstrap.world_size = 8;
  o.bootstrap.store = absl::StrFormat("tcp:127.0.0.1:%d", port);
  o.bootstrap.transport = absl::StrFormat("udp:bind=127.0.0.1:%d", port + 1);
  o.control.topology = "testbed";
  o.control.planner = "switchml";
  o.bootstrap.timeout = absl::Seconds(5);
  // Ranks alone, with no switches: Create must not wait for the others.
  o.bootstrap.fence = false;
  auto rank0 = Communicator::Create(o);
  ASSERT_TRUE(rank0.ok()) << rank0.status();
  auto client = OpenStore(o.bootstrap.store);
  ASSERT_TRUE(client.ok());
  auto w5 = (*client)->Get("grid/worker/5", absl::Seconds(2));
  ASSERT_TRUE(w5.ok()) << w5.status();
  auto config = host_config::ParseWorkerConfigJson(*w5);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->rank, 5);
  // Frames chosen for a 1500-byte MTU, as grid-controller would.
  EXPECT_EQ(config->elements, 352);
  EXPECT_EQ(config->slots, 128u);
  EXPECT_TRUE((*client)->Get("grid/switch/S2", absl::Seconds(2)).ok());
  EXPECT_TRUE((*client)->Get("grid/root", absl::Seconds(2)).ok());
  // Another rank joins through the store alone (its transport named).
  CommunicatorOptions o5 = o;
  o5.bootstrap.rank = 5;
  o5.control.topology.clear();
  o5.bootstrap.transport = absl::StrFormat("udp:bind=127.0.0.1:%d", port + 2);
  auto rank5 = Communicator::Create(o5);
  ASSERT_TRUE(rank5.ok()) << rank5.status();
  EXPECT_EQ((*rank5)->rank(), 5);
  EXPECT_EQ((*rank5)->world_size(), 8);
  // Without a transport, the error says where one comes from.
  CommunicatorOptions o6 = o5;
  o6.bootstrap.rank = 6;
  o6.bootstrap.transport.clear();
  o6.bootstrap.timeout = absl::Milliseconds(50);
  EXPECT_THAT(Communicator::Create(o6).status().message(), HasSubstr("set GRID_TRANSPORT"));
  // A rank the published job does not have fails at once: it used to wait
  // out the whole timeout for a config that never comes.
  CommunicatorOptions o9 = o5;
  o9.bootstrap.rank = 9;
  o9.bootstrap.timeout = absl::Seconds(30);
  const absl::Time start = absl::Now();
  const absl::Status s9 = Communicator::Create(o9).status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(s9.code(), absl::StatusCode::kInvalidArgument) << s9;
  EXPECT_THAT(s9.message(), HasSubstr("has 8 workers, ranks 0-7: this rank is not one of them"));
}

// Rank 0's frames from the environment: a number, "auto" (chosen for
// GRID_MTU), or an error that names the variable.
TEST(Bootstrap, FramesFromTheEnvironment) {
  struct Env {
    ~Env() {
      for (const char* v : {"GRID_ELEMENTS", "GRID_SLOTS", "GRID_MTU"}) ::unsetenv(v);
    }
  } env;
  ::setenv("GRID_ELEMENTS", "64", 1);
  ::setenv("GRID_SLOTS", "auto", 1);
  ::setenv("GRID_MTU", "9000", 1);
  CommunicatorOptions base;
  base.control.job.slots = 128;
  auto o = Communicator::OptionsFromEnvironment(base);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->control.job.elements, 64);
  EXPECT_EQ(o->control.job.slots, 0u);
  EXPECT_EQ(o->control.path_mtu, 9000u);
  // Unset, the defaults stand: both chosen, MTU 1500.
  ::unsetenv("GRID_ELEMENTS");
  ::unsetenv("GRID_SLOTS");
  ::unsetenv("GRID_MTU");
  o = Communicator::OptionsFromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->control.job.elements, 0);
  EXPECT_EQ(o->control.job.slots, 0u);
  EXPECT_EQ(o->control.path_mtu, 1500u);
  ::setenv("GRID_ELEMENTS", "2000", 1);
  EXPECT_THAT(Communicator::OptionsFromEnvironment().status().message(),
              AllOf(HasSubstr("GRID_ELEMENTS=\"2000\""), HasSubstr("\"auto\"")));
  ::unsetenv("GRID_ELEMENTS");
}

TEST(Bootstrap, ThreadsAndPollingFromTheEnvironment) {
  struct Env {
    ~Env() {
      ::unsetenv("GRID_THREADS");
      ::unsetenv("GRID_ROOT_THREADS");
      ::unsetenv("GRID_BUSY_POLL_US");
    }
  } env;
  ::setenv("GRID_THREADS", "3", 1);
  ::setenv("GRID_ROOT_THREADS", "2", 1);
  auto o = Communicator::OptionsFromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->engine.threads, 3u);
  EXPECT_EQ(o->root.threads, 2u);
  ::setenv("GRID_BUSY_POLL_US", "40", 1);
  o = Communicator::OptionsFromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->engine.busy_poll, absl::Microseconds(40));
  ::setenv("GRID_BUSY_POLL_US", "-3", 1);
  EXPECT_THAT(Communicator::OptionsFromEnvironment().status().message(),
              HasSubstr("GRID_BUSY_POLL_US"));
  ::unsetenv("GRID_BUSY_POLL_US");
  ::setenv("GRID_THREADS", "0", 1);
  EXPECT_THAT(Communicator::OptionsFromEnvironment().status().message(), HasSubstr("GRID_THREADS"));
  ::unsetenv("GRID_THREADS");
  ::unsetenv("GRID_ROOT_THREADS");
  o = Communicator::OptionsFromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->engine.threads, 1u);
  EXPECT_EQ(o->root.threads, 1u);
}

// A store of the program's own (BootstrapOptions::open_store, Gloo's
// pluggable Store): rank 0 plans into it and another rank joins through it;
// no file, no TCP server. Every handle the communicators open is counted.
TEST(Bootstrap, RanksJoinThroughTheProgramsOwnStore) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::string, std::string> kv;
    int opened = 0;
  };
  class MemoryStore : public Store {
   public:
    explicit MemoryStore(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
    absl::Status Set(std::string_view key, std::string_view value) override {
      std::lock_guard<std::mutex> lock(s_->mu);
      s_->kv[std::string(key)] = std::string(value);
      s_->cv.notify_all();
      return absl::OkStatus();
    }
    absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override {
      std::unique_lock<std::mutex> lock(s_->mu);
      const std::string k(key);
      if (!s_->cv.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                           [&] { return s_->kv.count(k) > 0; })) {
        return absl::DeadlineExceededError("memory store: no key " + k);
      }
      return s_->kv.at(k);
    }
    std::string Describe() const override { return "memory"; }

   private:
    std::shared_ptr<Shared> s_;
  };
  auto shared = std::make_shared<Shared>();
  CommunicatorOptions o;
  o.bootstrap.rank = 0;
  o.bootstrap.world_size = 8;
  o.bootstrap.open_store = [shared]() -> absl::StatusOr<std::unique_ptr<Store>> {
    std::lock_guard<std::mutex> lock(shared->mu);
    ++shared->opened;
    return std::make_unique<MemoryStore>(shared);
  };
  o.bootstrap.transport = "udp:bind=127.0.0.1:0";
  o.bootstrap.timeout = absl::Seconds(5);
  o.bootstrap.fence = false;  // ranks alone, with no switches
  o.control.topology = "testbed";
  o.control.planner = "switchml";
  auto rank0 = Communicator::Create(o);
  ASSERT_TRUE(rank0.ok()) << rank0.status();
  CommunicatorOptions o5 = o;
  o5.bootstrap.rank = 5;
  o5.control.topology.clear();
  auto rank5 = Communicator::Create(o5);
  ASSERT_TRUE(rank5.ok()) << rank5.status();
  EXPECT_EQ((*rank5)->world_size(), 8);
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    EXPECT_TRUE(shared->kv.count("grid/switch/S2"));
    EXPECT_TRUE(shared->kv.count("grid/worker/5"));
    EXPECT_GE(shared->opened, 4);  // rank 0 publishing, each rank's config and heartbeats
  }
  // A factory that fails names the failure; one that returns nothing is refused.
  CommunicatorOptions bad = o5;
  bad.bootstrap.rank = 6;
  bad.bootstrap.open_store = []() -> absl::StatusOr<std::unique_ptr<Store>> {
    return absl::UnavailableError("c10d store gone");
  };
  EXPECT_THAT(Communicator::Create(bad).status().message(), HasSubstr("c10d store gone"));
  bad.bootstrap.open_store = []() -> absl::StatusOr<std::unique_ptr<Store>> { return nullptr; };
  EXPECT_THAT(Communicator::Create(bad).status().message(), HasSubstr("returned no store"));
}

// A planner registered by the program reaches the job through
// ControlOptions::planners; the built-in registry does not know it.
TEST(Bootstrap, RankZeroPlansWithAProgramsOwnPlanner) {
  class Renamed : public planner::Planner {
   public:
    explicit Renamed(std::unique_ptr<planner::Planner> inner) : inner_(std::move(inner)) {}
    std::string_view name() const override { return "mine"; }
    absl::StatusOr<planner::Plan> Plan(const topology::Topology& t,
                                       const planner::JobSpec& job) override {
      auto plan = inner_->Plan(t, job);
      if (plan.ok()) plan->planner = "mine";
      return plan;
    }

   private:
    std::unique_ptr<planner::Planner> inner_;
  };
  planner::PlannerRegistry registry = planner::PlannerRegistry::WithBuiltins();
  ASSERT_TRUE(registry
                  .Register("mine",
                            [](const planner::PlannerOptions& po) {
                              return std::make_unique<Renamed>(
                                  *planner::PlannerRegistry::WithBuiltins().Create("switchml", po));
                            })
                  .ok());
  const std::string dir = ::testing::TempDir() + "/own_planner_store";
  std::filesystem::remove_all(dir);
  CommunicatorOptions o;
  o.bootstrap.rank = 0;
  o.bootstrap.world_size = 8;
  o.bootstrap.store = "file:" + dir;
  o.bootstrap.transport = "udp:bind=127.0.0.1:0";
  o.bootstrap.timeout = absl::Seconds(5);
  o.bootstrap.fence = false;  // a rank alone, with no switches
  o.control.topology = "testbed";
  o.control.planner = "mine";
  EXPECT_THAT(Communicator::Create(o).status().message(), HasSubstr("mine"));
  o.control.planners = &registry;
  auto rank0 = Communicator::Create(o);
  ASSERT_TRUE(rank0.ok()) << rank0.status();
  auto store = OpenStore(o.bootstrap.store);
  ASSERT_TRUE(store.ok());
  auto plan = (*store)->Get("grid/plan", absl::Seconds(1));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(*plan, HasSubstr("\"mine\""));
}

}  // namespace
}  // namespace grid
