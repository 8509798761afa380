"""idle-gaps: each step the host does 5 ms of CPU work (standing in for data preparation) between
GPU work, and the GPU waits. --fixed: the CPU work is gone from the step (done ahead, in a loader)."""

import time

import torch
from _common import device, loop, parse

args = parse(__doc__)
dtype = torch.bfloat16 if device() == "cuda" else torch.float32
a = torch.randn(4096, 4096, device=device(), dtype=dtype)


def prepare_batch() -> None:
    time.sleep(0.005)


def step() -> None:
    b = a @ a
    if not args.fixed:
        prepare_batch()  # the GPU finishes `a @ a` in well under 5 ms, then waits
    (b @ a).relu_()


loop(args.steps, step)
