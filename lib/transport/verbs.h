// Internal: the RDMA verbs transport ("verbs:[device=NAME,][port=N,]mac=MAC").
// Built only where libibverbs is found; elsewhere OpenVerbs says so.
#ifndef GRID_LIB_TRANSPORT_VERBS_H_
#define GRID_LIB_TRANSPORT_VERBS_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "grid/transport.h"

namespace grid::transport {

// Unavailable (naming the reason) when this machine has no RDMA device;
// Unimplemented when the library was built without libibverbs.
absl::StatusOr<std::unique_ptr<Transport>> OpenVerbs(std::string_view spec);

}  // namespace grid::transport

#endif  // GRID_LIB_TRANSPORT_VERBS_H_
