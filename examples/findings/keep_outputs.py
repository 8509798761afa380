"""memory-growth: each step's output (4 MiB) is appended to a list for later, so none is ever freed.
--fixed: only the output's mean is kept (a float), so the step's memory is given back.
--until-oom: keep a 128 MiB output a step until the card is full (out-of-memory); on a CPU, after --steps
steps, an allocation larger than the machine fails (the CPU allocator's own out-of-memory error) instead
of filling the machine's memory."""

import argparse

import torch
from _common import device, loop

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--fixed", action="store_true", help="run the variant without the problem")
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--until-oom", action="store_true")
args = parser.parse_args()

# x 1024 float32 columns: 128 MiB to fill a card, else 4 MiB (also for the CPU's stand-in error)
rows = 32768 if args.until_oom and device() == "cuda" else 1024
w = torch.randn(256, 1024, device=device())
x = torch.randn(rows, 256, device=device())
kept: list[object] = []
taken = 0


def step() -> None:
    global taken
    y = (x @ w).relu()  # the step's output
    kept.append(y.mean().item() if args.fixed else y)
    taken += 1
    if args.until_oom and device() == "cpu" and taken == args.steps:
        torch.empty(1 << 50, dtype=torch.uint8)  # 1 PiB


loop(10**9 if args.until_oom and device() == "cuda" else args.steps, step)
print("kept", len(kept))
