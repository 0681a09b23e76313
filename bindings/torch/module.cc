// The Python module grid_torch._grid_torch: ProcessGroupGrid, a subclass of
// torch's Backend (torch 2.x) or ProcessGroup (torch 1.13), which
// grid_torch/__init__.py registers as "grid".
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.h"

namespace py = pybind11;
using grid::torch_backend::BackendBase;
using grid::torch_backend::ProcessGroupGrid;

PYBIND11_MODULE(_grid_torch, m) {
  // Backend (or ProcessGroup) and Store are bound there; ours derives from
  // theirs.
  py::module_::import("torch.distributed");
  py::class_<ProcessGroupGrid, BackendBase, c10::intrusive_ptr<ProcessGroupGrid>>(
      m, "ProcessGroupGrid",
      "torch.distributed's backend \"grid\": allreduce through GRID's switches, every other "
      "collective through `fallback` (docs/torch.md).")
      .def(py::init<const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds,
                    c10::intrusive_ptr<BackendBase>>(),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::arg("fallback"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly_static(
          "torch_version", [](const py::object&) { return GRID_TORCH_VERSION; },
          "The torch this module was built against, as MAJOR * 100 + MINOR.")
      .def("stats", &ProcessGroupGrid::Stats,
           "The communicator's counters (grid::CommunicatorStats) as a dict.")
      .def_property_readonly("fallback", &ProcessGroupGrid::fallback,
                             "The Gloo process group that every collective but allreduce uses.");
}
