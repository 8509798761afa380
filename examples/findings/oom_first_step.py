"""out-of-memory in the first step: a batch larger than the card (on a CPU, larger than any machine: the
CPU allocator's own error).
--fixed: a batch that fits."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
model = torch.nn.Linear(4096, 4096, device=device())
free = torch.cuda.mem_get_info()[0] if device() == "cuda" else 1 << 50
rows = 1024 if args.fixed else int(1.2 * free) // (4096 * 4)  # float32 rows: 1.2x the card's free memory


def step() -> None:
    batch = torch.randn(rows, 4096, device=device())
    model(batch).sum().backward()


loop(args.steps, step)
