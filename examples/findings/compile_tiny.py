"""torch-compile (tiny graphs): a compiled function on a 1024-element tensor costs more CPU time
(guards, cache lookup, launch) than the GPU work it runs. --fixed: the same function on a
128M-element tensor, where the GPU work outweighs the per-call CPU cost."""

import torch
from _common import device, loop, parse

args = parse(__doc__)


@torch.compile
def scale_shift(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x) * 2.0 + 1.0


x = torch.randn(1 << 27 if args.fixed else 1024, device=device())
scale_shift(x)  # compile before the loop: this example is about the steady state


def step() -> None:
    for _ in range(8):
        scale_shift(x)


loop(args.steps, step)
