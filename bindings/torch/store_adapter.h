// The c10d::Store that PyTorch hands a process group, as a grid::Store: the
// backend's ranks find each other through torch's rendezvous, with no second
// one (docs/torch.md, "Where the fabric comes from").
#ifndef GRID_BINDINGS_TORCH_STORE_ADAPTER_H_
#define GRID_BINDINGS_TORCH_STORE_ADAPTER_H_

#include <memory>
#include <string>
#include <string_view>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "grid/store.h"

namespace grid::torch_backend {

// Reads poll c10d's check() rather than block in its wait(): a TCPStore
// client holds one lock for the whole of a wait, which would stall the
// heartbeats that other handles of the same store write meanwhile.
class C10dStore final : public Store {
 public:
  explicit C10dStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  absl::Status Set(std::string_view key, std::string_view value) override;
  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override;
  std::string Describe() const override { return "c10d store"; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

// The ranks' store over a fabric's: what the ranks write (heartbeats) goes
// to `ranks` and is read there; a key `ranks` does not hold is read from
// `fabric`, the store a grid-controller filled (GRID_STORE), which the ranks
// never write.
class OverlayStore final : public Store {
 public:
  OverlayStore(std::unique_ptr<Store> ranks, std::unique_ptr<Store> fabric)
      : ranks_(std::move(ranks)), fabric_(std::move(fabric)) {}
  absl::Status Set(std::string_view key, std::string_view value) override {
    return ranks_->Set(key, value);
  }
  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override;
  std::string Describe() const override {
    return ranks_->Describe() + " over " + fabric_->Describe();
  }

 private:
  std::unique_ptr<Store> ranks_;
  std::unique_ptr<Store> fabric_;
};

}  // namespace grid::torch_backend

#endif  // GRID_BINDINGS_TORCH_STORE_ADAPTER_H_
