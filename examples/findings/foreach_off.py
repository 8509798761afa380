"""an optimizer stepped one parameter at a time: Adam with foreach=False over a model of many small
parameters (240 per-token embeddings and a few large layers) launches about a dozen tiny kernels per
parameter, and the GPU waits for them. --fixed: foreach=True, a few multi-tensor kernels for all of them."""

import torch
from _common import device, loop, parse
from torch import nn

args = parse(__doc__)
dev = device()
width = 2048 if dev == "cuda" else 64
pieces = nn.ParameterList(nn.Parameter(torch.randn(width) / 32) for _ in range(240)).to(dev)
layers = nn.Sequential(*(nn.Linear(width, width) for _ in range(4))).to(dev)
optimizer = torch.optim.Adam([*pieces, *layers.parameters()], lr=1e-4, foreach=args.fixed)
x = torch.randn(4096 if dev == "cuda" else 16, width, device=dev)


def step() -> None:
    table = torch.stack(list(pieces))  # one kernel forward, views backward
    loss = layers(x + table.mean(0)).square().mean()
    loss.backward()
    optimizer.step()  # --fixed or not, the same update; foreach=False runs it parameter by parameter
    optimizer.zero_grad(set_to_none=True)


loop(args.steps, step)
