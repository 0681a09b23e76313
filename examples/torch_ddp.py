#!/usr/bin/env python3
"""DDP training of a small model on torch.distributed, with GRID or Gloo.

Run under torchrun, one process per rank:

    PYTHONPATH=build/release/python GRID_STORE=file:/tmp/job/store \\
      torchrun --nproc_per_node=4 examples/torch_ddp.py --backend=grid

With --backend=grid the gradients are allreduced by GRID's switches (the
fabric is found through GRID_STORE, docs/torch.md); with --backend=gloo by
Gloo's ring over TCP. The model, the data and the seed do not depend on the
backend, so two runs can be compared step by step: every rank prints its loss
per step, and rank 0 writes the losses, the final parameters and the step
times to --out (JSON). scripts/torch_ddp.sh runs both on an emulated fabric,
scripts/torch_ddp_netns.sh on shaped links where the network binds.

--model=cnn trains a small convolutional network with BatchNorm instead of
the MLP: DDP then also broadcasts the BatchNorm buffers from rank 0 before
every forward pass (through the grid backend's Gloo fallback).
--no-sync=K runs K micro-batches per step, the first K-1 under DDP's
no_sync() (gradients accumulate locally, one allreduce per step).
--unused gives the model two heads used on alternate steps, so DDP runs
with find_unused_parameters=True and each step reduces a head's zero
gradients along with the rest.
--activation=silu makes the hidden layers smooth: with ReLU, a difference
in the last bit of one gradient can move an activation across the kink and
the parameters by 1e-5 (docs/torch.md, "How close to Gloo"), so two correct
allreduces need not agree that closely.
--fp16-hook registers DDP's fp16 compression hook: each bucket is cast to
float16, divided by the world size and allreduced as float16.
--fp16-hook=exact (gloo) does the same arithmetic with an exact sum, in
float64 rounded once to float16: the reference for the hook's allreduce.
--compile runs the DDP model through torch.compile, --fsdp trains with
FullyShardedDataParallel on the CPU instead of DDP (both torch 2.x).
--time-comm allreduces through a DDP communication hook that does what
DDP's default does (divide by the world size, allreduce) and times each
bucket's allreduce, from the hook's call to its future's completion; the
communication share of a step is the union of those intervals over the
step's time. --tx-interface=IF counts what the host's interface IF sent
per step (the netns fabric's hosts have one, eth0).
"""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def tx_bytes(interface):
    """What `interface` of this process's network namespace has sent."""
    with open("/proc/self/net/dev") as f:
        for line in f:
            name, _, counters = line.partition(":")
            if counters and name.strip() == interface:
                return int(counters.split()[8])
    raise SystemExit(f"--tx-interface: no interface {interface!r} in this network namespace")


def covered(intervals):
    """The time during which at least one of `intervals` was open."""
    total, end = 0.0, None
    for lo, hi in sorted(intervals):
        if end is None or lo > end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


class TwoHeads(nn.Module):
    """A body and two heads, head 0 on even steps and head 1 on odd ones:
    the head not used leaves its parameters out of the step's graph."""

    def __init__(self, body, head):
        super().__init__()
        self.body = body
        self.heads = nn.ModuleList([nn.Linear(*head), nn.Linear(*head)])
        self.step = 0

    def forward(self, x):
        return self.heads[self.step % 2](self.body(x))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["grid", "gloo"], required=True)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hidden", type=int, default=256, help="width of the hidden layers")
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    p.add_argument("--out", help="rank 0 writes losses, parameters and step times here")
    p.add_argument("--timeout-s", type=float, default=120)
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--channels", type=int, default=64,
                   help="cnn: the first layer's channels (each later layer doubles them)")
    p.add_argument("--lr", type=float,
                   help="SGD's learning rate (momentum 0.9): 0.05 for the mlp, 0.01 for the cnn")
    p.add_argument("--activation", choices=["relu", "silu"], default="relu",
                   help="the hidden layers' activation")
    p.add_argument("--no-sync", type=int, default=1, metavar="K",
                   help="micro-batches per step, all but the last under no_sync()")
    p.add_argument("--unused", action="store_true",
                   help="two heads on alternate steps, find_unused_parameters=True")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (torch 2.x)")
    p.add_argument("--fsdp", nargs="?", const="full_shard", choices=["full_shard", "no_shard"],
                   help="FullyShardedDataParallel on the CPU instead of DDP (torch 2.x), "
                        "sharded (the default) or not")
    p.add_argument("--fp16-hook", nargs="?", const="torch", choices=["torch", "exact"],
                   help="DDP's fp16 compression hook: buckets travel as float16; 'exact' "
                        "(gloo only) sums them in float64 and rounds once, the reference")
    p.add_argument("--time-comm", action="store_true",
                   help="time each bucket's allreduce through a comm hook")
    p.add_argument("--tx-interface", help="count the bytes this interface sends per step")
    a = p.parse_args()
    if a.fsdp and (a.time_comm or a.unused or a.fp16_hook):
        p.error("--fsdp: --time-comm, --unused and --fp16-hook are DDP's")
    if a.time_comm and a.fp16_hook:
        p.error("--time-comm and --fp16-hook are both communication hooks")
    if a.fp16_hook == "exact" and a.backend != "gloo":
        p.error("--fp16-hook=exact allreduces float64, which only gloo takes")

    if a.backend == "grid":
        import grid_torch  # noqa: F401  (registers the backend)
    dist.init_process_group(a.backend, timeout=datetime.timedelta(seconds=a.timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)

    act = {"relu": nn.ReLU, "silu": nn.SiLU}[a.activation]
    torch.manual_seed(a.seed)  # the same initial model on every rank and backend
    if a.model == "mlp":
        body = nn.Sequential(nn.Linear(64, a.hidden), act(), nn.Linear(a.hidden, a.hidden),
                             act())
        head = (a.hidden, 10)
        shape = (64,)
    else:
        # 3x16x16 inputs; the three later layers halve the image and double
        # the channels, so most parameters sit where the image is small.
        c = a.channels
        layers, width = [], 3
        for out, stride in ((c, 1), (2 * c, 2), (4 * c, 2), (8 * c, 2)):
            layers += [nn.Conv2d(width, out, 3, stride=stride, padding=1, bias=False),
                       nn.BatchNorm2d(out), act()]
            width = out
        body = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        head = (width, 10)
        shape = (3, 16, 16)
    model = TwoHeads(body, head) if a.unused else nn.Sequential(body, nn.Linear(*head))
    if a.fsdp:
        # Sharded, its gradients go out through reduce_scatter and its
        # parameters come back through all_gather: with the grid backend both
        # run on the Gloo fallback. Not sharded, its gradients are allreduced,
        # through GRID (docs/torch.md).
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import ShardingStrategy
        ddp = FSDP(model, device_id=torch.device("cpu"),
                   sharding_strategy=ShardingStrategy[a.fsdp.upper()])
    else:
        ddp = DDP(model, find_unused_parameters=a.unused)
    # The compiled module runs the steps; no_sync() and the comm hook belong
    # to the wrapper itself.
    net = torch.compile(ddp) if a.compile else ddp
    intervals = []  # (start, end) of each bucket's allreduce
    if a.fp16_hook == "torch":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.fp16_hook == "exact":
        # fp16_compress_hook's arithmetic with an exact sum: each rank's
        # bucket cast to float16 and divided by the world size, the float16
        # values summed in float64 and the sum rounded once to float16.
        def exact_fp16(_, bucket):
            buf = bucket.buffer()
            wide = buf.to(torch.float16).div_(world).double()
            dist.all_reduce(wide)
            buf.copy_(wide.to(torch.float16))
            fut = torch.futures.Future()
            fut.set_result(buf)
            return fut
        ddp.register_comm_hook(None, exact_fp16)
    if a.time_comm:
        def timed_allreduce(_, bucket):
            t0 = time.perf_counter()
            buf = bucket.buffer().div_(world)
            fut = dist.all_reduce(buf, async_op=True).get_future()

            def done(f):
                intervals.append((t0, time.perf_counter()))
                return f.value()[0]
            return fut.then(done)
        ddp.register_comm_hook(None, timed_allreduce)
    # At 0.05 the cnn's training is chaotic: a difference in the last bit
    # of one gradient grows tenfold every two steps (docs/results.md, "DDP
    # on shaped links"), and no two allreduce implementations would agree.
    lr = a.lr if a.lr is not None else (0.05 if a.model == "mlp" else 0.002)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    # Each rank's own data, the same for both backends: a fixed teacher
    # labels Gaussian inputs, the mlp's from all 64 inputs, the cnn's from
    # the image's mean colour (which its pooled features can learn).
    features = shape[0]
    data = torch.Generator().manual_seed(a.seed * 1000 + rank)
    teacher = torch.randn(features, 10, generator=torch.Generator().manual_seed(a.seed))

    warmup = min(5, a.steps - 1)  # steps left out of the means
    losses, times, comm = [], [], []
    sent0 = None
    for step in range(a.steps):
        if step == warmup and a.tx_interface:
            sent0 = tx_bytes(a.tx_interface)
        if a.unused:
            model.step = step
        t0 = time.perf_counter()
        intervals.clear()
        opt.zero_grad()
        for micro in range(a.no_sync):
            x = torch.randn(a.batch, *shape, generator=data)
            y = ((x if a.model == "mlp" else x.mean(dim=(2, 3))) @ teacher).argmax(dim=1)
            if micro < a.no_sync - 1:
                with ddp.no_sync():  # gradients accumulate here, no allreduce
                    loss_fn(net(x), y).backward()
            else:
                loss = loss_fn(net(x), y)
                loss.backward()  # DDP allreduces the accumulated gradients here
        opt.step()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        comm.append(covered(intervals))
        losses.append(loss.item())
        print(f"rank {rank}: step {step} loss {loss.item():.6f}", flush=True)
    sent = (tx_bytes(a.tx_interface) - sent0) / (a.steps - warmup) if sent0 is not None else 0.0

    # Every rank must hold the same parameters. (BatchNorm's statistics are
    # rank 0's from DDP's broadcast, then each rank's own last batch's.)
    if a.fsdp:
        with FSDP.summon_full_params(ddp):
            flat = torch.cat([q.detach().reshape(-1) for q in ddp.parameters()])
    else:
        flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    # Held until the end: under torch 1.13, a tensor whose last reference is
    # Gloo's worker thread can deadlock the exit (docs/torch.md). Each rank
    # adds what its host sent per step.
    mine = torch.stack([flat.double().sum(), flat.double().abs().sum(),
                        torch.tensor(sent, dtype=torch.float64)])
    sums = [torch.zeros(3, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(sums, mine)
    same = all(torch.equal(s[:2], sums[0][:2]) for s in sums)
    step_ms = 1000 * sum(times[warmup:]) / len(times[warmup:])
    comm_share = sum(comm[warmup:]) / sum(times[warmup:])
    print(f"rank {rank}: {a.backend}: {a.steps} steps, {flat.numel()} parameters, "
          f"mean step {step_ms:.2f} ms" +
          (f", communication {100 * comm_share:.0f}% of it" if a.time_comm else "") +
          f", models {'identical' if same else 'DIFFER'} across ranks", flush=True)
    if rank == 0 and a.out:
        grad_bytes = 4 * flat.numel()
        with open(a.out, "w") as f:
            label = a.backend + (f", fp16 hook ({a.fp16_hook})" if a.fp16_hook else "")
            json.dump({"backend": a.backend, "label": label, "world": world, "model": a.model,
                       "losses": losses, "step_ms": step_ms,
                       "comm_share": comm_share if a.time_comm else None,
                       "host_bytes_per_step":
                           sum(float(s[2]) for s in sums) / world if a.tx_interface else None,
                       "gradient_bytes": grad_bytes, "params": flat.tolist(),
                       # rank 0's BatchNorm statistics, from its last batch
                       "buffers": [x for b in model.buffers() if b.is_floating_point()
                                   for x in b.detach().reshape(-1).tolist()]}, f)
    if not same:
        raise SystemExit(f"rank {rank}: the ranks' models differ")
    if a.backend == "gloo" and int(torch.__version__.split(".")[0]) < 2:
        # torch 1.13's DDP can deadlock dropping its ProcessGroupGloo: the
        # reducer joins Gloo's worker threads holding the GIL while one of
        # them frees a tensor that needs it (docs/torch.md). Keeping our own
        # tensors alive does not cover DDP's buckets; leave without teardown.
        print(f"rank {rank}: ok", flush=True)
        sys.stderr.flush()
        os._exit(0)
    del net, ddp
    dist.destroy_process_group()
    del mine
    print(f"rank {rank}: ok", flush=True)


if __name__ == "__main__":
    main()
