// Internal: rank 0 as the job's controller (ControlOptions): plans the job on
// its topology and publishes every host's config into the store, serving the
// store when it is tcp:... .
#ifndef GRID_LIB_API_CONTROLLER_H_
#define GRID_LIB_API_CONTROLLER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "grid/options.h"
#include "grid/store.h"

namespace grid::api {

// The bootstrap store: the program's own (open_store), or the spec's.
absl::StatusOr<std::unique_ptr<Store>> OpenBootstrapStore(const BootstrapOptions& bootstrap);

// The store server (null for a file store or the program's own) must live as
// long as the job.
absl::StatusOr<std::unique_ptr<StoreServer>> ControlJob(const BootstrapOptions& bootstrap,
                                                        const ControlOptions& control);

}  // namespace grid::api

#endif  // GRID_LIB_API_CONTROLLER_H_
