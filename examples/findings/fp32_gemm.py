"""fp32-gemm: float32 matmuls, which cuBLAS runs without tensor cores unless TF32 is allowed.
--fixed: TF32 allowed (torch.backends.cuda.matmul.allow_tf32 = True)."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
torch.backends.cuda.matmul.allow_tf32 = args.fixed
n = 4096 if device() == "cuda" else 256
x = torch.randn(n, n, device=device())
w = torch.randn(n, n, device=device())


def step() -> None:
    (x @ w @ w).relu_()


loop(args.steps, step)
