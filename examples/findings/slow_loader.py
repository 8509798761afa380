"""idle-gaps from a slow input pipeline: each step takes its batch from a DataLoader that cannot keep up,
and the GPU waits for it. Two kinds:
  --workers 0 (default): the loader runs in the script's process, and its collate function does 8 ms of
      Python work per batch (tokenizing, say);
  --workers N: N worker processes whose __getitem__ sleeps 4 ms per item (reading a file, say), 32 ms of
      a worker's time per batch of 8, so with 2 workers each step waits for its batch (16 ms apart).
--fixed: no delay, and 2 workers (the loading then runs ahead of the steps). Batches (512x512 floats)
are pinned and copied without blocking; the GPU work per step is a 512x512x4096 and eight 512x4096x4096
fp32 matmuls (about 3 ms on an H100)."""

import argparse
import time

import torch
from _common import device, loop

COLLATE_S = 0.008
ITEM_S = 0.004
BATCH = 8


class Items(torch.utils.data.Dataset[torch.Tensor]):
    def __init__(self, count: int, delay_s: float) -> None:
        self.count, self.delay_s = count, delay_s

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> torch.Tensor:
        if self.delay_s:
            time.sleep(self.delay_s)  # the planted slow read: in the worker processes
        return torch.full((64, 512), float(i % 7))


def slow_collate(items: list[torch.Tensor]) -> torch.Tensor:
    deadline = time.perf_counter() + COLLATE_S
    while time.perf_counter() < deadline:  # the planted slow collate: Python work in the script's process
        pass
    return torch.cat(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixed", action="store_true")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    dev = device()
    workers = 2 if args.fixed else args.workers
    items = Items(BATCH * (args.steps + 2), ITEM_S if workers > 0 and not args.fixed else 0.0)
    loader = torch.utils.data.DataLoader(
        items,
        batch_size=BATCH,
        num_workers=workers,
        collate_fn=slow_collate if workers == 0 else torch.cat,
        pin_memory=dev == "cuda",
        prefetch_factor=1 if workers else None,  # one batch ahead per worker: the wait starts at step 2
    )
    batches = iter(loader)
    w_in = torch.randn(512, 4096, device=dev) / 23
    w = torch.randn(4096, 4096, device=dev) / 64

    def step() -> None:
        x = next(batches).to(dev, non_blocking=True) @ w_in
        for _ in range(8):
            x = torch.tanh(x @ w)

    loop(args.steps, step)


if __name__ == "__main__":
    main()
