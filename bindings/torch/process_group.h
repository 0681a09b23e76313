// ProcessGroupGrid: the torch.distributed backend "grid" (docs/torch.md).
//
// allreduce (SUM, AVG; float32, bfloat16, float16, int32; any number of
// tensors) runs on a grid::Communicator, through the switches. Every other
// collective goes to `fallback`, a Gloo process group on the same store, so
// DDP's broadcast and allgather, barriers and point-to-point work unchanged.
// An allreduce GRID cannot do raises; it never falls back, so a measurement
// of GRID is never silently one of Gloo. One source for torch 1.13 and 2.x:
// what differs lives in torch_compat.h.
#ifndef GRID_BINDINGS_TORCH_PROCESS_GROUP_H_
#define GRID_BINDINGS_TORCH_PROCESS_GROUP_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "grid/communicator.h"
#include "torch_compat.h"

namespace grid::torch_backend {

class GridWork;

class ProcessGroupGrid final : public VersionedBackend {
 public:
  // Joins the job: the communicator's options come from the environment as
  // for Communicator::FromEnvironment, its rank and size from torch, and its
  // rendezvous from `store` (docs/torch.md). Throws c10::Error naming the
  // rank on failure.
  ProcessGroupGrid(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout, c10::intrusive_ptr<BackendBase> fallback);
  ~ProcessGroupGrid() override;

  const std::string getBackendName() const override { return "grid"; }

  // Through the switches.
  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;

  // Through Gloo.
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;

  // The communicator's counters (grid::CommunicatorStats), by name.
  std::map<std::string, double> Stats() const;

 private:
  struct Pending;
  c10::intrusive_ptr<c10d::Work> AllReduceOnGrid(const char* op, std::vector<at::Tensor>& tensors,
                                                 c10d::ReduceOp reduce_op,
                                                 std::chrono::milliseconds timeout);
  void WaitLoop();

  std::chrono::milliseconds timeout_;
  // GRID_TIMEOUT_MS, which wins over torch's timeouts where set.
  std::optional<absl::Duration> env_timeout_;
  std::unique_ptr<Communicator> comm_;

  // Operations in submission order, ended by the waiter thread.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Pending>> pending_;
  bool stop_ = false;
  std::thread waiter_;
};

}  // namespace grid::torch_backend

#endif  // GRID_BINDINGS_TORCH_PROCESS_GROUP_H_
