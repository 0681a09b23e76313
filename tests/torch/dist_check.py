"""torch.distributed called directly on the "grid" backend, as one rank of a
job started by torchrun (tests/torch/torch_test.sh): allreduce of every
supported dtype, SUM and AVG, a list of tensors, async wait and futures,
the Gloo fallback's broadcast, allgather and barrier, what must raise, and
that GRID_TIMEOUT_MS wins over torch's timeout. Prints "rank R: ok" when every check held.

The same file runs on torch 1.13 (Debian 12) and 2.x (Debian 13): where the
two differ (what torch's Gloo can do, where a backend's store sits) the
check says which torch it expects what of."""
import datetime
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist

# Importing registers the backend: on torch 2.x that names its devices, so
# torch has nothing to warn about.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import grid_torch
TORCH2 = int(torch.__version__.split(".")[0]) >= 2

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
dist.init_process_group("grid", timeout=datetime.timedelta(seconds=60))
assert dist.get_backend() == "grid", dist.get_backend()
assert dist.get_rank() == rank and dist.get_world_size() == world

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"rank {rank}: FAILED {what}", flush=True)


check(not caught, f"import grid_torch warned: {[str(w.message) for w in caught]}")
check(grid_torch.backend().name() == "grid" if TORCH2 else True, "the backend's name")


def ramp(n, dtype, scale=1.0):
    # Distinct per rank and element, exact in every dtype checked.
    x = torch.arange(n, dtype=torch.float64) % 97 + rank * 3
    return (x * scale).to(dtype)


def expected(n, dtype, scale=1.0):
    return sum(ramp(n, torch.float64, scale) + 3 * (r - rank) * scale for r in range(world))


n = 5000
# Every supported dtype, SUM; values whose sums the dtype holds exactly.
for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32):
    t = ramp(n, dtype, 0.25 if dtype.is_floating_point else 1.0)
    dist.all_reduce(t)
    want = expected(n, dtype, 0.25 if dtype.is_floating_point else 1.0)
    check(torch.equal(t.to(torch.float64), want), f"all_reduce SUM {dtype}")

# AVG.
t = ramp(n, torch.float32)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
check(torch.allclose(t.double(), expected(n, torch.float32) / world, rtol=1e-6), "all_reduce AVG")

# A list of tensors in one call (one group on GRID), of two dtypes and a
# non-contiguous one.
a = ramp(3000, torch.float32)
b = ramp(70, torch.int32)
c = ramp(4000, torch.float32).view(40, 100).t()  # not contiguous
dist.distributed_c10d._get_default_group().allreduce_coalesced([a, b, c]).wait()
check(torch.equal(a.double(), expected(3000, torch.float32)), "list: tensor 0")
check(torch.equal(b.double(), expected(70, torch.int32)), "list: tensor 1")
check(torch.equal(c.double(), expected(4000, torch.float32).view(40, 100).t()),
      "list: non-contiguous tensor")

# Async: several in flight, then wait; and a future.
ts = [ramp(2000 + i, torch.float32) for i in range(4)]
works = [dist.all_reduce(t, async_op=True) for t in ts]
for w in works:
    w.wait()
for i, t in enumerate(ts):
    check(torch.equal(t.double(), expected(2000 + i, torch.float32)), f"async {i}")
t = ramp(1000, torch.float32)
fut = dist.all_reduce(t, async_op=True).get_future()
doubled = fut.then(lambda f: f.value()[0] * 2).wait()
check(torch.equal(doubled.double(), 2 * expected(1000, torch.float32)), "future")

# The Gloo fallback.
t = torch.full((10,), float(rank))
dist.broadcast(t, src=2)
check(torch.equal(t, torch.full((10,), 2.0)), "broadcast")
out = [torch.zeros(3) for _ in range(world)]
dist.all_gather(out, torch.full((3,), float(rank)))
check(all(torch.equal(o, torch.full((3,), float(r))) for r, o in enumerate(out)), "all_gather")
dist.barrier()


def raises(f, *needles):
    try:
        f()
    except Exception as e:  # what torch raises, whatever its class
        msg = str(e)
        return all(s in msg for s in needles) or print(f"rank {rank}: message: {msg}")
    return False


# What GRID cannot do raises, naming the rank and the operation.
check(raises(lambda: dist.all_reduce(torch.ones(4, dtype=torch.float64)),
             f"rank {rank}", "allreduce", "float64"), "float64 raises")
check(raises(lambda: dist.all_reduce(torch.ones(4), op=dist.ReduceOp.MAX),
             f"rank {rank}", "allreduce", "MAX"), "MAX raises")
# c10d's allreduce of a list sums the list too (one tensor per device):
# GRID takes one tensor there. Tensors that share memory in one coalesced
# call would be reduced at once: refused before anything is sent.
check(raises(lambda: dist.distributed_c10d._get_default_group().allreduce(
    [torch.ones(4), torch.ones(4)]), f"rank {rank}", "takes one tensor"), "allreduce of a list raises")
z = torch.ones(100)
check(raises(lambda: dist.all_reduce_coalesced([z, z]), "share memory"), "a tensor twice raises")
v = torch.ones(300)
check(raises(lambda: dist.all_reduce_coalesced([v[0:200], v[100:300]]), "share memory"),
      "overlapping views raise")
check(torch.equal(z, torch.ones(100)) and torch.equal(v, torch.ones(300)), "refused calls sent nothing")
t = torch.full((10,), 1.0)
dist.all_reduce(t)
check(torch.equal(t, torch.full((10,), float(world))), "after the refused calls")
# An op neither GRID nor torch's Gloo has (list all_to_all): raised where
# Gloo raises it, naming the backend's fallback.
check(raises(lambda: dist.all_to_all([torch.zeros(1)] * world, [torch.ones(1)] * world),
             f"rank {rank}", "alltoall", "Gloo"), "all_to_all raises")
# all_to_all_single: Gloo's on both torches. Rank r sends j*10+r to rank j.
out = torch.zeros(world)
dist.all_to_all_single(out, torch.tensor([float(j * 10 + rank) for j in range(world)]))
check(torch.equal(out, torch.tensor([float(rank * 10 + j) for j in range(world)])), "all_to_all_single")
# What torch 2.x's Gloo added, through the fallback: results there, and on
# 1.13 the fallback's error, naming it.
gathered = torch.zeros(world * 2)
into_tensor = lambda: dist.all_gather_into_tensor(gathered, torch.full((2,), float(rank)))
scattered = torch.zeros(2)
rs_input = torch.arange(world * 2, dtype=torch.float32) + rank
reduce_scatter = lambda: dist.reduce_scatter_tensor(scattered, rs_input)
if TORCH2:
    into_tensor()
    check(torch.equal(gathered, torch.arange(world).float().repeat_interleave(2)),
          "all_gather_into_tensor")
    reduce_scatter()
    want = world * (torch.arange(2 * rank, 2 * rank + 2).float()) + sum(range(world))
    check(torch.equal(scattered, want), f"reduce_scatter_tensor: {scattered} {want}")
else:
    check(raises(into_tensor, f"rank {rank}", "Gloo"), "all_gather_into_tensor raises (1.13)")
    check(raises(reduce_scatter, f"rank {rank}", "Gloo"), "reduce_scatter_tensor raises (1.13)")
check(raises(lambda: dist.new_group(), "only the default process group"), "subgroup raises")
# Subgroups on Gloo work beside the grid world: ranks 0 and 1 sum there,
# and the others are not in it.
pair = dist.new_group(ranks=[0, 1], backend="gloo")
if rank in (0, 1):
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t, group=pair)
    check(torch.equal(t, torch.full((5,), 3.0)), "all_reduce in a gloo subgroup")
t = ramp(100, torch.float32)
dist.all_reduce(t)
check(torch.equal(t.double(), expected(100, torch.float32)), "grid after a subgroup")

# GRID's ranks met through torch's store, not a store of their own: every
# rank's heartbeat is there, under the backend's prefix "grid" in the store
# torch gives it (on 1.13 the default group's "0"; on 2.x the group's store
# again prefixed with the device, "cpu/").
group_store = dist.distributed_c10d._get_default_store()
ours = dist.PrefixStore("grid", dist.PrefixStore("cpu/", group_store) if TORCH2
                        else dist.PrefixStore("0", group_store))
try:
    ours.wait([f"grid/heartbeat/{r}" for r in range(world)], datetime.timedelta(seconds=5))
    check(all(len(ours.get(f"grid/heartbeat/{r}")) > 0 for r in range(world)),
          "heartbeats in torch's store")
except RuntimeError as e:
    check(False, f"heartbeats in torch's store: {e}")

# After the errors, the job still works.
t = ramp(n, torch.float32)
dist.all_reduce(t)
check(torch.equal(t.double(), expected(n, torch.float32)), "all_reduce after errors")

s = grid_torch.stats()
check(s["operations"] >= 10, f"stats: {s}")
check(0 < s["min_rtt_seconds"] < s["operation_seconds"], f"stats: min_rtt_seconds {s}")
print(f"rank {rank}: stats {s}", flush=True)

# GRID_TIMEOUT_MS (torch_test.sh sets 5000) wins over the process group's
# timeout (60 s above): an allreduce that the last rank never joins ends
# within it on the others, naming that rank. Last: it ends the communicator.
if os.environ.get("GRID_TIMEOUT_MS") and rank != world - 1:
    start = time.monotonic()
    ended = raises(lambda: dist.all_reduce(torch.ones(10)), "timed out", f"{world - 1}")
    took = time.monotonic() - start
    check(ended and took < 20, f"GRID_TIMEOUT_MS: the allreduce rank {world - 1} skipped "
          f"ended after {took:.1f} s")
    print(f"rank {rank}: GRID_TIMEOUT_MS={os.environ['GRID_TIMEOUT_MS']}: an allreduce a rank "
          f"skipped ended after {took:.1f} s (the process group's timeout: 60 s)", flush=True)
dist.destroy_process_group()
if failures:
    print(f"rank {rank}: {len(failures)} checks failed: {failures}", flush=True)
    sys.exit(1)
print(f"rank {rank}: ok", flush=True)
