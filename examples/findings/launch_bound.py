"""launch-bound: a 16-layer MLP on a 64-row batch launches hundreds of tiny kernels per step.
--fixed: the same depth on a batch large enough that each kernel outlasts its launch."""

import torch
from _common import device, loop, parse
from torch import nn

args = parse(__doc__)
rows, width = (16384, 1024) if args.fixed else (64, 256)
layers = []
for _ in range(16):
    layers += [nn.Linear(width, width), nn.ReLU()]
model = nn.Sequential(*layers).to(device())
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(rows, width, device=device())


def step() -> None:
    model(x).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


loop(args.steps, step)
