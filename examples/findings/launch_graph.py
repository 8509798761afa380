"""launch-bound, fixed without changing the work: a 16-layer MLP on a 64-row batch launches hundreds
of tiny kernels per step, each shorter than its launch. --fixed: the same step (forward, backward,
SGD update) captured once as a CUDA graph and replayed, so a step costs the host one launch."""

import torch
from _common import device, loop, parse
from torch import nn

args = parse(__doc__)
cuda = device() == "cuda"
layers: list[nn.Module] = []
for _ in range(16):
    layers += [nn.Linear(256, 256), nn.ReLU()]
model = nn.Sequential(*layers).to(device())
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(64, 256, device=device())


def train_step() -> None:
    model(x).square().mean().backward()
    optimizer.step()


def eager_step() -> None:
    train_step()
    optimizer.zero_grad(set_to_none=True)


step = eager_step
if args.fixed and cuda:
    # Warm up on a side stream (the autograd engine and the optimizer allocate their state), then
    # capture; gradients keep their memory between replays, as graph replay needs.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            train_step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        train_step()
    step = graph.replay

loop(args.steps, step)
