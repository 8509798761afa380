"""Out-of-memory on one rank of a DistributedDataParallel job, for the post-mortem of a job of several ranks.

    torchrun --nproc-per-node 2 -m tenprof run -o oom-out examples/ddp_oom_rank.py --oom-rank 1
    tenprof report oom-out/            # rank 1's post-mortem first; the other ranks' profiles kept

Each step, rank `--oom-rank` keeps a 64 MiB block (the line marked below) and, at step `--oom-step`, asks
for more memory than its device has: the error kills that rank, and the launcher then stops the others,
which are waiting for it in the gradient all-reduce. NCCL on GPUs (one per rank), gloo on the CPU.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import tenprof


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--oom-rank", type=int, default=1)
    parser.add_argument("--oom-step", type=int, default=4)
    parser.add_argument("--width", type=int, default=512)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    model = DistributedDataParallel(nn.Sequential(nn.Linear(args.width, args.width), nn.ReLU()).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, args.width, device=device)
    kept: list[torch.Tensor] = []
    for step in range(args.steps):
        loss = model(x).square().mean()
        if rank == args.oom_rank:
            kept.append(torch.empty(64 << 20, dtype=torch.uint8, device=device))  # the planted leak
            if step == args.oom_step:
                total = torch.cuda.get_device_properties(device).total_memory if cuda else 1 << 50
                torch.empty(total + (1 << 30), dtype=torch.uint8, device=device)  # more than the device has
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tenprof.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
