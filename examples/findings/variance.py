"""variance: one kernel, one launch shape, timing that changes from launch to launch. Here index_add_
alternates between spread-out indices and indices that all collide (atomic contention); on real
workloads clocks, heat, other processes or the data do it. --fixed: every launch gets the same indices."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
n = 1 << 22
src = torch.randn(n, device=device())
out = torch.zeros(n, device=device())
spread = torch.arange(n, device=device())
collide = torch.zeros(n, dtype=torch.long, device=device())
counter = [0]


def step() -> None:
    for _ in range(4):
        counter[0] += 1
        index = spread if args.fixed or counter[0] % 2 else collide
        out.index_add_(0, index, src)


loop(args.steps, step)
