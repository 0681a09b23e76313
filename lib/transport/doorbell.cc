#include "transport/doorbell.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace grid::transport {
namespace {

BellPage* MapPage(int fd) {
  void* p = ::mmap(nullptr, sizeof(BellPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<BellPage*>(p);
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE: the word is shared between processes.
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

std::vector<MemifVdev> ParseMemifVdevs(int argc, char** argv) {
  std::vector<MemifVdev> out;
  for (int i = 0; i < argc; ++i) {
    absl::string_view a = argv[i];
    // "--vdev=SPEC" or "--vdev SPEC".
    if (a == "--vdev" && i + 1 < argc) {
      a = argv[++i];
    } else if (!absl::ConsumePrefix(&a, "--vdev=")) {
      continue;
    }
    if (!absl::StartsWith(a, "net_memif")) continue;
    MemifVdev v;
    bool abstract = false;
    for (absl::string_view kv : absl::StrSplit(a, ',')) {
      if (v.name.empty()) {
        v.name = std::string(kv);
      } else if (kv == "role=client") {
        v.server = false;
      } else if (kv == "socket-abstract=yes") {
        abstract = true;
      } else if (absl::ConsumePrefix(&kv, "socket=")) {
        v.socket = std::string(kv);
      }
    }
    if (abstract) v.socket.clear();
    out.push_back(std::move(v));
  }
  return out;
}

std::string BellPath(const MemifVdev& vdev, bool own) {
  if (vdev.socket.empty()) return "";
  const bool server = own ? vdev.server : !vdev.server;
  return vdev.socket + (server ? ".server.bell" : ".client.bell");
}

absl::StatusOr<std::unique_ptr<Doorbell>> Doorbell::Create(const std::vector<std::string>& paths) {
  if (paths.empty()) return absl::InvalidArgumentError("doorbell: no path");
  // A page left by an earlier process is replaced, not reused: its peers
  // mapped the old file and the new one starts with no sleepers. The page is
  // sized under a temporary name, so no peer ever maps a short file.
  for (const std::string& p : paths) ::unlink(p.c_str());
  const std::string fresh = paths[0] + ".new";
  ::unlink(fresh.c_str());
  const int fd = ::open(fresh.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrFormat("doorbell %s: open: %s", fresh, std::strerror(errno)));
  }
  BellPage* page = nullptr;
  if (::ftruncate(fd, sizeof(BellPage)) == 0) page = MapPage(fd);
  const int err = errno;
  ::close(fd);
  if (page == nullptr) {
    ::unlink(fresh.c_str());
    return absl::UnavailableError(
        absl::StrFormat("doorbell %s: map: %s", fresh, std::strerror(err)));
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    if (::link(fresh.c_str(), paths[i].c_str()) != 0) {
      const int link_err = errno;
      ::munmap(page, sizeof(BellPage));
      for (size_t j = 0; j < i; ++j) ::unlink(paths[j].c_str());
      ::unlink(fresh.c_str());
      return absl::UnavailableError(
          absl::StrFormat("doorbell %s: link to %s: %s", paths[i], fresh, std::strerror(link_err)));
    }
  }
  ::unlink(fresh.c_str());
  return std::unique_ptr<Doorbell>(new Doorbell(page, paths));
}

Doorbell::~Doorbell() {
  for (const std::string& p : paths_) ::unlink(p.c_str());
  ::munmap(page_, sizeof(BellPage));
}

void Doorbell::Arm(uint32_t want) {
  page_->want.store(std::max<uint32_t>(want, 1), std::memory_order_relaxed);
  page_->arms.fetch_add(1, std::memory_order_relaxed);
  page_->sleepers.fetch_add(1, std::memory_order_seq_cst);
  armed_seq_ = page_->seq.load(std::memory_order_seq_cst);
  // The caller's last poll must not be seen before the announcement.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Doorbell::Disarm() { page_->sleepers.fetch_sub(1, std::memory_order_relaxed); }

void Doorbell::Wait(absl::Duration timeout) {
  const timespec ts = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
  // Returns at once if a ring came after Arm(): the word moved on.
  (void)Futex(&page_->seq, FUTEX_WAIT, armed_seq_, &ts);
  Disarm();
}

PeerBell::~PeerBell() {
  if (page_ != nullptr) ::munmap(page_, sizeof(BellPage));
  if (fd_ >= 0) ::close(fd_);
}

void PeerBell::Recheck() {
  if (path_.empty()) return;
  struct stat st {};
  if (page_ != nullptr) {
    // Still the peer's bell while the file has a name.
    if (::fstat(fd_, &st) == 0 && st.st_nlink > 0) return;
    owed_ = false;
    ::munmap(page_, sizeof(BellPage));
    ::close(fd_);
    page_ = nullptr;
    fd_ = -1;
  } else if (rings_ % kRecheckEvery != 1) {
    return;  // a missing bell is looked for every kRecheckEvery rings too
  }
  const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  if (::fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof(BellPage))) {
    page_ = MapPage(fd);
  }
  if (page_ == nullptr) {
    ::close(fd);
  } else {
    fd_ = fd;
  }
}

void PeerBell::Wake() {
  page_->seq.fetch_add(1, std::memory_order_seq_cst);
  (void)Futex(&page_->seq, FUTEX_WAKE, INT_MAX, nullptr);
}

}  // namespace grid::transport
