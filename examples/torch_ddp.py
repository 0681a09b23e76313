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
times to --out (JSON). scripts/torch_ddp.sh runs both on an emulated fabric.
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["grid", "gloo"], required=True)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hidden", type=int, default=256, help="width of the hidden layers")
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    p.add_argument("--out", help="rank 0 writes losses, parameters and step times here")
    p.add_argument("--timeout-s", type=float, default=120)
    a = p.parse_args()

    if a.backend == "grid":
        import grid_torch  # noqa: F401  (registers the backend)
    dist.init_process_group(a.backend, timeout=datetime.timedelta(seconds=a.timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)

    torch.manual_seed(a.seed)  # the same initial model on every rank and backend
    model = nn.Sequential(nn.Linear(64, a.hidden), nn.ReLU(), nn.Linear(a.hidden, a.hidden),
                          nn.ReLU(), nn.Linear(a.hidden, 10))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    # Each rank's own data, the same for both backends: a fixed teacher
    # labels Gaussian inputs.
    data = torch.Generator().manual_seed(a.seed * 1000 + rank)
    teacher = torch.randn(64, 10, generator=torch.Generator().manual_seed(a.seed))

    losses, times = [], []
    for step in range(a.steps):
        x = torch.randn(a.batch, 64, generator=data)
        y = (x @ teacher).argmax(dim=1)
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()  # DDP allreduces the gradients here
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
        print(f"rank {rank}: step {step} loss {loss.item():.6f}", flush=True)

    # Every rank must hold the same model.
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    sums = [torch.zeros(2, dtype=torch.float64) for _ in range(world)]
    # Held until the end: under torch 1.13, a tensor whose last reference is
    # Gloo's worker thread can deadlock the exit (docs/torch.md).
    mine = torch.stack([flat.double().sum(), flat.double().abs().sum()])
    dist.all_gather(sums, mine)
    same = all(torch.equal(s, sums[0]) for s in sums)
    warm = times[min(5, len(times) - 1):]
    step_ms = 1000 * sum(warm) / len(warm)
    print(f"rank {rank}: {a.backend}: {a.steps} steps, {flat.numel()} parameters, "
          f"mean step {step_ms:.2f} ms, models {'identical' if same else 'DIFFER'} across ranks",
          flush=True)
    if rank == 0 and a.out:
        with open(a.out, "w") as f:
            json.dump({"backend": a.backend, "world": world, "losses": losses,
                       "step_ms": step_ms, "params": flat.tolist()}, f)
    del ddp
    dist.destroy_process_group()
    del mine
    if not same:
        raise SystemExit(f"rank {rank}: the ranks' models differ")
    print(f"rank {rank}: ok", flush=True)


if __name__ == "__main__":
    main()
