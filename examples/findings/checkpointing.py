"""A control for the memory findings: a training loop whose memory is steady, with activation checkpointing
(--fixed) and without: the peak differs, nothing grows, so no memory finding may fire on either."""

import torch
from _common import device, loop, parse
from torch.utils.checkpoint import checkpoint

args = parse(__doc__)
torch.manual_seed(0)
width = 2048 if device() == "cuda" else 256
blocks = torch.nn.ModuleList(
    torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))
    for _ in range(8)
).to(device())
optimizer = torch.optim.AdamW(blocks.parameters(), lr=1e-4)
batch = torch.randn(64 if device() == "cpu" else 4096, width, device=device())


def step() -> None:
    x = batch
    for block in blocks:
        x = x + (checkpoint(block, x, use_reentrant=False) if args.fixed else block(x))
    x.square().mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


loop(args.steps, step)
