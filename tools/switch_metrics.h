// grid-switch --metrics=ADDR:PORT (docs/switch.md, "Metrics"). The packet
// loop renders its counters into Prometheus' text every kPostEvery (Due,
// Post) and the server's thread serves the last text: nothing the packet
// loop writes is read by another thread, and a scrape never waits on it.
#ifndef GRID_TOOLS_SWITCH_METRICS_H_
#define GRID_TOOLS_SWITCH_METRICS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grid/switch.h"
#include "node/metrics.h"
#include "tools/switch_flags.h"

namespace grid::tools {

class SwitchMetrics {
 public:
  // Fresh enough for any scrape interval Prometheus is given (15 s by
  // default), cheap enough to render from the packet loop.
  static constexpr int64_t kPostEveryNs = 500'000'000;

  // Null without --metrics; a bad address or a port in use ends the process
  // (Fail), naming it. `pipelines` give the drops per (job, token), read
  // from their ledgers, which any thread may.
  static std::unique_ptr<SwitchMetrics> Start(const SwitchFlags& flags, const std::string& name,
                                              std::vector<const sw::Pipeline*> pipelines);
  // Packet loop: whether to Post now.
  bool Due(int64_t now_ns) const { return now_ns >= next_ns_; }
  void Post(int64_t now_ns, const sw::Counters& total);

 private:
  SwitchMetrics(std::string name, std::vector<const sw::Pipeline*> pipelines)
      : name_(std::move(name)), pipelines_(std::move(pipelines)) {}

  const std::string name_;
  const std::vector<const sw::Pipeline*> pipelines_;
  int64_t next_ns_ = 0;
  std::mutex mu_;
  std::string text_;  // under mu_
  std::unique_ptr<node::MetricsServer> server_;
};

}  // namespace grid::tools

#endif  // GRID_TOOLS_SWITCH_METRICS_H_
