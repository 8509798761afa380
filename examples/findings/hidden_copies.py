"""hidden-copies: each step makes the transposed weight contiguous and casts the input to bf16, two
full-tensor copies the user never wrote as copies. --fixed: both are done once, before the loop."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
w = torch.randn(8192, 8192, device=device())
x = torch.randn(1024, 8192, device=device())
w_t = w.t().contiguous().to(torch.bfloat16) if args.fixed else None
x_bf16 = x.to(torch.bfloat16) if args.fixed else None


def step() -> None:
    if args.fixed:
        x_bf16 @ w_t
    else:
        x.to(torch.bfloat16) @ w.t().contiguous().to(torch.bfloat16)


loop(args.steps, step)
