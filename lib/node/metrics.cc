#include "node/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace grid::node {
namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// Writes all of `data`, or gives up on an error (the scraper went away).
void WriteAll(int fd, const std::string& data) {
  size_t at = 0;
  while (at < data.size()) {
    const ssize_t n = ::send(fd, data.data() + at, data.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

}  // namespace

void MetricsText::Family(const std::string& name, const char* type, const std::string& help) {
  family_ = name;
  absl::StrAppend(&text_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void MetricsText::Sample(const MetricLabels& labels, double value) {
  text_ += family_;
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      absl::StrAppend(&text_, i ? "," : "", labels[i].first, "=\"", Escape(labels[i].second), "\"");
    }
    text_ += '}';
  }
  absl::StrAppendFormat(&text_, " %.17g\n", value);
}

void AppendJobDrops(MetricsText& m, const std::string& family,
                    const std::pair<std::string, std::string>& node,
                    const std::vector<JobDrops>& drops) {
  m.Family(family, "counter",
           "Frames claiming a job that were dropped, by job, token and reason: what the job's "
           "ranks read from the store.");
  for (const JobDrops& d : drops) {
    for (int r = 0; r < kNumJobDrops; ++r) {
      m.Sample({node,
                {"job", std::to_string(d.job)},
                {"token", std::to_string(d.token)},
                {"reason", JobDropName(static_cast<JobDrop>(r))}},
               static_cast<double>(d.counts[r]));
    }
  }
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, std::function<std::string()> render) {
  const size_t colon = address.rfind(':');
  uint32_t port = 0;
  in_addr ip{};
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port > 65535 || inet_pton(AF_INET, address.substr(0, colon).c_str(), &ip) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics=", address, ": not ADDR:PORT with an IPv4 address (e.g. 0.0.0.0:9464)"));
  }
  // Non-blocking: a client that resets between poll() and accept() must not
  // hold the loop in accept() past a stop.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("--metrics: socket: ", strerror(errno)));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = ip;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0 ||
      ::listen(fd, 16) != 0) {
    const std::string why = strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("--metrics=", address, ": ", why));
  }
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(fd, ntohl(ip.s_addr), ntohs(sa.sin_port), std::move(render)));
}

MetricsServer::MetricsServer(int fd, uint32_t ip, uint16_t port,
                             std::function<std::string()> render)
    : fd_(fd), ip_(ip), port_(port), render_(std::move(render)) {
  thread_ = std::thread([this] { Loop(); });
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  thread_.join();
  ::close(fd_);
}

std::string MetricsServer::url() const {
  return absl::StrFormat("http://%d.%d.%d.%d:%d/metrics", ip_ >> 24, (ip_ >> 16) & 0xff,
                         (ip_ >> 8) & 0xff, ip_ & 0xff, port_);
}

void MetricsServer::Loop() {
  while (!stop_) {
    // Wakes every 100 ms to see whether it should stop.
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    // A scraper that stops reading holds the answer for at most this long.
    const timeval send_timeout = absl::ToTimeval(kRequestTimeout);
    setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
    Serve(client);
    ::close(client);
  }
}

void MetricsServer::Serve(int client) {
  // The request line and headers, until the blank line or the timeout.
  std::string request;
  const absl::Time deadline = absl::Now() + kRequestTimeout;
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
    const int left = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    pollfd p{client, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, left) <= 0) return;
    char buf[1024];
    const ssize_t n = ::recv(client, buf, sizeof(buf), 0);
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  const bool metrics =
      request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0;
  const std::string body = metrics ? render_() : "not found: GRID serves /metrics\n";
  WriteAll(client,
           absl::StrCat(metrics ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 404 Not Found\r\n",
                        "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n",
                        "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body));
}

}  // namespace grid::node
