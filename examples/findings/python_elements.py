"""a Python loop over a tensor's rows: each row's score is computed on its own (index, dot, add), so a
step launches three tiny kernels per row and the GPU waits on the host. --fixed: one matrix-vector
product for all rows."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
dev = device()
rows = 256
x = torch.randn(rows, 1024, device=dev)
w = torch.randn(1024, device=dev)
bias = torch.randn(rows, device=dev)
scores = torch.empty(rows, device=dev)


def step() -> None:
    if args.fixed:
        torch.addmv(bias, x, w, out=scores)
    else:
        for i in range(rows):  # the planted mistake: one row at a time
            scores[i] = x[i].dot(w) + bias[i]


loop(args.steps, step)
