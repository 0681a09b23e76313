"""Compares two runs of examples/torch_ddp.py (their --out files): the
per-step losses and the final parameters must agree within a relative error
of `bound` (1e-5 unless given; docs/torch.md, "How close to Gloo").

    compare_ddp.py GRID.json GLOO.json [BOUND]"""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
bound = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
assert len(a["losses"]) == len(b["losses"]) and len(a["params"]) == len(b["params"])
loss_err = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a["losses"], b["losses"]))
scale = max(abs(y) for y in b["params"])
param_err = max(abs(x - y) for x, y in zip(a["params"], b["params"])) / scale
# BatchNorm's running statistics (examples/torch_ddp.py --model=cnn) are
# rank 0's last batch's: the spread of 8 samples' activations magnifies the
# parameters' error. Reported, relative to the largest statistic, not bounded.
buffers = ""
if a.get("buffers") and b.get("buffers"):
    assert len(a["buffers"]) == len(b["buffers"])
    top = max(abs(y) for y in b["buffers"])
    err = max(abs(x - y) for x, y in zip(a["buffers"], b["buffers"])) / max(top, 1e-12)
    buffers = f", buffer error {err:.3g} (relative to the largest statistic, not bounded)"
print(f"{a.get('label', a['backend'])} against {b.get('label', b['backend'])}: {len(a['losses'])} steps, "
      f"{len(a['params'])} parameters; largest loss error {loss_err:.3g}, "
      f"parameter error {param_err:.3g} (relative to the largest parameter){buffers}; "
      f"mean step {a['step_ms']:.2f} ms against {b['step_ms']:.2f} ms")
if loss_err > bound or param_err > bound:
    sys.exit(f"FAIL: beyond the bound {bound}")
