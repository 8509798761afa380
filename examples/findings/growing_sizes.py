"""memory-fragmentation: each step's buffer is a little larger than the last (a sequence length that grows),
so the caching allocator cannot reuse the block it cached and takes a new segment every step: it reserves
several times what it ever hands out. On a CPU (no caching allocator) it shows nothing.
--fixed: expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, set before the first CUDA
allocation), so the one segment grows in place."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
if args.fixed and device() == "cuda":
    torch.cuda.memory._set_allocator_settings("expandable_segments:True")
MIB = 1 << 20
taken = 0


def step() -> None:
    global taken
    size = (512 + 64 * taken) * MIB // 4  # float32 elements: 512 MiB, then 64 MiB more each step
    buffer = torch.empty(size, device=device())
    buffer.fill_(1.0)
    taken += 1


loop(args.steps, step)
if device() == "cuda":
    reserved, allocated = torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated()
    print(f"reserved {reserved / MIB:.0f} MiB, allocated {allocated / MIB:.0f} MiB")
