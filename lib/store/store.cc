// Rendezvous stores: a directory of files, or a small TCP key-value server.
#include "grid/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace grid {
namespace {

// Keys name files and travel in frames: letters, digits, - _ . / only, and
// no "..".
absl::Status CheckKey(std::string_view key) {
  bool ok = !key.empty() && key.size() <= 256 && key.front() != '/' &&
            key.find("..") == std::string_view::npos;
  for (char c : key) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
                c == '/');
  }
  if (!ok) return absl::InvalidArgumentError(absl::StrFormat("store key \"%s\" is not valid", key));
  return absl::OkStatus();
}

// NotFound while the file does not exist, Unavailable for any other failure.
absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const std::string what =
        absl::StrFormat("cannot read %s: %s", path.string(), std::strerror(errno));
    return errno == ENOENT ? absl::NotFoundError(what) : absl::UnavailableError(what);
  }
  std::string value;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return absl::UnavailableError(
          absl::StrFormat("cannot read %s: %s", path.string(), std::strerror(e)));
    }
    if (n == 0) break;
    value.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return value;
}

class FileStore final : public Store {
 public:
  explicit FileStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // Values are private to their owner (0600, in 0700 directories): they
  // hold the job's token (docs/security.md).
  absl::Status Set(std::string_view key, std::string_view value) override {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    const std::filesystem::path path = dir_ / std::string(key);
    std::filesystem::path made;
    for (const auto& part : path.parent_path()) {
      made /= part;
      if (::mkdir(made.c_str(), 0700) != 0 && errno != EEXIST) {
        return absl::UnavailableError(
            absl::StrFormat("store: mkdir %s: %s", made.string(), std::strerror(errno)));
      }
    }
    // Write aside, then rename: a reader sees all of the value or none.
    const std::string tmp =
        path.string() + absl::StrFormat(".tmp.%d", static_cast<int>(::getpid()));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      return absl::UnavailableError(
          absl::StrFormat("store %s: cannot write: %s", tmp, std::strerror(errno)));
    }
    size_t done = 0;
    while (done < value.size()) {
      const ssize_t n = ::write(fd, value.data() + done, value.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = errno;
        ::close(fd);
        return absl::UnavailableError(
            absl::StrFormat("store %s: cannot write: %s", tmp, std::strerror(e)));
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrFormat("store: rename to %s: %s", path.string(), ec.message()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    const std::filesystem::path path = dir_ / std::string(key);
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      absl::StatusOr<std::string> value = ReadFile(path);
      if (value.ok()) return value;
      // Only a key not written yet is worth waiting for: an unreadable one
      // (another user's 0700 store, a directory) will not become readable.
      if (!absl::IsNotFound(value.status())) {
        return absl::UnavailableError(
            absl::StrFormat("store %s: key \"%s\": %s", Describe(), key, value.status().message()));
      }
      if (absl::Now() >= deadline) return NotSet(key, timeout);
      absl::SleepFor(absl::Milliseconds(10));
    }
  }

  std::string Describe() const override { return "file:" + dir_.string(); }

 private:
  // Waiting is right (ranks may start before the controller publishes), but
  // a directory nobody created after the whole timeout is most likely a
  // store spec that differs from the controller's --store.
  absl::Status NotSet(std::string_view key, absl::Duration timeout) const {
    std::error_code ec;
    const bool dir_exists = std::filesystem::is_directory(dir_, ec);
    return absl::DeadlineExceededError(absl::StrFormat(
        "store %s: key \"%s\" not set after %s%s", Describe(), key, absl::FormatDuration(timeout),
        dir_exists ? ""
                   : absl::StrFormat("; nothing was ever published there (%s does not "
                                     "exist): is it the store the controller wrote to?",
                                     dir_.string())));
  }

  std::filesystem::path dir_;
};

// ---- TCP: frames of [op:1][key_len:4][key][value_len:4][value] / [timeout_ms:4].

bool WriteAll(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteString(int fd, std::string_view s) {
  const uint32_t n = htonl(static_cast<uint32_t>(s.size()));
  return WriteAll(fd, &n, 4) && WriteAll(fd, s.data(), s.size());
}

bool ReadString(int fd, std::string* s, uint32_t max) {
  uint32_t n = 0;
  if (!ReadAll(fd, &n, 4)) return false;
  n = ntohl(n);
  if (n > max) return false;
  s->resize(n);
  return ReadAll(fd, s->data(), n);
}

constexpr uint32_t kMaxValue = 64u << 20;

class TcpServer final : public StoreServer {
 public:
  static absl::StatusOr<std::unique_ptr<StoreServer>> Start(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      return absl::InternalError(absl::StrFormat("store socket: %s", std::strerror(errno)));
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof(a);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 256) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      const int e = errno;
      ::close(fd);
      return absl::UnavailableError(
          absl::StrFormat("store: listen on port %d: %s", port, std::strerror(e)));
    }
    return std::unique_ptr<StoreServer>(new TcpServer(fd, ntohs(a.sin_port)));
  }

  ~TcpServer() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      for (int c : clients_) ::shutdown(c, SHUT_RDWR);
    }
    cv_.notify_all();
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    for (std::thread& t : threads_) t.join();
    ::close(listen_fd_);
  }

  int port() const override { return port_; }

 private:
  TcpServer(int fd, int port) : listen_fd_(fd), port_(port) {
    accept_thread_ = std::thread([this] { Accept(); });
  }

  void Accept() {
    while (true) {
      pollfd p{listen_fd_, POLLIN, 0};
      ::poll(&p, 1, 100);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
      }
      if (!(p.revents & POLLIN)) continue;
      const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) {  // the destructor ran meanwhile: nobody would shut it down
        ::close(c);
        return;
      }
      clients_.push_back(c);
      threads_.emplace_back([this, c] { Serve(c); });
    }
  }

  void Serve(int fd) {
    while (true) {
      uint8_t op = 0;
      std::string key, value;
      if (!ReadAll(fd, &op, 1) || !ReadString(fd, &key, 256)) break;
      if (op == 'S') {
        if (!ReadString(fd, &value, kMaxValue)) break;
        {
          std::lock_guard<std::mutex> lock(mu_);
          data_[key] = value;
        }
        cv_.notify_all();
        const uint8_t ok = 0;
        if (!WriteAll(fd, &ok, 1)) break;
      } else if (op == 'G') {
        uint32_t ms = 0;
        if (!ReadAll(fd, &ms, 4)) break;
        ms = ntohl(ms);
        std::unique_lock<std::mutex> lock(mu_);
        const bool found = cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] {
          return stop_ || data_.count(key) > 0;
        }) && data_.count(key) > 0;
        if (found) value = data_[key];
        lock.unlock();
        const uint8_t status = found ? 0 : 1;
        if (!WriteAll(fd, &status, 1) || (found && !WriteString(fd, value))) break;
      } else {
        break;
      }
    }
    // Forget the descriptor before closing it: its number may be reused.
    {
      std::lock_guard<std::mutex> lock(mu_);
      clients_.erase(std::remove(clients_.begin(), clients_.end(), fd), clients_.end());
    }
    ::close(fd);
  }

  int listen_fd_;
  int port_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, std::string> data_;
  std::vector<int> clients_;
  std::vector<std::thread> threads_;
  std::thread accept_thread_;
};

class TcpStore final : public Store {
 public:
  TcpStore(std::string host, int port) : host_(std::move(host)), port_(port) {}
  ~TcpStore() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Set(std::string_view key, std::string_view value) override {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = Connect(kSetTimeout); !s.ok()) return s;
    // A Set is answered at once: a server that does not is gone.
    timeval tv{static_cast<time_t>(absl::ToInt64Seconds(kSetTimeout)), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    uint8_t status = 1;
    const uint8_t op = 'S';
    if (!WriteAll(fd_, &op, 1) || !WriteString(fd_, key) || !WriteString(fd_, value) ||
        !ReadAll(fd_, &status, 1) || status != 0) {
      return Broken("set", key);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    const absl::Time deadline = absl::Now() + timeout;
    if (absl::Status s = Connect(timeout); !s.ok()) return s;
    const uint8_t op = 'G';
    const auto ms = static_cast<uint32_t>(
        std::clamp<int64_t>(absl::ToInt64Milliseconds(deadline - absl::Now()), 0, 1 << 30));
    const uint32_t wire_ms = htonl(ms);
    // The server answers by the deadline; the socket waits a little longer.
    timeval tv{static_cast<time_t>(ms / 1000 + 5), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    uint8_t status = 1;
    std::string value;
    if (!WriteAll(fd_, &op, 1) || !WriteString(fd_, key) || !WriteAll(fd_, &wire_ms, 4) ||
        !ReadAll(fd_, &status, 1)) {
      return Broken("get", key);
    }
    if (status != 0) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "store %s: key \"%s\" not set after %s", Describe(), key, absl::FormatDuration(timeout)));
    }
    if (!ReadString(fd_, &value, kMaxValue)) return Broken("get", key);
    return value;
  }

  std::string Describe() const override { return absl::StrFormat("tcp:%s:%d", host_, port_); }

 private:
  absl::Status Broken(const char* what, std::string_view key) {
    ::close(fd_);
    fd_ = -1;
    return absl::UnavailableError(
        absl::StrFormat("store %s: %s \"%s\": connection lost", Describe(), what, key));
  }

  // Connects, retrying while the server is not up yet.
  absl::Status Connect(absl::Duration timeout) {
    if (fd_ >= 0) return absl::OkStatus();
    const absl::Time deadline = absl::Now() + timeout;
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    while (true) {
      addrinfo* res = nullptr;
      if (::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &res) == 0) {
        // Non-blocking, so an unreachable host costs the timeout, not the
        // kernel's minutes of SYN retries.
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        bool connected = false;
        if (fd >= 0) {
          int r = ::connect(fd, res->ai_addr, res->ai_addrlen);
          if (r != 0 && errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            const int ms = static_cast<int>(
                std::clamp<int64_t>(absl::ToInt64Milliseconds(deadline - absl::Now()), 1, 1000));
            int err = 0;
            socklen_t len = sizeof(err);
            r = ::poll(&p, 1, ms) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
                        err == 0
                    ? 0
                    : -1;
          }
          connected = r == 0;
        }
        ::freeaddrinfo(res);
        if (connected) {
          ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
          const int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          fd_ = fd;
          return absl::OkStatus();
        }
        if (fd >= 0) ::close(fd);
      }
      if (absl::Now() >= deadline) {
        // DeadlineExceeded, as a key not set in time: a waiter retries both
        // (a server may start after its clients).
        return absl::DeadlineExceededError(absl::StrFormat("store %s: cannot connect within %s",
                                                      Describe(), absl::FormatDuration(timeout)));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  static constexpr absl::Duration kSetTimeout = absl::Seconds(5);
  std::string host_;
  int port_;
  std::mutex mu_;
  int fd_ = -1;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenStore(std::string_view spec) {
  if (spec.substr(0, 5) == "file:" && spec.size() > 5) {
    return std::unique_ptr<Store>(new FileStore(std::filesystem::path(spec.substr(5))));
  }
  if (spec.substr(0, 4) == "tcp:") {
    const std::string_view rest = spec.substr(4);
    const size_t colon = rest.rfind(':');
    int port = 0;
    if (colon != std::string_view::npos && colon > 0 &&
        absl::SimpleAtoi(absl::string_view(rest.data() + colon + 1, rest.size() - colon - 1),
                         &port) &&
        port > 0 && port < 65536) {
      return std::unique_ptr<Store>(new TcpStore(std::string(rest.substr(0, colon)), port));
    }
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("store \"%s\": expected file:DIR or tcp:HOST:PORT", spec));
}

absl::StatusOr<std::unique_ptr<StoreServer>> ServeTcpStore(int port) {
  return TcpServer::Start(port);
}

}  // namespace grid
