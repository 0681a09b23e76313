#include "switch/trace_sample.h"

#include <array>
#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"

namespace grid::sw {
namespace {

constexpr size_t kNamedPorts = 256;

// Counter events of up to Event::kMaxArgs arguments each: a name's events
// add up to one series per argument.
class ArgBatch {
 public:
  ArgBatch(trace::Recorder& trace, absl::Time now, const char* name)
      : trace_(trace), now_(now), name_(name) {}
  ~ArgBatch() { Flush(); }
  void Add(const char* arg, uint64_t value) {
    args_[n_++] = {arg, static_cast<int64_t>(value)};
    if (n_ == trace::Event::kMaxArgs) Flush();
  }

 private:
  void Flush() {
    if (n_ == 0) return;
    trace::Event e;
    e.ts_ns = absl::ToUnixNanos(now_);
    e.phase = trace::Phase::kCounter;
    e.name = name_;
    e.category = "counter";
    for (int i = 0; i < n_; ++i) e.args[i] = args_[i];
    trace_.Record(e);
    n_ = 0;
  }
  trace::Recorder& trace_;
  absl::Time now_;
  const char* name_;
  trace::Arg args_[trace::Event::kMaxArgs];
  int n_ = 0;
};

}  // namespace

const char* PortArgName(uint16_t port) {
  static const std::array<std::string, kNamedPorts>* names = [] {
    auto* a = new std::array<std::string, kNamedPorts>;
    for (size_t p = 0; p < kNamedPorts; ++p) (*a)[p] = absl::StrCat("port ", p);
    return a;
  }();
  return port < kNamedPorts ? (*names)[port].c_str() : "port 256+";
}

void SampleSwitch(trace::Recorder& trace, absl::Time now, const Pipeline& pipeline,
                  absl::Span<const uint32_t> depths, uint64_t impaired, uint64_t queue) {
  trace.Counter(now, "copies busy", {{"busy", static_cast<int64_t>(pipeline.BusyCopies())}});
  {
    ArgBatch b(trace, now, "queue depth");
    for (size_t p = 0; p < depths.size() && p < kNamedPorts; ++p) {
      b.Add(PortArgName(static_cast<uint16_t>(p)), depths[p]);
    }
  }
  const Counters& c = pipeline.counters();
  JobCounters sum;
  for (const auto& [id, j] : c.jobs) {
    sum.data += j.data;
    sum.partials += j.partials;
    sum.passed += j.passed;
    sum.replicas += j.replicas;
  }
  ArgBatch a(trace, now, "aggregated");
  a.Add("data", sum.data);
  a.Add("partials", sum.partials);
  a.Add("passed", sum.passed);
  a.Add("replicas", sum.replicas);
  ArgBatch d(trace, now, "drops");
  d.Add("impaired", impaired);
  d.Add("queue_full", queue);
  for (int r = 0; r < kNumDrops; ++r) {
    if (c.drops[r] != 0) d.Add(DropName(r), c.drops[r]);
  }
}

}  // namespace grid::sw
