"""sync-in-loop through an explicit synchronize: each step is timed with torch.cuda.synchronize()
and time.perf_counter(), so the host waits for the GPU at every step's end; the host then prepares the
next batch (1 ms of CPU work) while the GPU idles. --fixed: CUDA events time the steps, read once
after the loop."""

import time

import torch
from _common import device, loop, parse, prepare_next_batch

args = parse(__doc__)
cuda = device() == "cuda"
dtype = torch.bfloat16 if cuda else torch.float32
n = 4096 if cuda else 256
w = torch.randn(n, n, device=device(), dtype=dtype)
x = torch.randn(n, n, device=device(), dtype=dtype)
times: list[float] = []
# made before the loop: creating events costs host time the step would then pay
events = (
    [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(args.steps)]
    if cuda and args.fixed
    else []
)


def step() -> None:
    began = time.perf_counter()
    timing = events[len(times)] if events else None
    if timing is not None:
        timing[0].record()
    y = x
    for _ in range(8):
        y = (y @ w).relu_()
    if timing is not None:
        timing[1].record()
        times.append(0.0)  # read after the loop
    elif cuda:
        torch.cuda.synchronize()
        times.append(time.perf_counter() - began)
    prepare_next_batch()


loop(args.steps, step)
if events:
    times = [s.elapsed_time(e) / 1e3 for s, e in events[: len(times)]]
print("median step s", sorted(times)[len(times) // 2] if times else None)
