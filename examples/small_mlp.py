"""A 16-layer MLP on a 64x256 batch, forward, backward and SGD: many tiny kernels, CPU-bound.

    tenprof run examples/small_mlp.py --steps 20 --warmup 5

Prints `loop_s=` for the timed steps.
"""

import argparse
import time

import torch
from torch import nn

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    layers = []
    for _ in range(16):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    model = nn.Sequential(*layers).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device=device)
    start = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tenprof.step()
    if cuda:
        torch.cuda.synchronize()
    print(f"loop_s={time.perf_counter() - start:.6f} steps={args.steps}")


if __name__ == "__main__":
    main()
