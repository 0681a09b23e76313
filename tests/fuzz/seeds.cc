// Writes the fuzzers' seed corpora into DIR/wire, DIR/topology, DIR/plan, ...:
// valid inputs of each kind, for the fuzzers to mutate.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "grid/control.h"
#include "grid/planner.h"
#include "grid/topology.h"
#include "grid/wire.h"
#include "trace/chrome.h"
#include "trace/recorder.h"

namespace {

bool Write(const std::filesystem::path& path, const void* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

bool Write(const std::filesystem::path& path, const std::string& text) {
  return Write(path, text.data(), text.size());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace grid;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code error;
  for (const char* sub : {"wire", "topology", "plan", "pipeline", "switch", "host", "root",
                          "p4_entries", "node", "fault_schedule", "report", "p4runtime"}) {
    std::filesystem::create_directories(dir / sub, error);
    if (error) return 1;
  }
  for (uint8_t t = wire::kMinMessageType; t <= wire::kMaxMessageType; ++t) {
    wire::Header h;
    h.type = static_cast<wire::MessageType>(t);
    h.flags = wire::flags::kCopy;
    h.job_id = 7;
    h.job_token = 0x01020304;
    h.fan_in = 3;
    h.num_elements = t <= 3 ? 4 : 0;
    std::vector<uint8_t> payload(h.num_elements * wire::kElementBytes, 0x11);
    std::vector<uint8_t> frame(wire::FrameBytes(h.num_elements));
    if (!wire::EncodeFrame({}, h, payload, absl::MakeSpan(frame)).ok()) return 1;
    const std::string n = std::to_string(t);
    if (!Write(dir / "wire" / ("frame_" + n), frame.data(), frame.size()) ||
        !Write(dir / "wire" / ("datagram_" + n), frame.data() + wire::kGridOffset,
               frame.size() - wire::kGridOffset)) {
      return 1;
    }
  }
  const char* specs[] = {"testbed", "fattree:k=4,prog=random:0.5,seed=3",
                         "leafspine:spines=2,leaves=3,hosts=2,prog=tor,cap=fixed:400"};
  int i = 0;
  for (const char* spec : specs) {
    auto topo = topology::GenerateTopology(spec);
    if (!topo.ok()) return 1;
    if (!Write(dir / "topology" / ("spec_" + std::to_string(i)), std::string(spec)) ||
        !Write(dir / "topology" / ("json_" + std::to_string(i)), topology::TopologyToJson(*topo))) {
      return 1;
    }
    ++i;
  }
  auto testbed = topology::GenerateTopology("testbed");
  auto job = planner::MakeJob(*testbed, 8, std::nullopt, 1);
  if (!job.ok()) return 1;
  const auto registry = planner::PlannerRegistry::WithBuiltins();
  for (const std::string& name : registry.Names()) {
    auto plan = (*registry.Create(name))->Plan(*testbed, *job);
    if (!plan.ok() || !Write(dir / "plan" / name, planner::PlanToJson(*testbed, *plan))) return 1;
  }
  // Switch tables, and frames for S2 of the testbed under SwitchML's plan
  // (the pipeline fuzzer's switch): a DATA of each member, a RESULT, a
  // PARTIAL passing through. The first byte is the ingress port.
  auto switchml = (*registry.Create("switchml"))->Plan(*testbed, *job);
  host_config::JobParams params;
  params.job_id = 1;
  params.token = 1;  // easy to hit: 0 is refused
  params.slots = 4;
  auto configs = control::BuildSwitchConfigs(*testbed, *switchml, params);
  if (!configs.ok()) return 1;
  for (const auto& [node, config] : *configs) {
    if (!Write(dir / "switch" / config.name, sw::ConfigToJson(config))) return 1;
    // The same tables as P4 entries (p4_entries_fuzz).
    auto entries = sw::ConfigToP4Entries(config);
    if (!entries.ok() || !Write(dir / "p4_entries" / config.name, *entries)) return 1;
  }
  // The same plan best effort (ATP): S1's tables then hold proxies for S2
  // and S3, and the root's name S1 as their proxy.
  planner::Plan best_effort = *switchml;
  best_effort.best_effort = true;
  auto be_configs = control::BuildSwitchConfigs(*testbed, best_effort, params);
  auto be_root = control::BuildRootConfig(*testbed, best_effort, params);
  if (!be_configs.ok() || !be_root.ok() ||
      !Write(dir / "switch" / "S1_best_effort",
             sw::ConfigToJson(be_configs->at(*testbed->Find("S1")))) ||
      !Write(dir / "host" / "root_best_effort", "R" + host_config::RootConfigToJson(*be_root))) {
    return 1;
  }
  // Host configs and transport specs (host_config_fuzz), and frames for the
  // root of the same job (root_fuzz): a PARTIAL from each aggregating switch.
  auto workers = control::BuildWorkerConfigs(*testbed, *switchml, params);
  auto root = control::BuildRootConfig(*testbed, *switchml, params);
  if (!workers.ok() || !root.ok()) return 1;
  if (!Write(dir / "host" / "worker", "W" + host_config::WorkerConfigToJson(workers->front())) ||
      !Write(dir / "host" / "root", "R" + host_config::RootConfigToJson(*root)) ||
      !Write(dir / "host" / "udp", "Sudp:bind=10.0.0.1:48640,route=10.0.0.2@127.0.0.1:5000") ||
      !Write(dir / "host" / "link", "Sudp-link:bind=127.0.0.1:1,peer=127.0.0.1:2,loss=0.1")) {
    return 1;
  }
  for (const auto& c : root->contributors) {
    wire::Header h;
    h.type = wire::MessageType::kPartial;
    h.job_id = 1;
    h.rank = wire::kAllRanks;
    h.agg_node = static_cast<uint16_t>(root->node);
    h.fan_in = static_cast<uint16_t>(root->contributors.size());
    h.slot = 1;
    h.op_seq = 2;
    h.chunk = 3;
    h.num_elements = 4;
    wire::FrameAddress a;
    a.src_ip = c.ip;
    a.dst_ip = root->ip;
    std::vector<uint8_t> payload(16, 1), frame(wire::FrameBytes(4));
    if (!wire::EncodeFrame(a, h, payload, absl::MakeSpan(frame)).ok() ||
        !Write(dir / "root" / ("partial_" + std::to_string(c.node)),
               std::string(frame.begin(), frame.end()))) {
      return 1;
    }
  }
  const planner::PathLabels labels = planner::LabelPaths(*switchml);
  const topology::NodeId s2 = *testbed->Find("S2");
  int n = 0;
  for (int rank : {2, 3, 6, -1}) {
    wire::Header h;
    h.type = rank < 0 ? wire::MessageType::kResult : wire::MessageType::kData;
    h.job_id = 1;
    h.rank = rank < 0 ? wire::kAllRanks : static_cast<uint16_t>(rank);
    h.agg_node = static_cast<uint16_t>(s2);
    h.path = rank < 0 ? labels.from_root.at(s2) : labels.up[rank];
    h.fan_in = 3;
    h.num_elements = 4;
    std::vector<uint8_t> frame(1 + wire::FrameBytes(4), 0);
    frame[0] = static_cast<uint8_t>(n);
    std::vector<uint8_t> payload(16, 1);
    if (!wire::EncodeFrame({}, h, payload, absl::MakeSpan(frame).subspan(1)).ok() ||
        !Write(dir / "pipeline" / ("frame_" + std::to_string(n++)), frame.data(), frame.size())) {
      return 1;
    }
  }
  // What nodes and ranks write in the store (node/status.h, api/health.h),
  // as the text formats are specified there.
  if (!Write(dir / "node" / "switch",
             "Sswitch 1765000000250 1765000000000 run 4242 1c4fd1f1-9a49-4d8f-908d-fe5aa42365b8\n"
             "7 16909060 0 12 0 0 0 3\n65535 1 1 0 0 0 0 0\n") ||
      !Write(dir / "node" / "root", "Sroot 1765000000250 1765000000000 end 17 -\n") ||
      !Write(dir / "node" / "heartbeat", "H12 1765000000250 run")) {
    return 1;
  }
  // GRID_TRACE's files as grid-report reads them (docs/observability.md): a
  // rank's, a switch's and the root's, alone and as one run (NUL between).
  {
    const absl::Time t = absl::FromUnixSeconds(1765000000);
    trace::Recorder rank_trace(64), switch_trace(64), root_trace(64);
    rank_trace.AsyncBegin(t, "allreduce", "op", 2, {{"chunks", 40}});
    rank_trace.Begin(t + absl::Microseconds(5), "window full", "wait");
    rank_trace.Counter(t + absl::Microseconds(6), "chunks", {{"in_flight", 16}, {"window", 16}});
    rank_trace.Counter(t + absl::Microseconds(6), "round trip (us)", {{"srtt", 500}, {"min", 200}});
    rank_trace.Instant(t + absl::Microseconds(7), "resend (timeout)", "loss", {{"chunk", 3}});
    rank_trace.End(t + absl::Microseconds(9), "window full", "wait");
    rank_trace.AsyncEnd(t + absl::Microseconds(20), "allreduce", "op", 2);
    for (int k = 0; k < 3; ++k) {
      const absl::Time at = t + absl::Microseconds(6 * k);
      switch_trace.Counter(at, "queue depth", {{"port 0", k}, {"port 4", 10 * k}});
      switch_trace.Counter(at, "drops", {{"impaired", k}, {"over_capacity", 2 * k}});
      switch_trace.Counter(at, "aggregated", {{"data", 10 * k}, {"passed", k}});
      root_trace.Counter(at, "chunks", {{"completed", 5 * k}, {"results_resent", k}});
    }
    const std::string r = trace::ChromeTraceJson({"rank 0 (job 1)",
                                                  "rank",
                                                  1,
                                                  {{"lane 0", &rank_trace}},
                                                  R"("rank":0,"slots":64,"window":64)"});
    const std::string s = trace::ChromeTraceJson(
        {"switch S1",
         "switch",
         2,
         {{"pipeline 0", &switch_trace}},
         R"("capacity_gbps":1,"congestion_threshold":64,"hosts":{"4":"10.0.0.12"},"roots":{"1":"10.0.0.12"})"});
    const std::string o = trace::ChromeTraceJson(
        {"root job1", "root", 3, {{"lane 0", &root_trace}}, R"("ip":"10.0.0.12")"});
    if (!Write(dir / "report" / "rank", r) || !Write(dir / "report" / "switch", s) ||
        !Write(dir / "report" / "run", r + std::string(1, '\0') + s + std::string(1, '\0') + o)) {
      return 1;
    }
  }
  // What the P4Runtime client parses (p4runtime/): a switch's P4 entries, and
  // a P4Info ('P' first) of the program's shape.
  if (!Write(
          dir / "p4runtime" / "entries",
          R"({"format":"grid-p4-entries/1","default_actions":[{"table":"ip_route",)"
          R"("action":"set_nhop","params":{"port":3,"mac":"02:00:00:00:00:01"}}],)"
          R"("table_entries":[{"table":"GridIngress.label_route","match":{"hdr.grid.path":7},)"
          R"("action":"set_nhop","params":{"port":1,"mac":"02:00:00:00:00:02"}},)"
          R"({"table":"ip_route","match":{"hdr.ipv4.dst":"10.0.0.4"},"action":"set_nhop",)"
          R"("params":{"port":2,"mac":"02:00:00:00:00:04"}}],)"
          R"("multicast_groups":[{"group":7,"replicas":[{"rid":1,"port":2},{"rid":2,"port":3}]}]})") ||
      !Write(dir / "p4runtime" / "p4info",
             "Ptables { preamble { id: 1 name: \"T\" alias: \"t\" } match_fields { id: 1 name: "
             "\"f\" bitwidth: 16 match_type: EXACT } action_refs { id: 10 } }\nactions { preamble "
             "{ id: 10 name: \"A\" } params { id: 1 name: \"p\" bitwidth: 9 } }\n")) {
    return 1;
  }
  // grid-ns3's fault schedules (docs/simulation.md), as --faults takes them.
  if (!Write(dir / "fault_schedule" / "all",
             "loss=0.01,dup=0.02,reorder=0.03,seed=9;down=S1-S2@2ms;up=S1-S2@3ms;"
             "restart=S3@150us;root@4ms;slow=2@1ms") ||
      !Write(dir / "fault_schedule" / "links", "loss=0.039868477496893061,seed=1")) {
    return 1;
  }
  return 0;
}
