// Waiting on a store key (store::AwaitKey): a long wait says once what it
// waits for, a hopeless one ends at once, and a file store's missing
// directory is an error, not a minute's silence.
#include "store/wait.h"

#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grid/store.h"
#include "gtest/gtest.h"

namespace grid::store {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/wait_test_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

struct Notices {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(line);
    };
  }
};

KeyWait Quick(const std::string& key, Notices& notices) {
  KeyWait w;
  w.key = key;
  w.who = "rank 2";
  w.what = "its config";
  w.timeout = absl::Seconds(10);
  w.notice = notices.Sink();
  w.notice_after = absl::Milliseconds(100);
  w.missing_directory_grace = absl::Milliseconds(300);
  w.slice = absl::Milliseconds(20);
  return w;
}

TEST(AwaitKey, ALongWaitSaysOnceWhatItWaitsForAndWhere) {
  const std::string dir = FreshDir("notice");
  auto store = OpenStore("file:" + dir);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(MarkPlanning(**store, "grid-controller").ok());
  Notices notices;
  std::thread later([&] {
    absl::SleepFor(absl::Milliseconds(500));
    ASSERT_TRUE((*store)->Set("grid/worker/2", "config").ok());
  });
  auto v = AwaitKey(**store, Quick("grid/worker/2", notices));
  later.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "config");
  ASSERT_EQ(notices.lines.size(), 1u);
  EXPECT_THAT(notices.lines[0],
              AllOf(HasSubstr("rank 2 is waiting for its config"), HasSubstr("\"grid/worker/2\""),
                    HasSubstr("file:" + dir), HasSubstr("at most"),
                    HasSubstr("a controller has started planning there")));
}

TEST(AwaitKey, AQuickKeySaysNothing) {
  auto store = OpenStore("file:" + FreshDir("quick"));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Set("k", "v").ok());
  Notices notices;
  EXPECT_TRUE(AwaitKey(**store, Quick("k", notices)).ok());
  EXPECT_TRUE(notices.lines.empty());
}

TEST(AwaitKey, GiveUpEndsTheWaitAtOnce) {
  auto store = OpenStore("file:" + FreshDir("give_up"));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Set("other", "x").ok());
  Notices notices;
  KeyWait w = Quick("never", notices);
  w.give_up = [] { return absl::InvalidArgumentError("not one of the job's ranks"); };
  const absl::Time start = absl::Now();
  const absl::Status s = AwaitKey(**store, w).status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("not one of the job's ranks"));
}

TEST(AwaitKey, AFileStoreWithNoDirectoryFailsAfterItsGrace) {
  const std::string dir = FreshDir("missing");
  auto store = OpenStore("file:" + dir);
  ASSERT_TRUE(store.ok());
  Notices notices;
  const absl::Time start = absl::Now();
  const absl::Status s = AwaitKey(**store, Quick("grid/worker/2", notices)).status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr(dir + " does not exist"),
                                 HasSubstr("Is it the store the controller writes to")));
  // The notice came first and said nobody had written there.
  ASSERT_EQ(notices.lines.size(), 1u);
  EXPECT_THAT(notices.lines[0], HasSubstr("no controller has written there yet"));
}

TEST(AwaitKey, AnExistingDirectoryIsWaitedOnToTheTimeout) {
  const std::string dir = FreshDir("empty");
  std::filesystem::create_directories(dir);
  auto store = OpenStore("file:" + dir);
  ASSERT_TRUE(store.ok());
  Notices notices;
  KeyWait w = Quick("grid/worker/2", notices);
  w.timeout = absl::Milliseconds(600);
  const absl::Status s = AwaitKey(**store, w).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr("rank 2: waited 600ms for its config"),
                                 HasSubstr("\"grid/worker/2\"")));
}

TEST(AwaitKey, ATcpStoreThatStartsLaterIsWaitedFor) {
  int port = 0;
  {
    auto probe = ServeTcpStore(0);
    ASSERT_TRUE(probe.ok());
    port = (*probe)->port();
  }
  auto client = OpenStore(absl::StrFormat("tcp:127.0.0.1:%d", port));
  ASSERT_TRUE(client.ok());
  std::unique_ptr<StoreServer> server;
  std::thread later([&] {
    absl::SleepFor(absl::Milliseconds(300));
    auto s = ServeTcpStore(port);
    ASSERT_TRUE(s.ok()) << s.status();
    server = *std::move(s);
    auto writer = OpenStore(absl::StrFormat("tcp:127.0.0.1:%d", port));
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Set("grid/root", "config").ok());
  });
  Notices notices;
  auto v = AwaitKey(**client, Quick("grid/root", notices));
  later.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "config");
}

}  // namespace
}  // namespace grid::store
