#include "tools/switch_metrics.h"

#include <cstdio>

#include "switch/metrics.h"

namespace grid::tools {

std::unique_ptr<SwitchMetrics> SwitchMetrics::Start(const SwitchFlags& flags,
                                                    const std::string& name,
                                                    std::vector<const sw::Pipeline*> pipelines) {
  if (flags.metrics.empty()) return nullptr;
  std::unique_ptr<SwitchMetrics> m(new SwitchMetrics(name, std::move(pipelines)));
  SwitchMetrics* self = m.get();
  auto server = node::MetricsServer::Start(flags.metrics, [self] {
    std::lock_guard<std::mutex> lock(self->mu_);
    return self->text_;
  });
  if (!server.ok()) Fail(std::string(server.status().message()), 1);
  m->server_ = *std::move(server);
  std::fprintf(stderr, "grid-switch: %s metrics at %s\n", name.c_str(), m->server_->url().c_str());
  return m;
}

void SwitchMetrics::Post(int64_t now_ns, const sw::Counters& total) {
  next_ns_ = now_ns + kPostEveryNs;
  std::vector<std::vector<node::JobDrops>> parts;
  for (const sw::Pipeline* p : pipelines_) parts.push_back(p->job_drops().Snapshot());
  std::string text = sw::CountersToPrometheus(name_, total, node::MergeDrops(parts));
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(text);
}

}  // namespace grid::tools
