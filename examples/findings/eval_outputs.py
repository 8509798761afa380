"""memory-growth: an evaluation loop keeps each batch's predictions in a list for the metrics, outside
torch.no_grad(): each small output (256 x 10 logits, 10 KiB) still requires grad, so it keeps its step's
autograd graph and the activations it saved alive, about 4 MiB a step here.
--fixed: the same loop under torch.no_grad(): the same outputs are kept, and only they (10 KiB a step)."""

import contextlib

import torch
from _common import device, loop, parse

args = parse(__doc__)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 10)).to(device())
model.eval()
batch = torch.randn(256, 512, device=device())
predictions: list[torch.Tensor] = []


def step() -> None:
    with torch.no_grad() if args.fixed else contextlib.nullcontext():
        predictions.append(model(batch))  # kept for the metrics after the loop


loop(args.steps, step)
print("accuracy stand-in", torch.cat(predictions).argmax(dim=1).float().mean().item())
