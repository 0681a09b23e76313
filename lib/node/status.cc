#include "node/status.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "node/process.h"

namespace grid::node {

const char* NodeKindName(NodeKind kind) {
  return kind == NodeKind::kRoot ? "grid-root" : "grid-switch";
}

std::string NodeStatusKey(std::string_view name) { return "grid/node/" + std::string(name); }

std::string FormatNodeStatus(const NodeStatus& s) {
  std::string out =
      absl::StrFormat("%s %d %d %s %d %s\n", s.kind == NodeKind::kRoot ? "root" : "switch",
                      s.unix_ms, s.started_ms, s.ended ? "end" : "run", s.pid, s.boot_id);
  for (const JobDrops& d : s.drops) {
    absl::StrAppend(&out, d.job, " ", d.token);
    for (uint64_t c : d.counts) absl::StrAppend(&out, " ", c);
    out += '\n';
  }
  return out;
}

bool ParseNodeStatus(std::string_view text, NodeStatus* status) {
  const std::vector<absl::string_view> lines =
      absl::StrSplit(absl::string_view(text.data(), text.size()), '\n', absl::SkipEmpty());
  if (lines.empty()) return false;
  NodeStatus s;
  const std::vector<absl::string_view> head = absl::StrSplit(lines[0], ' ');
  if (head.size() != 6 || (head[0] != "switch" && head[0] != "root") ||
      (head[3] != "run" && head[3] != "end") || !absl::SimpleAtoi(head[1], &s.unix_ms) ||
      !absl::SimpleAtoi(head[2], &s.started_ms) || !absl::SimpleAtoi(head[4], &s.pid) ||
      s.pid < 0 || head[5].empty()) {
    return false;
  }
  s.boot_id = std::string(head[5]);
  s.kind = head[0] == "root" ? NodeKind::kRoot : NodeKind::kSwitch;
  s.ended = head[3] == "end";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<absl::string_view> f = absl::StrSplit(lines[i], ' ');
    if (f.size() != 2 + kNumJobDrops) return false;
    JobDrops d;
    uint32_t job = 0;
    if (!absl::SimpleAtoi(f[0], &job) || job > 0xffff || !absl::SimpleAtoi(f[1], &d.token)) {
      return false;
    }
    d.job = static_cast<uint16_t>(job);
    for (int r = 0; r < kNumJobDrops; ++r) {
      if (!absl::SimpleAtoi(f[2 + r], &d.counts[r])) return false;
    }
    s.drops.push_back(d);
  }
  *status = std::move(s);
  return true;
}

NodeReporter::NodeReporter(std::unique_ptr<Store> store, std::string name, NodeKind kind,
                           std::function<std::vector<JobDrops>()> drops, absl::Duration period)
    : store_(std::move(store)),
      name_(std::move(name)),
      kind_(kind),
      drops_(std::move(drops)),
      period_(period),
      started_ms_(absl::ToUnixMillis(absl::Now())),
      pid_(getpid()),
      boot_id_(ThisBootId()) {
  thread_ = std::thread([this] { Loop(); });
}

NodeReporter::~NodeReporter() { Stop(); }

absl::Status NodeReporter::Write(bool ended) {
  NodeStatus s;
  s.kind = kind_;
  s.unix_ms = absl::ToUnixMillis(absl::Now());
  s.started_ms = started_ms_;
  s.ended = ended;
  s.pid = pid_;
  s.boot_id = boot_id_;
  if (drops_) s.drops = drops_();
  return store_->Set(NodeStatusKey(name_), FormatNodeStatus(s));
}

void NodeReporter::Loop() {
  bool warned = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    const absl::Status s = Write(false);
    if (!s.ok() && !warned) {
      // Once: the ranks will take this node for dead if it never gets
      // through, and the person at this console should know why.
      warned = true;
      std::fprintf(stderr, "%s %s: cannot write its status to the store: %s\n", NodeKindName(kind_),
                   name_.c_str(), s.ToString().c_str());
    }
    lock.lock();
    cv_.wait_for(lock, absl::ToChronoNanoseconds(period_), [&] { return stop_; });
  }
}

void NodeReporter::Stop(bool ended) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (ended) (void)Write(true);
}

}  // namespace grid::node
