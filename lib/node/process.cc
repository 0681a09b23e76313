#include "node/process.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace grid::node {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(text.str()));
}

// utime + stime of a task from its stat file (fields 14 and 15, counted
// after the command name, which may hold spaces), in ns; nullopt if unread.
std::optional<int64_t> StatCpuNs(const std::string& task_dir) {
  const std::string stat = ReadSmallFile(task_dir + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(paren + 1));
  std::string f;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14 && !absl::SimpleAtoi(f, &utime)) return std::nullopt;
    if (i == 15 && !absl::SimpleAtoi(f, &stime)) return std::nullopt;
  }
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return std::nullopt;
  return (utime + stime) * (1'000'000'000 / hz);
}

}  // namespace

std::string ThisBootId() {
  std::string id = ReadSmallFile("/proc/sys/kernel/random/boot_id");
  return id.empty() || id.find(' ') != std::string::npos ? "-" : id;
}

absl::StatusOr<int64_t> LocalPid(const std::string& name, const NodeStatus& status) {
  const char* kind = NodeKindName(status.kind);
  if (status.pid <= 0 || status.boot_id == "-") {
    return absl::FailedPreconditionError(
        absl::StrCat(kind, " ", name, " did not say which process it is"));
  }
  if (status.boot_id != ThisBootId()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kind, " ", name, " runs on another host (boot id ", status.boot_id, ")"));
  }
  const std::string comm = ReadSmallFile(absl::StrCat("/proc/", status.pid, "/comm"));
  if (comm.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kind, " ", name, "'s process ", status.pid, " is not running"));
  }
  if (comm != kind) {
    return absl::FailedPreconditionError(
        absl::StrCat(kind, " ", name, "'s pid ", status.pid, " is now \"", comm, "\", not ", kind));
  }
  return status.pid;
}

absl::StatusOr<absl::Duration> ProcessCpuTime(int64_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return absl::NotFoundError(absl::StrCat("process ", pid, ": cannot list ", dir));
  }
  int64_t ns = 0;
  int threads = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    // A thread may exit between the listing and the read: it is skipped.
    std::ifstream in(absl::StrCat(dir, "/", e->d_name, "/schedstat"));
    int64_t run_ns = 0;
    if (in >> run_ns) {
      ns += run_ns;
      ++threads;
    } else if (const std::optional<int64_t> t = StatCpuNs(absl::StrCat(dir, "/", e->d_name))) {
      ns += *t;  // a kernel without schedstat: the tick counts
      ++threads;
    }
  }
  closedir(d);
  if (threads == 0) {
    return absl::NotFoundError(
        absl::StrCat("process ", pid, ": no thread's schedstat could be read under ", dir));
  }
  return absl::Nanoseconds(ns);
}

}  // namespace grid::node
