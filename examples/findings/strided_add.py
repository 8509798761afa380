"""strided-elementwise: `a.t() + b` reads one operand across rows (its memory order is not the order the
add iterates in). --fixed: both operands in the same order (`a + b`, a being stored transposed)."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
n = 8192 if device() == "cuda" else 512
a = torch.randn(n, n, device=device())
b = torch.randn(n, n, device=device())
if args.fixed:
    a = a.t().contiguous()  # the same values as a.t(), stored in b's order


def step() -> None:
    (a + b if args.fixed else a.t() + b).relu_()


loop(args.steps, step)
