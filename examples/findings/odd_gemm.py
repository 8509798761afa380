"""far-below-speed-of-light: bf16 matmuls whose inner dimension (4095) is not a multiple of 8, so rows are
not 16-byte aligned and cuBLAS cannot use its fastest kernels.
--fixed: the same work padded to 4096."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
n = 4096 if device() == "cuda" else 256
k = n if args.fixed else n - 1
dtype = torch.bfloat16 if device() == "cuda" else torch.float32
x = torch.randn(n, k, device=device(), dtype=dtype)
w = torch.randn(k, n, device=device(), dtype=dtype)


def step() -> None:
    for _ in range(4):
        x @ w


loop(args.steps, step)
