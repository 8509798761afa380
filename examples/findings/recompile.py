"""torch-compile: a compiled function (dynamic=False) sees a new input length every step, so Dynamo
recompiles inside the loop. --fixed: the length is the same every step."""

import torch
from _common import device, loop, parse

args = parse(__doc__)


@torch.compile(dynamic=False)
def gelu_mlp(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x @ w) * 0.5 + x


w = torch.randn(4096, 4096, device=device())
lengths = iter([4096] * 100 if args.fixed else [4096 + 256 * i for i in range(100)])


def step() -> None:
    gelu_mlp(torch.randn(next(lengths), 4096, device=device()), w)


loop(args.steps, step)
