// The rendezvous stores (grid/store.h): a file directory and a TCP server,
// their waits and the errors that say why a key never came.
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

TEST(Store, FileStoreWaitsForKeys) {
  auto store = OpenStore("file:" + ::testing::TempDir() + "/store_test");
  ASSERT_TRUE(store.ok());
  std::thread later([&] {
    absl::SleepFor(absl::Milliseconds(100));
    ASSERT_TRUE((*store)->Set("grid/worker/3", "hello").ok());
  });
  auto v = (*store)->Get("grid/worker/3", absl::Seconds(5));
  later.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "hello");
  const absl::Status missing = (*store)->Get("grid/missing", absl::Milliseconds(30)).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(missing.message(), HasSubstr("\"grid/missing\" not set after 30ms"));
  EXPECT_THAT(missing.message(), Not(HasSubstr("does not exist")));
  EXPECT_FALSE((*store)->Set("../escape", "x").ok());
  EXPECT_FALSE((*store)->Set("/abs", "x").ok());
}

// A store directory nobody created is named when the wait ends; a key that
// exists but cannot be read fails at once instead of waiting for the timeout.
TEST(Store, FileStoreSaysWhyAKeyNeverCame) {
  const std::string dir = ::testing::TempDir() + "/store_never_created";
  std::filesystem::remove_all(dir);
  auto absent = OpenStore("file:" + dir);
  ASSERT_TRUE(absent.ok());
  const absl::Status s = (*absent)->Get("grid/config", absl::Milliseconds(30)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr(dir + " does not exist"));

  auto store = OpenStore("file:" + ::testing::TempDir() + "/store_unreadable");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Set("grid/dir/leaf", "x").ok());
  const absl::Time start = absl::Now();
  const absl::Status unreadable = (*store)->Get("grid/dir", absl::Seconds(30)).status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(unreadable.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(unreadable.message(), HasSubstr("\"grid/dir\": cannot read"));
}

TEST(Store, TcpStoreServesManyClients) {
  auto server = ServeTcpStore(0);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string spec = absl::StrFormat("tcp:127.0.0.1:%d", (*server)->port());
  auto a = OpenStore(spec);
  auto b = OpenStore(spec);
  ASSERT_TRUE(a.ok() && b.ok());
  std::thread writer([&] {
    absl::SleepFor(absl::Milliseconds(100));
    ASSERT_TRUE((*a)->Set("k", std::string(100000, 'x')).ok());
  });
  auto v = (*b)->Get("k", absl::Seconds(5));
  writer.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->size(), 100000u);
  auto missing = (*b)->Get("nothing", absl::Milliseconds(50));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(missing.status().message(), HasSubstr("\"nothing\""));
  EXPECT_THAT(OpenStore("ftp:x").status().message(), HasSubstr("expected file:DIR"));
}

}  // namespace
}  // namespace grid
