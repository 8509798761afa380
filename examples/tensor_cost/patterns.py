"""Planted access patterns with known answers, one op per line, every step:

    tenprof run --passes timeline,tensors,stalls,accesses examples/tensor_cost/patterns.py

- `a.t() + b` (4096 x 4096 float32): the add walks `a.t()`'s order, so `b` is read with a whole row of
  `b` (16 KiB = 4096 elements, its dim 0) between neighbouring threads: 32 sectors per request where 4
  would do; `a.t()` is read coalesced;
- `a.t().contiguous() + b`: the control, both read coalesced;
- an embedding lookup (one float per row, 4M rows, 4M lookups) with random indices (each lane its own
  sector: a gather) and with the same indices sorted (neighbouring lanes read neighbouring rows);
- a bias add, `x + bias` (8192 x 1024 plus 1024): the bias read coalesced but 8192 times over per launch;
  and `x + column[:, None]` (8192 x 1 broadcast along rows): every lane of a warp reads one element;
- a reduction along a strided dimension: `x[:, ::4].sum(dim=1)` (4096 x 4096 viewed as 4096 x 1024 with
  stride 4): 16 bytes between neighbouring threads, 4x the ideal sectors.
"""

import argparse

import torch
import torch.nn.functional as F

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    generator = torch.Generator(device=device).manual_seed(0)
    n = 4096
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    rows = 1 << 22
    table = torch.randn(rows, 1, device=device)
    random_idx = torch.randint(0, rows, (rows,), device=device, generator=generator)
    sorted_idx = random_idx.sort().values
    x = torch.randn(8192, 1024, device=device)
    bias = torch.randn(1024, device=device)
    column = torch.randn(8192, device=device)
    wide = torch.randn(n, n, device=device)
    for _ in range(args.steps):
        strided = a.t() + b  # b read across rows
        control = a.t().contiguous() + b  # both coalesced
        looked_up = F.embedding(random_idx, table)  # random gather
        looked_up_sorted = F.embedding(sorted_idx, table)  # sorted: neighbouring rows
        biased = x + bias  # bias re-read per row
        by_row = x + column[:, None]  # one element per warp
        reduced = wide[:, ::4].sum(dim=1)  # strided reduction
        tenprof.step()
    checks = (strided, control, looked_up, looked_up_sorted, biased, by_row, reduced)
    print("checksum=" + " ".join(f"{float(t.sum()):.3e}" for t in checks))


if __name__ == "__main__":
    main()
