#include "process_group.h"

#include <ATen/Context.h>
#include <ATen/core/ivalue.h>
#include <Python.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grid/options.h"
#include "grid/store.h"
#include "grid/types.h"
#include "store_adapter.h"

namespace grid::torch_backend {

// The handle torch gets: ended by the waiter thread, after the results are
// in the caller's tensors. Its future carries the tensors, as DDP's comm
// hooks expect.
class GridWork final : public c10d::Work {
 public:
  explicit GridWork(std::vector<at::Tensor> outputs)
      : c10d::Work(-1, c10d::OpType::ALLREDUCE),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<at::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {}

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  void End(std::exception_ptr error) {
    finish(error);
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
  }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<at::ivalue::Future> future_;
};

struct ProcessGroupGrid::Pending {
  c10::intrusive_ptr<GridWork> work;
  std::string what;  // "allreduce of 2 tensors", for errors
  std::vector<grid::Work> handles;
  absl::Status submit_error;
  // (the caller's tensor, the contiguous host copy that was reduced)
  std::vector<std::pair<at::Tensor, at::Tensor>> copy_back;
  absl::Duration timeout;
};

namespace {

// The dtype as Python names it (torch.float64 is "float64"). torch's own
// table (torch::utils::getDtypeNames) is not exported from every build.
std::string DtypeName(at::ScalarType t) {
  switch (t) {
    case at::kDouble:
      return "float64";
    case at::kLong:
      return "int64";
    case at::kShort:
      return "int16";
    case at::kChar:
      return "int8";
    case at::kByte:
      return "uint8";
    case at::kBool:
      return "bool";
    case at::kComplexFloat:
      return "complex64";
    case at::kComplexDouble:
      return "complex128";
    default:
      return c10::toString(t);
  }
}

absl::StatusOr<DataType> GridType(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DataType::kFloat32;
    case at::kBFloat16:
      return DataType::kBFloat16;
    case at::kHalf:
      return DataType::kFloat16;
    case at::kInt:
      return DataType::kInt32;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("dtype %s is not supported: the switches add float32, bfloat16, "
                          "float16 and int32",
                          DtypeName(t)));
  }
}

const char* OpName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "an unknown op";
  }
}

// The options of Communicator::FromEnvironment, with torch's rank, size and
// store: the fabric's configs are read from GRID_STORE (a grid-controller
// filled it), and what the ranks write for each other goes through c10d.
// Rank 0 as the controller (GRID_TOPOLOGY) is refused: it would publish the
// switches' tables into torch's store, where grid-switch cannot read them.
absl::StatusOr<CommunicatorOptions> GridOptions(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int size) {
  CommunicatorOptions base;
  base.bootstrap.rank = rank;
  base.bootstrap.world_size = size;
  auto o = Communicator::OptionsFromEnvironment(std::move(base));
  if (!o.ok()) return o.status();
  if (o->bootstrap.rank != rank || o->bootstrap.world_size != size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the environment says rank %d of %d (GRID_RANK, RANK, ...) and torch says rank %d of %d",
        o->bootstrap.rank, o->bootstrap.world_size, rank, size));
  }
  const char* fabric = std::getenv("GRID_STORE");
  if (fabric == nullptr || *fabric == '\0') {
    return absl::FailedPreconditionError(
        "GRID_STORE is not set: it names the store where grid-controller published the job "
        "(docs/torch.md)");
  }
  if (!o->control.topology.empty()) {
    return absl::InvalidArgumentError(
        "GRID_TOPOLOGY is set: under torch, a grid-controller plans the job, not rank 0 "
        "(docs/torch.md)");
  }
  const std::string fabric_spec = fabric;
  o->bootstrap.store.clear();
  o->bootstrap.open_store = [store, fabric_spec]() -> absl::StatusOr<std::unique_ptr<Store>> {
    auto f = OpenStore(fabric_spec);
    if (!f.ok()) return f.status();
    return std::unique_ptr<Store>(
        std::make_unique<OverlayStore>(std::make_unique<C10dStore>(store), *std::move(f)));
  };
  return o;
}

}  // namespace

ProcessGroupGrid::ProcessGroupGrid(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout,
                                   c10::intrusive_ptr<BackendBase> fallback)
    : VersionedBackend(rank, size, std::move(fallback)), timeout_(timeout) {
  TORCH_CHECK(fallback_, ErrorPrefix(rank), "no fallback process group");
  auto options = GridOptions(store, rank, size);
  if (!options.ok()) throw std::runtime_error(ErrorPrefix(rank) + options.status().ToString());
  // GRID_TIMEOUT_MS, where set, is GRID's timeout for every operation, the
  // fence included (OptionsFromEnvironment read it): a person sets it to
  // shorten GRID's waits below torch's (30 min by default), which also bound
  // the Gloo fallback's collectives. Otherwise torch's timeout is GRID's.
  if (std::getenv("GRID_TIMEOUT_MS") != nullptr) {
    env_timeout_ = options->engine.timeout;
  } else {
    options->engine.timeout = absl::FromChrono(timeout);
  }
  auto comm = Communicator::Create(*std::move(options));
  if (!comm.ok()) throw std::runtime_error(ErrorPrefix(rank) + comm.status().ToString());
  comm_ = *std::move(comm);
  waiter_ = std::thread([this] { WaitLoop(); });
  init();
}

ProcessGroupGrid::~ProcessGroupGrid() {
  // Python drops the last reference with the GIL held (destroy_process_group,
  // or DDP's reducer at exit). The threads joined here, the waiter's and the
  // Gloo fallback's, may be freeing a tensor that still has a Python object,
  // which takes the GIL: teardown runs without it, or it deadlocks (as
  // torch 1.13's own ProcessGroupGloo under DDP does at exit).
  PyThreadState* saved = nullptr;
  if (Py_IsInitialized() && PyGILState_Check()) saved = PyEval_SaveThread();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (waiter_.joinable()) waiter_.join();
  fallback_.reset();
  if (comm_) (void)comm_->Shutdown();
  if (saved != nullptr) PyEval_RestoreThread(saved);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  // c10d's allreduce of several tensors (one per device) sums them all into
  // each, as Gloo does; reducing each on its own would answer that call
  // with other values.
  if (tensors.size() > 1) {
    throw std::invalid_argument(absl::StrFormat(
        "%sallreduce of %d tensors: the grid backend takes one tensor per allreduce (c10d sums "
        "a list together, one tensor per device); all_reduce_coalesced reduces tensors each on "
        "its own",
        ErrorPrefix(rank_), tensors.size()));
  }
  return AllReduceOnGrid("allreduce", tensors, opts.reduceOp, opts.timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  return AllReduceOnGrid("allreduce_coalesced", tensors, opts.reduceOp, opts.timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::AllReduceOnGrid(
    const char* op, std::vector<at::Tensor>& tensors, c10d::ReduceOp reduce_op,
    std::chrono::milliseconds timeout) {
  const std::string what =
      absl::StrFormat("%s of %d tensor%s", op, tensors.size(), tensors.size() == 1 ? "" : "s");
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument(ErrorPrefix(rank_) + what + ": " + why);
  };
  const auto red = static_cast<c10d::ReduceOp::RedOpType>(reduce_op);
  if (red != c10d::ReduceOp::SUM && red != c10d::ReduceOp::AVG) {
    fail(absl::StrFormat("ReduceOp %s is not supported: the switches add (SUM, AVG)", OpName(red)));
  }
  // Everything is checked before anything is sent: every rank must issue
  // the same operations, so a call either goes whole or not at all.
  auto pending = std::make_unique<Pending>();
  pending->what = what;
  pending->timeout = env_timeout_.has_value()
                         ? *env_timeout_
                         : absl::FromChrono(timeout == c10d::kUnsetTimeout ? timeout_ : timeout);
  std::vector<std::pair<at::Tensor, DataType>> reduced;  // contiguous, on the host
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    auto type = GridType(t.scalar_type());
    if (!type.ok()) fail(absl::StrFormat("tensor %d: %s", i, type.status().message()));
    if (t.layout() != at::kStrided) fail(absl::StrFormat("tensor %d is sparse", i));
    at::Tensor host = t;
    if (t.is_cuda()) {
      host = t.to(at::kCPU).contiguous();  // staged through host memory
    } else if (!t.is_cpu()) {
      fail(absl::StrFormat(
          "tensor %d is on device %s: the grid backend takes CPU tensors, and CUDA ones staged "
          "through host memory",
          i, t.device().str()));
    } else if (!t.is_contiguous()) {
      host = t.contiguous();
    }
    if (!host.is_same(t)) pending->copy_back.emplace_back(t, host);
    reduced.emplace_back(host, *type);
  }
  // The library refuses an operation whose memory another of the group
  // uses (they run at once); checked here first, so the call goes whole or
  // not at all. A tensor given twice, or views that overlap, land here.
  for (size_t i = 0; i < reduced.size(); ++i) {
    const auto* a = static_cast<const uint8_t*>(reduced[i].first.data_ptr());
    const size_t na = reduced[i].first.nbytes();
    for (size_t j = 0; j < i; ++j) {
      const auto* b = static_cast<const uint8_t*>(reduced[j].first.data_ptr());
      const size_t nb = reduced[j].first.nbytes();
      if (na > 0 && nb > 0 && a < b + nb && b < a + na) {
        fail(absl::StrFormat("tensors %d and %d share memory; each is reduced in place, at once", j,
                             i));
      }
    }
  }
  pending->work = c10::make_intrusive<GridWork>(tensors);
  c10::intrusive_ptr<c10d::Work> handle = pending->work;
  AllreduceOptions grid_opts;
  grid_opts.average = red == c10d::ReduceOp::AVG;
  grid_opts.timeout = pending->timeout;
  if (absl::Status s = comm_->GroupStart(); !s.ok()) {
    pending->submit_error = s;
  } else {
    for (auto& [host, type] : reduced) {
      if (host.numel() == 0) continue;
      auto w =
          comm_->AllReduceAsync(host.data_ptr(), host.data_ptr(), static_cast<size_t>(host.numel()),
                                type, ReduceOp::kSum, grid_opts);
      if (!w.ok()) {
        pending->submit_error = w.status();
        break;
      }
      pending->handles.push_back(*std::move(w));
    }
    if (absl::Status end = comm_->GroupEnd(); !end.ok() && pending->submit_error.ok()) {
      pending->submit_error = end;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(pending));
  }
  cv_.notify_all();
  return handle;
}

void ProcessGroupGrid::WaitLoop() {
  for (;;) {
    std::unique_ptr<Pending> p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, nothing left
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    absl::Status status = p->submit_error;
    // Each operation ends by its own timeout; the margin only bounds this
    // wait should the engine not end it.
    for (const grid::Work& h : p->handles) {
      absl::Status s = h.Wait(p->timeout + absl::Seconds(10));
      if (absl::IsDeadlineExceeded(s) && !h.Test()) {
        // The engine did not end it: abort, so that nothing writes into
        // the buffers freed below.
        comm_->Abort(absl::AbortedError(
            absl::StrFormat("rank %d: %s did not end within its timeout", rank_, p->what)));
        (void)h.Wait(absl::Seconds(10));
      }
      if (status.ok()) status = s;
    }
    std::exception_ptr error;
    if (status.ok()) {
      try {
        for (auto& [user, host] : p->copy_back) user.copy_(host);
      } catch (const std::exception& e) {
        status = absl::InternalError(absl::StrCat("copying the results back: ", e.what()));
      }
    }
    if (!status.ok()) {
      error = std::make_exception_ptr(
          std::runtime_error(ErrorPrefix(rank_) + p->what + ": " + status.ToString()));
    }
    p->work->End(error);
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  return Forward("broadcast", [&] { return fallback_->broadcast(tensors, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  return Forward("reduce", [&] { return fallback_->reduce(tensors, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  return Forward("allgather", [&] { return fallback_->allgather(outputs, inputs, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  return Forward("_allgather_base",
                 [&] { return fallback_->_allgather_base(output, input, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  return Forward("allgather_coalesced",
                 [&] { return fallback_->allgather_coalesced(outputs, inputs, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  return Forward("gather", [&] { return fallback_->gather(outputs, inputs, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  return Forward("scatter", [&] { return fallback_->scatter(outputs, inputs, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  return Forward("reduce_scatter",
                 [&] { return fallback_->reduce_scatter(outputs, inputs, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  return Forward("_reduce_scatter_base",
                 [&] { return fallback_->_reduce_scatter_base(output, input, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) {
  return Forward("alltoall_base", [&] {
    return fallback_->alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  return Forward("alltoall", [&] { return fallback_->alltoall(outputs, inputs, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::send(std::vector<at::Tensor>& tensors,
                                                      int dst_rank, int tag) {
  return Forward("send", [&] { return fallback_->send(tensors, dst_rank, tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::recv(std::vector<at::Tensor>& tensors,
                                                      int src_rank, int tag) {
  return Forward("recv", [&] { return fallback_->recv(tensors, src_rank, tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::recvAnysource(std::vector<at::Tensor>& tensors,
                                                               int tag) {
  return Forward("recv (any source)", [&] { return fallback_->recvAnysource(tensors, tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGrid::barrier(const c10d::BarrierOptions& opts) {
  return Forward("barrier", [&] { return fallback_->barrier(opts); });
}

void ProcessGroupGrid::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  Forward("monitored_barrier", [&] { fallback_->monitoredBarrier(opts, wait_all_ranks); });
}

void ProcessGroupGrid::setSequenceNumberForGroup() {
  Forward("sequence numbers", [&] { fallback_->setSequenceNumberForGroup(); });
}

uint64_t ProcessGroupGrid::getSequenceNumberForGroup() {
  return Forward("sequence numbers", [&] { return fallback_->getSequenceNumberForGroup(); });
}

std::map<std::string, double> ProcessGroupGrid::Stats() const {
  const CommunicatorStats s = comm_->stats();
  return {
      {"operations", static_cast<double>(s.operations)},
      {"fused_operations", static_cast<double>(s.fused_operations)},
      {"packets_sent", static_cast<double>(s.packets_sent)},
      {"packets_received", static_cast<double>(s.packets_received)},
      {"bytes_sent", static_cast<double>(s.bytes_sent)},
      {"bytes_received", static_cast<double>(s.bytes_received)},
      {"retransmissions", static_cast<double>(s.retransmissions)},
      {"timeouts", static_cast<double>(s.timeouts)},
      {"congestion_signals", static_cast<double>(s.congestion_signals)},
      {"collisions", static_cast<double>(s.collisions)},
      {"duplicate_results", static_cast<double>(s.duplicate_results)},
      {"malformed", static_cast<double>(s.malformed)},
      {"foreign", static_cast<double>(s.foreign)},
      {"operation_seconds", absl::ToDoubleSeconds(s.operation_time)},
      {"min_rtt_seconds", absl::ToDoubleSeconds(s.min_rtt)},
  };
}

}  // namespace grid::torch_backend
