// Rendezvous store: how ranks, the root and the controller find each other
// and receive their configs (docs/worker.md, "Bootstrap"). Keys are
// slash-separated names ("grid/worker/3"); values are bytes.
#ifndef GRID_STORE_H_
#define GRID_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grid/export.h"

GRID_API_BEGIN

namespace grid {

class Store {
 public:
  virtual ~Store() = default;
  virtual absl::Status Set(std::string_view key, std::string_view value) = 0;
  // Waits until `key` exists, at most `timeout`; DeadlineExceeded names the
  // key.
  virtual absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) = 0;
  virtual std::string Describe() const = 0;
};

// Opens a store from a spec:
//   file:DIR          a directory (shared file system or one machine); each
//                     key is a file, written atomically.
//   tcp:HOST:PORT     a TCP store served by grid-controller, grid-root or
//                     ServeTcpStore.
absl::StatusOr<std::unique_ptr<Store>> OpenStore(std::string_view spec);

// Serves a TCP store on `port` (0: any) until the returned object is
// destroyed; its port() says which port it bound.
class StoreServer {
 public:
  virtual ~StoreServer() = default;
  virtual int port() const = 0;
};
absl::StatusOr<std::unique_ptr<StoreServer>> ServeTcpStore(int port);

}  // namespace grid

GRID_API_END

#endif  // GRID_STORE_H_
