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
    p.add_argument("--time-comm", action="store_true",
                   help="time each bucket's allreduce through a comm hook")
    p.add_argument("--tx-interface", help="count the bytes this interface sends per step")
    a = p.parse_args()

    if a.backend == "grid":
        import grid_torch  # noqa: F401  (registers the backend)
    dist.init_process_group(a.backend, timeout=datetime.timedelta(seconds=a.timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)

    torch.manual_seed(a.seed)  # the same initial model on every rank and backend
    if a.model == "mlp":
        model = nn.Sequential(nn.Linear(64, a.hidden), nn.ReLU(), nn.Linear(a.hidden, a.hidden),
                              nn.ReLU(), nn.Linear(a.hidden, 10))
        shape = (64,)
    else:
        # 3x16x16 inputs; the three later layers halve the image and double
        # the channels, so most parameters sit where the image is small.
        c = a.channels
        layers, width = [], 3
        for out, stride in ((c, 1), (2 * c, 2), (4 * c, 2), (8 * c, 2)):
            layers += [nn.Conv2d(width, out, 3, stride=stride, padding=1, bias=False),
                       nn.BatchNorm2d(out), nn.ReLU()]
            width = out
        model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(width, 10))
        shape = (3, 16, 16)
    ddp = DDP(model)
    intervals = []  # (start, end) of each bucket's allreduce
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
        x = torch.randn(a.batch, *shape, generator=data)
        y = ((x if a.model == "mlp" else x.mean(dim=(2, 3))) @ teacher).argmax(dim=1)
        t0 = time.perf_counter()
        intervals.clear()
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()  # DDP allreduces the gradients here
        opt.step()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        comm.append(covered(intervals))
        losses.append(loss.item())
        print(f"rank {rank}: step {step} loss {loss.item():.6f}", flush=True)
    sent = (tx_bytes(a.tx_interface) - sent0) / (a.steps - warmup) if sent0 is not None else 0.0

    # Every rank must hold the same parameters. (BatchNorm's statistics are
    # rank 0's from DDP's broadcast, then each rank's own last batch's.)
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
        grad_bytes = 4 * sum(q.numel() for q in model.parameters())
        with open(a.out, "w") as f:
            json.dump({"backend": a.backend, "world": world, "model": a.model,
                       "losses": losses, "step_ms": step_ms,
                       "comm_share": comm_share if a.time_comm else None,
                       "host_bytes_per_step":
                           sum(float(s[2]) for s in sums) / world if a.tx_interface else None,
                       "gradient_bytes": grad_bytes, "params": flat.tolist(),
                       # rank 0's BatchNorm statistics, from its last batch
                       "buffers": [x for b in model.buffers() if b.is_floating_point()
                                   for x in b.detach().reshape(-1).tolist()]}, f)
    del ddp
    dist.destroy_process_group()
    del mine
    if not same:
        raise SystemExit(f"rank {rank}: the ranks' models differ")
    print(f"rank {rank}: ok", flush=True)


if __name__ == "__main__":
    main()
