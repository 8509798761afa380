"""graph-break: a compiled layer prints a statistic in the middle, which Dynamo cannot trace, so the
function runs as two graphs with Python in between. --fixed: the statistic is computed outside."""

import torch
from _common import device, loop, parse

args = parse(__doc__)


@torch.compile
def layer(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = torch.nn.functional.gelu(x @ w)
    if not args.fixed:
        torch._dynamo.graph_break()  # stands for print(...), .item(), an unsupported call
    return h @ w.t() + x


w = torch.randn(2048, 2048, device=device())
x = torch.randn(2048, 2048, device=device())
layer(x, w)  # compile before the loop


def step() -> None:
    for _ in range(4):
        layer(x, w)


loop(args.steps, step)
