"""A small transformer trained with DistributedDataParallel, for profiling under a launcher.

    torchrun --nproc-per-node 2 -m tenprof run -o ddp-out examples/ddp_train.py
    tenprof run -l "torchrun --nproc-per-node 2" -o ddp-out examples/ddp_train.py --slow-rank 1
    tenprof report ddp-out/            # merged;  --rank 1 for one rank

NCCL on GPUs (one per rank, by LOCAL_RANK), gloo on the CPU. `--slow-rank R` makes rank R do extra
matrix multiplies each step (the line marked below), so the other ranks wait for it in the gradient
all-reduce. `--slow-loader-rank R` makes rank R's load_batch() sleep `--loader-sleep-ms` each step (a
slow input pipeline, host time outside torch ops). Prints `loop_s=` for the timed steps on rank 0.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-loader-rank", type=int, default=-1)
    parser.add_argument("--loader-sleep-ms", type=float, default=30.0)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64, help="sequences of 256 tokens per rank and step")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(args.width, nhead=8, dim_feedforward=4 * args.width, batch_first=True)
    model = DistributedDataParallel(nn.TransformerEncoder(layer, num_layers=4).to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, 256, args.width, device=device)
    slow_loader = args.loader_sleep_ms / 1e3 if rank == args.slow_loader_rank else 0.0
    extra = torch.randn(2048, 2048, device=device)
    start = time.perf_counter()
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
        x = load_batch(x, slow_loader)
        loss = model(x).square().mean()
        if rank == args.slow_rank:
            for _ in range(40):
                extra = torch.tanh(extra @ extra)  # the planted slow-down: only on --slow-rank
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tenprof.step()
    if cuda:
        torch.cuda.synchronize()
    if rank == 0:
        print(f"loop_s={time.perf_counter() - start:.6f} steps={args.steps} loss={float(loss):.4f}")
    dist.destroy_process_group()


def load_batch(x: torch.Tensor, sleep_s: float) -> torch.Tensor:
    """The next batch: here the same one, after `sleep_s` of a slow input pipeline (decoding, I/O)."""
    if sleep_s:
        time.sleep(sleep_s)  # the planted slow input pipeline: only on --slow-loader-rank
    return x


if __name__ == "__main__":
    main()
