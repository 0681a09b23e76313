// What a switch or the root shows Prometheus (grid-switch and grid-root
// --metrics=ADDR:PORT; docs/switch.md, "Metrics"): counters in Prometheus'
// text exposition format (0.0.4), served over HTTP at /metrics by a thread
// of the node's own, so a scrape never waits on the packet loop and the
// packet loop never waits on a scrape.
#ifndef GRID_LIB_NODE_METRICS_H_
#define GRID_LIB_NODE_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "node/drop_ledger.h"

namespace grid::node {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Builds the text: a family's HELP and TYPE lines, then its samples.
class MetricsText {
 public:
  // Starts family `name` ("grid_switch_drops_total"); `type` is "counter"
  // or "gauge". Each family once, its samples right after it.
  void Family(const std::string& name, const char* type, const std::string& help);
  // A sample of the family begun last; label values are escaped.
  void Sample(const MetricLabels& labels, double value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::string family_;
};

// Family `family` (a counter): the drops counted against each (job, token),
// by reason, every sample labelled `node` (("switch", "S1"), ("root", "PS")):
// what the job's ranks also read from the store (node/status.h).
void AppendJobDrops(MetricsText& m, const std::string& family,
                    const std::pair<std::string, std::string>& node,
                    const std::vector<JobDrops>& drops);

// The HTTP endpoint: GET /metrics answers with what `render` returns (from
// the server's thread: it must be safe to call there); anything else gets
// 404. One connection at a time, each given kRequestTimeout to send its
// request and as long again to take the answer, so a client that connects
// and says (or reads) nothing delays the next by at most that.
class MetricsServer {
 public:
  static constexpr absl::Duration kRequestTimeout = absl::Seconds(1);

  // Listens on "ADDR:PORT" (an IPv4 address; PORT 0 picks a free one).
  // Errors name the address and what the kernel said.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address,
                                                              std::function<std::string()> render);
  ~MetricsServer();  // stops the thread and closes the socket
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  uint16_t port() const { return port_; }
  // "http://ADDR:PORT/metrics", to tell the person who started the node.
  std::string url() const;

 private:
  MetricsServer(int fd, uint32_t ip, uint16_t port, std::function<std::string()> render);
  void Loop();
  void Serve(int client);

  const int fd_;
  const uint32_t ip_;
  const uint16_t port_;
  const std::function<std::string()> render_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace grid::node

#endif  // GRID_LIB_NODE_METRICS_H_
