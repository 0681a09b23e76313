"""GRID as a torch.distributed backend.

    import grid_torch  # registers the backend "grid"
    torch.distributed.init_process_group("grid")

allreduce (SUM, AVG of float32, bfloat16, float16 and int32 tensors) runs
through GRID's switches; every other collective goes to a Gloo process group
built on the same store. The fabric (switches, root, the job's configs) is
found as grid::Communicator::FromEnvironment finds it: GRID_STORE names the
store a grid-controller filled. See docs/torch.md.

One source serves torch 1.13 (the backend is a ProcessGroup) and torch 2.1
and later (a Backend that torch's ProcessGroup holds for the CPU).
"""

import inspect

import torch
import torch.distributed as dist

from ._grid_torch import ProcessGroupGrid


def _version(v):
    major, minor = v.split("+")[0].split(".")[:2]
    return int(major) * 100 + int(minor)


if _version(torch.__version__) != ProcessGroupGrid.torch_version:
    raise ImportError(
        f"grid_torch was built against torch {ProcessGroupGrid.torch_version // 100}."
        f"{ProcessGroupGrid.torch_version % 100} and this Python runs torch "
        f"{torch.__version__}: build it against this torch (docs/torch.md)")

__all__ = ["ProcessGroupGrid", "backend", "stats"]


def _create(store, rank, size, timeout):
    # The fabric has one config per rank of the job, so the one group GRID
    # can serve is the world, once.
    if dist.is_initialized():
        raise ValueError(
            f"grid backend, rank {rank}: only the default process group can use "
            "GRID (its fabric is configured for the world's ranks); create "
            "subgroups with backend='gloo'")
    fallback = dist.ProcessGroupGloo(dist.PrefixStore("grid-gloo", store), rank, size, timeout)
    return ProcessGroupGrid(dist.PrefixStore("grid", store), rank, size, timeout, fallback)


def backend(group=None):
    """The ProcessGroupGrid of `group` (default: the world). On torch 2.x a
    process group holds it as its CPU backend; on 1.13 it is the group."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupGrid) and hasattr(pg, "_get_backend"):
        try:
            pg = pg._get_backend(torch.device("cpu"))
        except RuntimeError:
            pass
    if not isinstance(pg, ProcessGroupGrid):
        raise TypeError(f"{type(pg).__name__} is not a grid process group")
    return pg


def stats(group=None):
    """The GRID communicator's counters of `group` (default: the world)."""
    return backend(group).stats()


# torch 2.x asks which devices a backend serves, and warns where it is not
# told: GRID reduces CPU tensors (docs/torch.md, "Devices").
if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
    dist.Backend.register_backend("grid", _create, devices=["cpu"])
else:
    dist.Backend.register_backend("grid", _create)
