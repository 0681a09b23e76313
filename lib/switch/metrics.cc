#include "switch/metrics.h"

#include "node/metrics.h"
#include "switch/counter_fields.h"

namespace grid::sw {

std::string CountersToPrometheus(const std::string& name, const Counters& c,
                                 const std::vector<node::JobDrops>& job_drops) {
  node::MetricsText m;
  m.Family("grid_switch_drops_total", "counter", "Frames dropped, by reason (docs/switch.md).");
  for (int i = 1; i < kNumDrops; ++i) {
    m.Sample({{"switch", name}, {"reason", DropName(i)}}, static_cast<double>(c.drops[i]));
  }
  m.Family("grid_switch_forwarded_total", "counter",
           "GRID frames forwarded unchanged, by path label or address.");
  m.Sample({{"switch", name}}, static_cast<double>(c.forwarded));
  m.Family("grid_switch_other_forwarded_total", "counter",
           "Frames that are not GRID's, forwarded by address.");
  m.Sample({{"switch", name}}, static_cast<double>(c.other_forwarded));
  for (const JobCounterField& f : kJobCounterFields) {
    m.Family(std::string("grid_switch_job_") + f.name + "_total", "counter", f.help);
    for (const auto& [job, j] : c.jobs) {
      m.Sample({{"switch", name}, {"job", std::to_string(job)}}, static_cast<double>(j.*f.member));
    }
  }
  struct PortField {
    const char* name;
    uint64_t PortCounters::*member;
    const char* help;
  };
  for (const PortField& f : {PortField{"rx_packets", &PortCounters::rx_packets, "Frames received."},
                             PortField{"rx_bytes", &PortCounters::rx_bytes, "Bytes received."},
                             PortField{"tx_packets", &PortCounters::tx_packets, "Frames sent."},
                             PortField{"tx_bytes", &PortCounters::tx_bytes, "Bytes sent."}}) {
    m.Family(std::string("grid_switch_port_") + f.name + "_total", "counter", f.help);
    for (size_t p = 0; p < c.ports.size(); ++p) {
      m.Sample({{"switch", name}, {"port", std::to_string(p)}},
               static_cast<double>(c.ports[p].*f.member));
    }
  }
  node::AppendJobDrops(m, "grid_switch_job_drops_total", {"switch", name}, job_drops);
  return m.text();
}

}  // namespace grid::sw
