"""graph-break: a compiled block checks its activations between layers (a print, an .item(), a call Dynamo
cannot trace), so each call runs as four graphs with Python in between. Its GPU work (bf16, 8192 rows, about
1.3 ms a step on an H100) is less than the host's work with the breaks and about the host's work without
them: each extra graph's dispatch is step time, and the regions are not too small for their GPU work.
--fixed: the checks are left out of the compiled function."""

import torch
from _common import device, loop, parse

args = parse(__doc__)
gelu = torch.nn.functional.gelu


@torch.compile
def block(x: torch.Tensor, w: list[torch.Tensor]) -> torch.Tensor:
    h = gelu(x @ w[0])
    if not args.fixed:
        torch._dynamo.graph_break()  # stands for print(h.std()), .item(), an unsupported call
    h = gelu(h @ w[1])
    if not args.fixed:
        torch._dynamo.graph_break()
    h = gelu(h @ w[2])
    if not args.fixed:
        torch._dynamo.graph_break()
    return h @ w[3] + x


dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
w = [torch.randn(1024, 1024, device=device(), dtype=dtype) / 32 for _ in range(4)]
x = torch.randn(8192 if torch.cuda.is_available() else 256, 1024, device=device(), dtype=dtype)
block(x, w)  # compile before the loop


def step() -> None:
    for _ in range(8):
        block(x, w)


loop(args.steps, step)
