"""channels-last: a bf16 conv block in NCHW, around whose convolutions cuDNN converts layouts.
--fixed: the block and its input in channels_last."""

import torch
from _common import device, loop, parse
from torch import nn

args = parse(__doc__)
cuda = device() == "cuda"
n, c, hw = (256, 64, 56) if cuda else (2, 8, 16)  # large enough that the GPU bounds the step
block = nn.Sequential(
    nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1, bias=False)
).to(device())
x = torch.randn(n, c, hw, hw, device=device())
if args.fixed:
    block = block.to(memory_format=torch.channels_last)
    x = x.to(memory_format=torch.channels_last)


def step() -> None:
    with torch.autocast(device(), dtype=torch.bfloat16, enabled=cuda):
        y = block(x)
    y.float().sum().backward()


loop(args.steps, step)
