"""memory-growth: an evaluation loop sums the loss tensor (`total = total + loss`) outside torch.no_grad():
each step's loss still requires grad, so the sum keeps every step's autograd graph and the activations it
saved, about 5 MiB a step here.
--fixed: the loss is read with .item() (and the loop runs under torch.no_grad()), so nothing is kept."""

import contextlib

import torch
from _common import device, loop, parse

args = parse(__doc__)
torch.manual_seed(0)
model = torch.nn.Sequential(*(layer for _ in range(4) for layer in (torch.nn.Linear(512, 512), torch.nn.GELU())))
model.to(device())
batch = torch.randn(256, 512, device=device())
target = torch.randn(256, 512, device=device())
total: torch.Tensor | float = 0.0


def step() -> None:
    global total
    with torch.no_grad() if args.fixed else contextlib.nullcontext():
        loss = torch.nn.functional.mse_loss(model(batch), target)
    total = total + (loss.item() if args.fixed else loss)


loop(args.steps, step)
print("mean loss", float(total) / args.steps)
