// Everything the grid backend does differently on the torch versions it
// builds against, in one place (docs/torch.md, "Torch versions"):
//
//   torch 1.13      a backend is a c10d::ProcessGroup, and so is the Gloo
//                   process group it falls back on;
//   torch >= 2.1    a backend is a c10d::Backend that torch's ProcessGroup
//                   holds per device type, and ProcessGroupGloo is one too.
//
// ProcessGroupGrid derives from VersionedBackend, which forwards to the
// fallback the calls only the newer base declares, so process_group.{h,cc}
// have no version test. The version is compared as MAJOR * 100 + MINOR, so a
// torch 3.0 is "newer than 2.6", not "older than 1.13".
#ifndef GRID_BINDINGS_TORCH_TORCH_COMPAT_H_
#define GRID_BINDINGS_TORCH_TORCH_COMPAT_H_

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"

#define GRID_TORCH_VERSION (TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR)

#if GRID_TORCH_VERSION >= 201
#include <torch/csrc/distributed/c10d/Backend.hpp>
#elif GRID_TORCH_VERSION == 113
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#else
#error "the grid backend builds against torch 1.13 or 2.1 and later (GRID_WITH_TORCH=OFF skips it)"
#endif

namespace grid::torch_backend {

#if GRID_TORCH_VERSION >= 201
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

// How every error of the backend begins: it names the backend and the rank.
inline std::string ErrorPrefix(int rank) {
  return absl::StrFormat("grid backend, rank %d: ", rank);
}

// The base of ProcessGroupGrid: the fallback, and forwarding to it.
class VersionedBackend : public BackendBase {
 public:
  VersionedBackend(int rank, int size, c10::intrusive_ptr<BackendBase> fallback)
      : BackendBase(rank, size), fallback_(std::move(fallback)) {}

  const c10::intrusive_ptr<BackendBase>& fallback() const { return fallback_; }

#if GRID_TORCH_VERSION >= 201
  // Through Gloo: what torch 2.x's c10d added to a backend.
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override {
    return Forward("allgather_into_tensor_coalesced", [&] {
      return fallback_->allgather_into_tensor_coalesced(outputs, inputs, opts);
    });
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override {
    return Forward("reduce_scatter_tensor_coalesced", [&] {
      return fallback_->reduce_scatter_tensor_coalesced(outputs, inputs, opts);
    });
  }
  // A sparse allreduce is an allreduce GRID cannot do: it raises (it never
  // falls back, so a measurement of GRID is never one of Gloo).
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(std::vector<at::Tensor>& /*tensors*/,
                                                  const c10d::AllreduceOptions& /*opts*/) override {
    throw std::invalid_argument(ErrorPrefix(rank_) +
                                "allreduce of a sparse tensor: the switches add dense tensors");
  }
#endif

 protected:
  // Calls `f` on the fallback; an error it raises is raised again naming
  // this backend, the rank and `op`.
  template <typename F>
  auto Forward(const char* op, F&& f) -> decltype(f()) {
    const auto again = [&](const char* why) {
      return std::runtime_error(absl::StrFormat(
          "%s%s goes to the Gloo fallback (only allreduce runs on GRID; docs/torch.md), which "
          "failed: %s",
          ErrorPrefix(rank_), op, why));
    };
    try {
      return f();
    } catch (const c10::Error& e) {
      throw again(e.what_without_backtrace());
    } catch (const std::exception& e) {
      throw again(e.what());
    }
  }

  c10::intrusive_ptr<BackendBase> fallback_;
};

}  // namespace grid::torch_backend

#endif  // GRID_BINDINGS_TORCH_TORCH_COMPAT_H_
