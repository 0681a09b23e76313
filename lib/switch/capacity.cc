// C_s, the switch's aggregation capacity (docs/switch.md, "Per packet",
// Capacity): a bucket of credit that the port layer fills as time passes
// and each aggregated or passed-on DATA spends.
#include <algorithm>

#include "grid/switch.h"

namespace grid::sw {

double Pipeline::CapacityBurstBits(const SwitchConfig& config) {
  // A window of every member covers a whole chunk of any job too, which a
  // best-effort job's first packet spends at once (PassOn).
  double widest_frames = kCapacityBurstBits, windows = 0;
  auto fit = [&](const JobEntry::Aggregate& a) {
    const double frame_bits = 8.0 * static_cast<double>(wire::FrameBytes(a.elements));
    widest_frames = std::max(widest_frames, kCapacityBurstFrames * frame_bits);
    windows += static_cast<double>(a.fan_in) * a.slots * frame_bits;
  };
  for (const auto& [id, job] : config.jobs) {
    for (const auto& [owner, a] : job.proxies) fit(a);
    if (job.aggregate) fit(*job.aggregate);
  }
  return std::max(widest_frames, windows);
}

void Pipeline::AddCapacityCredit(double bits) {
  if (config_.capacity_gbps <= 0 || !(bits > 0)) return;
  credit_bits_ = std::min(credit_cap_bits_, credit_bits_ + bits);
}

bool Pipeline::SpendCredit(double bits) {
  if (config_.capacity_gbps <= 0) return true;
  if (credit_bits_ < bits) return false;
  credit_bits_ -= bits;
  return true;
}

}  // namespace grid::sw
