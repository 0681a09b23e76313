"""GRID as a torch.distributed backend.

    import grid_torch  # registers the backend "grid"
    torch.distributed.init_process_group("grid")

allreduce (SUM, AVG of float32, bfloat16, float16 and int32 tensors) runs
through GRID's switches; every other collective goes to a Gloo process group
built on the same store. The fabric (switches, root, the job's configs) is
found as grid::Communicator::FromEnvironment finds it: GRID_STORE names the
store a grid-controller filled. See docs/torch.md.
"""

import torch.distributed as dist

from ._grid_torch import ProcessGroupGrid

__all__ = ["ProcessGroupGrid", "stats"]


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


def stats(group=None):
    """The GRID communicator's counters of `group` (default: the world)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupGrid):
        raise TypeError(f"{type(pg).__name__} is not a grid process group")
    return pg.stats()


dist.Backend.register_backend("grid", _create)
