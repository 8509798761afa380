"""sync-in-loop through boolean-mask indexing: `scores[scores > 0]` has a data-dependent size, so the
host waits for the GPU to count the kept elements; the host then prepares the next batch (1 ms of CPU
work) while the GPU idles. --fixed: the same sum with torch.where, which keeps the shape fixed and
never waits."""

import torch
from _common import device, loop, parse, prepare_next_batch

args = parse(__doc__)
dtype = torch.bfloat16 if device() == "cuda" else torch.float32
n = 4096 if device() == "cuda" else 256
w = torch.randn(n, n, device=device(), dtype=dtype)
x = torch.randn(n, n, device=device(), dtype=dtype)
total = torch.zeros((), device=device())


def sum_of_positive(scores: torch.Tensor) -> torch.Tensor:
    if args.fixed:
        return torch.where(scores > 0, scores, 0).sum()
    return scores[scores > 0].sum()


def step() -> None:
    global total
    y = x
    for _ in range(8):
        y = y @ w
    total = total + sum_of_positive(y[0].float())
    prepare_next_batch()


loop(args.steps, step)
print("total", float(total))
