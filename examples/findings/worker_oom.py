"""out-of-memory in a DataLoader worker: at the fifth batch a worker's __getitem__ asks the CPU allocator
for more memory than any machine has (its real error), while the main process trains on the GPU.
--fixed: every batch of the usual size."""

import torch
from _common import device, loop, parse

args = parse(__doc__)


class Samples(torch.utils.data.Dataset):  # type: ignore[misc]
    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, i: int) -> torch.Tensor:
        if i == 4 * 32 and not args.fixed:
            return torch.empty(1 << 50, dtype=torch.uint8)  # 1 PiB
        return torch.randn(256)


batches = iter(torch.utils.data.DataLoader(Samples(), batch_size=32, num_workers=2))
model = torch.nn.Linear(256, 256, device=device())


def step() -> None:
    model(next(batches).to(device())).sum().backward()


loop(args.steps, step)
