"""sync-in-loop: the loss is read with .item() every step for logging, which waits for the GPU.
--fixed: losses are accumulated on the GPU and read once, after the loop."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
dtype = torch.bfloat16 if device() == "cuda" else torch.float32
w = torch.randn(2048, 2048, device=device(), dtype=dtype)
x = torch.randn(2048, 2048, device=device(), dtype=dtype)
total = torch.zeros((), device=device())
logged = []


def step() -> None:
    global total
    loss = (x @ w).relu().mean()
    if args.fixed:
        total = total + loss.float()
    else:
        logged.append(loss.item())


loop(args.steps, step)
print("mean loss", float(total) / args.steps if args.fixed else sum(logged) / len(logged))
