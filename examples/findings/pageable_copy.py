"""pageable-transfer: each step copies a 64 MiB batch from ordinary (pageable) host memory.
--fixed: the batch lives in pinned memory and is copied with non_blocking=True."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
batch = torch.randn(4096, 4096)  # 64 MiB of float32
if args.fixed and device() == "cuda":
    batch = batch.pin_memory()
w = torch.randn(4096, 4096, device=device())


def step() -> None:
    x = batch.to(device(), non_blocking=args.fixed)
    (x @ w).relu_()


loop(args.steps, step)
