// grid-controller in a build without the P4Runtime client (no gRPC or
// protobuf found, or GRID_WITH_P4RUNTIME=OFF): --switch=p4runtime and
// --delete-job say so.
#include "tools/p4runtime_load.h"

namespace grid::tools {
namespace {

absl::Status Unavailable() {
  return absl::UnimplementedError(
      "--switch=p4runtime: this build has no P4Runtime client (install libgrpc++-dev, "
      "libprotobuf-dev and protobuf-compiler-grpc, and give CMake P4Runtime's .proto files: "
      "docs/deploy.md, \"P4Runtime\")");
}

}  // namespace

absl::StatusOr<std::vector<std::string>> LoadP4Runtime(
    const std::map<topology::NodeId, sw::SwitchConfig>&, uint16_t, const P4RuntimeOptions&) {
  return Unavailable();
}

absl::StatusOr<std::vector<std::string>> DeleteP4RuntimeJobs(const std::set<uint32_t>&,
                                                             const P4RuntimeOptions&) {
  return Unavailable();
}

}  // namespace grid::tools
