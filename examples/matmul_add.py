"""A matrix multiply plus a bias add: the smallest workload with a GEMM and an elementwise kernel.

    tenprof run examples/matmul_add.py --size 4096 --steps 10 --warmup 2

Runs on the GPU in bf16 when CUDA is there (`--dtype float32` to change), else on the CPU in float32.
Prints `loop_s=` (the timed steps, after warm-up), which the overhead benchmark reads.
"""

import argparse
import time

import torch

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=0, help="untimed steps first")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16", help="on the GPU")
    args = parser.parse_args()
    cuda, device, dtype = _device(args.dtype)  # (kept to one line: recorded profiles name these lines)
    a = torch.randn(args.size, args.size, device=device, dtype=dtype)
    b = torch.randn(args.size, args.size, device=device, dtype=dtype)
    bias = torch.randn(args.size, device=device, dtype=dtype)
    start = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
        with tenprof.scope("matmul_add"):
            c = a @ b
            c = c + bias
        tenprof.step()
    if cuda:
        torch.cuda.synchronize()
    print(f"loop_s={time.perf_counter() - start:.6f} steps={args.steps} checksum={float(c.float().sum()):.3e}")


def _device(gpu_dtype: str) -> tuple[bool, str, torch.dtype]:
    if torch.cuda.is_available():
        return True, "cuda", getattr(torch, gpu_dtype)
    return False, "cpu", torch.float32


if __name__ == "__main__":
    main()
