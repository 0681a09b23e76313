// grid-controller in a build without the P4Runtime client (no gRPC or
// protobuf found, or GRID_WITH_P4RUNTIME=OFF): --switch=p4runtime says so.
#include "tools/p4runtime_load.h"

namespace grid::tools {

const bool kHaveP4Runtime = false;

absl::StatusOr<std::vector<std::string>> LoadP4Runtime(
    const std::map<topology::NodeId, sw::SwitchConfig>&, const P4RuntimeOptions&) {
  return absl::UnimplementedError(
      "--switch=p4runtime: this build has no P4Runtime client (install libgrpc++-dev, "
      "libprotobuf-dev and protobuf-compiler-grpc, and give CMake P4Runtime's .proto files: "
      "docs/deploy.md, \"P4Runtime\")");
}

}  // namespace grid::tools
