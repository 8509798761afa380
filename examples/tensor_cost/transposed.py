"""One op reads tensor `a` through a transposed view and tensor `b` contiguously: `b + a.t()`.

    tenprof run --passes timeline,tensors,stalls,accesses examples/tensor_cost/transposed.py

The add kernel walks the output (laid out like `b`, the first operand) in order, so its loads of `b`
are coalesced and its loads of `a.t()` jump a whole row of `a` between neighbouring threads: the memory
stalls of the kernel should be charged mostly to the view `a.t()` (of base tensor `a`).
"""

import argparse

import torch

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(args.size, args.size, device=device)
    b = torch.randn(args.size, args.size, device=device)
    for _ in range(args.steps):
        out = b + a.t()
        tenprof.step()
    print(f"checksum={float(out.sum()):.3e}")


if __name__ == "__main__":
    main()
