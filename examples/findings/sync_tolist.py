"""sync-in-loop through a copy to the host: each step reads its metrics with `.tolist()` for logging,
which waits for the GPU; the host then prepares the next batch (1 ms of CPU work) while the GPU idles.
--fixed: the metrics stay on the GPU and are read once, after the loop, so the batch is prepared
while the GPU still works."""

import torch
from _common import device, loop, parse, prepare_next_batch

args = parse(__doc__)
dtype = torch.bfloat16 if device() == "cuda" else torch.float32
n = 4096 if device() == "cuda" else 256
w = torch.randn(n, n, device=device(), dtype=dtype)
x = torch.randn(n, n, device=device(), dtype=dtype)
logged: list[list[float]] = []
on_gpu: list[torch.Tensor] = []


def step() -> None:
    y = x
    for _ in range(8):
        y = (y @ w).relu_()
    metrics = torch.stack([y.float().mean(), y.float().amax()])
    if args.fixed:
        on_gpu.append(metrics)
    else:
        logged.append(metrics.tolist())
    prepare_next_batch()


loop(args.steps, step)
print("metrics", torch.stack(on_gpu).tolist()[-1] if args.fixed else logged[-1])
