"""sync-in-loop: the loss is read with .item() every step for logging, which waits for the GPU; the
host then prepares the next batch (1 ms of CPU work) while the GPU idles.
--fixed: losses are accumulated on the GPU and read once, after the loop."""

import torch
from _common import device, loop, parse, prepare_next_batch

args = parse(__doc__)
dtype = torch.bfloat16 if device() == "cuda" else torch.float32
n = 4096 if device() == "cuda" else 256
w = torch.randn(n, n, device=device(), dtype=dtype)
x = torch.randn(n, n, device=device(), dtype=dtype)
total = torch.zeros((), device=device())
logged = []


def step() -> None:
    global total
    y = x
    for _ in range(8):
        y = (y @ w).relu_()
    loss = y.float().mean()
    if args.fixed:
        total = total + loss
    else:
        logged.append(loss.item())
    prepare_next_batch()


loop(args.steps, step)
print("mean loss", float(total) / args.steps if args.fixed else sum(logged) / len(logged))
