"""Compares two runs of examples/torch_ddp.py (their --out files): the
per-step losses and the final parameters must agree within GRID's numerics
bound, a relative error of at most 1e-4 (docs/torch.md).

    compare_ddp.py GRID.json GLOO.json"""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
bound = 1e-4
assert len(a["losses"]) == len(b["losses"]) and len(a["params"]) == len(b["params"])
loss_err = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a["losses"], b["losses"]))
scale = max(abs(y) for y in b["params"])
param_err = max(abs(x - y) for x, y in zip(a["params"], b["params"])) / scale
print(f"{a['backend']} against {b['backend']}: {len(a['losses'])} steps, "
      f"{len(a['params'])} parameters; largest loss error {loss_err:.3g}, "
      f"parameter error {param_err:.3g} (relative to the largest parameter); "
      f"mean step {a['step_ms']:.2f} ms against {b['step_ms']:.2f} ms")
if loss_err > bound or param_err > bound:
    sys.exit(f"FAIL: beyond the bound {bound}")
