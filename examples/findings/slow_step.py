"""slow-step: one step in the middle of the run pays a one-off cost: step 5 computes a spectrum metric
with torch.fft, whose first call loads cuFFT and plans the transform. Every other step is the same
GPU-bound work. --fixed: the metric is computed once before the loop (a warm-up).
Run with --steps 12 (tenprof runs steps 3-4 and 8-9 with the capture off; step 5 is recorded)."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
dtype = torch.bfloat16 if device() == "cuda" else torch.float32
n = 4096 if device() == "cuda" else 256
w = torch.randn(n, n, device=device(), dtype=dtype)
x = torch.randn(n, n, device=device(), dtype=dtype)
signal = torch.randn(1 << 16, device=device())
counter = [0]


def spectrum_metric(y: torch.Tensor) -> torch.Tensor:
    return torch.fft.rfft(signal).abs().mean() + y.float().mean()


if args.fixed:
    spectrum_metric(x)  # the first call's loading and planning, paid before the loop


def step() -> None:
    y = x
    for _ in range(8):
        y = (y @ w).relu_()
    if counter[0] == 5:
        spectrum_metric(y)
    counter[0] += 1


loop(args.steps, step)
