"""data loading: each sample goes through 1 ms of per-sample Python (augmenting, tokenizing) in the
X
  --workers 0 (default): the DataLoader runs in the script's process (num_workers=0), so every step waits
      16 ms for its batch;
  --workers 1: one worker process, too few to keep up (16 ms of its time per batch);
--fixed: 8 worker processes with pinned batches copied without blocking; the same transform."""

import argparse
import os

import torch
from _common import device, loop, spin

TRANSFORM_S = 0.001
BATCH = 16


class Augmented(torch.utils.data.Dataset[torch.Tensor]):
    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> torch.Tensor:
        sample = torch.full((32, 1024), float(i % 5))
        spin(TRANSFORM_S)  # the planted per-sample Python transform
        return sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixed", action="store_true")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    dev = device()
    workers = min(8, os.cpu_count() or 1) if args.fixed else args.workers
    loader = torch.utils.data.DataLoader(
        Augmented(BATCH * (args.steps + 2 * max(workers, 1) + 2)),
        batch_size=BATCH,
        num_workers=workers,
        pin_memory=args.fixed and dev == "cuda",
    )
    batches = iter(loader)
    w = torch.randn(1024, 1024, device=dev) / 32

    def step() -> None:
        x = next(batches).to(dev, non_blocking=args.fixed).view(-1, 1024)
        for _ in range(24):
            x = torch.tanh(x @ w)

    loop(args.steps, step)


if __name__ == "__main__":
    main()
