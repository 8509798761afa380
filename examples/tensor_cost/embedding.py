"""An embedding lookup whose indices are random (`--order random`) or sorted (`--order sorted`).

    tenprof run --passes timeline,tensors,stalls,accesses examples/tensor_cost/embedding.py --order random
    tenprof run --passes timeline,tensors,stalls,accesses examples/tensor_cost/embedding.py --order sorted

The table has 256K rows of 16 floats (16 MiB) and is read 4M times, each row about 16 times. With
random indices the threads of a warp read rows scattered over the table; with the same indices sorted,
neighbouring threads read the same or neighbouring rows, so one request serves many of them and repeats
hit in cache. The memory stalls charged to the table should drop with sorted indices.
"""

import argparse

import torch
import torch.nn.functional as F

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--order", choices=("random", "sorted"), default="random")
    parser.add_argument("--rows", type=int, default=1 << 18)
    parser.add_argument("--lookups", type=int, default=1 << 22)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    generator = torch.Generator(device=device).manual_seed(0)
    table = torch.randn(args.rows, 16, device=device)
    idx = torch.randint(0, args.rows, (args.lookups,), device=device, generator=generator)
    if args.order == "sorted":
        idx = idx.sort().values
    for _ in range(args.steps):
        out = F.embedding(idx, table)
        tenprof.step()
    print(f"order={args.order} checksum={float(out.sum()):.3e}")


if __name__ == "__main__":
    main()
