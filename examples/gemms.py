"""Three GEMMs of known shapes, for checking FLOP formulas against Nsight Compute's counts.

    tenprof run examples/gemms.py

bf16 (M, N, K) = (2048, 1536, 1024) on tensor cores, fp32 (1024, 2048, 512) with TF32 allowed, and
fp32 (512, 1024, 768) with TF32 off (the FMA pipes). Each runs once per step, for --steps steps.
"""

import argparse

import torch

import tenprof

SHAPES = {"bf16": (2048, 1536, 1024), "tf32": (1024, 2048, 512), "fp32": (512, 1024, 768)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    inputs = {}
    for kind, (m, n, k) in SHAPES.items():
        dtype = torch.bfloat16 if kind == "bf16" else torch.float32
        inputs[kind] = (torch.randn(m, k, device=device, dtype=dtype), torch.randn(k, n, device=device, dtype=dtype))
    for _ in range(args.steps):
        for kind, (a, b) in inputs.items():
            torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
            with tenprof.scope(kind):
                torch.mm(a, b)
        tenprof.step()
    if device == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
