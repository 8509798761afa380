"""A conv + batchnorm + relu block, forward and backward, 32x64x112x112 on the GPU.

    tenprof run examples/conv_block.py --steps 5 --warmup 2

On a machine without CUDA it uses 2x8x32x32 so it finishes quickly. Prints `loop_s=`.
"""

import argparse
import time

import torch
from torch import nn

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    n, c, hw = (32, 64, 112) if cuda else (2, 8, 32)
    block = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()).to(device)
    x = torch.randn(n, c, hw, hw, device=device, requires_grad=True)
    start = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
        with tenprof.scope("forward"):
            y = block(x)
        with tenprof.scope("backward"):
            y.sum().backward()
        tenprof.step()
    if cuda:
        torch.cuda.synchronize()
    print(f"loop_s={time.perf_counter() - start:.6f} steps={args.steps}")


if __name__ == "__main__":
    main()
